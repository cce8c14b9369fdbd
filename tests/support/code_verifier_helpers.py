"""Build the `code` verifier for tests, skipping where this machine cannot run untrusted code safely."""

from __future__ import annotations

import pytest

from trl_grpo_ext.verifiers import get_verifier


def make_code_verifier(timeout_s: float, **options):
    """The verifier at its default isolation (bubblewrap). Where bubblewrap is missing, the default refuses to start:
    the suite then asks for isolation="rlimits" by name, as a user would, and the checks that only bubblewrap passes
    skip themselves. Skips where even that cannot run safely (root without a world-readable interpreter)."""
    options = {"timeout_s": timeout_s, "workers": 2, **options}
    try:
        return get_verifier("code", **options)
    except RuntimeError as exc:
        if options.get("isolation", "auto") != "auto" or "needs bubblewrap" not in str(exc):
            pytest.skip(str(exc))
    try:
        return get_verifier("code", **{**options, "isolation": "rlimits"})
    except RuntimeError as exc:
        pytest.skip(str(exc))
