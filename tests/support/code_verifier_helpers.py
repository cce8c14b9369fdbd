"""Build the `code` verifier for tests, skipping where this machine cannot run untrusted code safely."""

from __future__ import annotations

import pytest

from trl_grpo_ext.verifiers import get_verifier


def make_code_verifier(timeout_s: float, **options):
    try:
        return get_verifier("code", **{"timeout_s": timeout_s, "workers": 2, **options})
    except RuntimeError as exc:  # root without bubblewrap and without a world-readable interpreter
        pytest.skip(str(exc))
