"""The `math` verifier on the hand-written probes of `benchmarks/math_probes.py` (issue 10): wrong answers a policy
could learn to give score 0, the true identities score 1. All probes run as one batch through one verifier."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from trl_grpo_ext.verifiers import get_verifier


def load_probes():
    path = Path(__file__).resolve().parents[3] / "benchmarks" / "math_probes.py"
    spec = importlib.util.spec_from_file_location("math_probes", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


PROBES_MODULE = load_probes()
PROBES = PROBES_MODULE.PROBES


@pytest.fixture(scope="module")
def verdicts():
    verifier = get_verifier("math", n_workers=2)
    try:
        results = verifier.verify_batch([rf"\boxed{{{p.pred}}}" for p in PROBES], [p.ref for p in PROBES])
    finally:
        verifier.close()
    return {(p.pred, p.ref): result for p, result in zip(PROBES, results)}


def test_at_least_200_probes_over_every_category_of_the_issue():
    assert len(PROBES) >= 200
    assert len({(p.pred, p.ref) for p in PROBES}) == len(PROBES)  # each pair once: verdicts are keyed by the pair
    counts = {category: sum(p.category == category for p in PROBES) for category in PROBES_MODULE.CATEGORIES}
    assert len(counts) == 10 and min(counts.values()) >= 15, counts
    assert sum(not p.equal for p in PROBES) >= 100  # most probes are wrong answers that must score 0


# A 0 for one of these is no verdict on the answer (docs/verifiers.md): a wrong-answer probe that scores 0 because
# it timed out or raised would hide a bug of the comparison.
NOT_A_VERDICT = ("timeout", "too_large", "comparison_error", "internal_error", "unusable_reference")


@pytest.mark.parametrize("probe", PROBES, ids=[f"{p.pred} vs {p.ref}" for p in PROBES])
def test_probe(probe, verdicts):
    result = verdicts[(probe.pred, probe.ref)]
    expected = 1.0 if probe.equal else 0.0
    assert result.score == expected, (probe.category, result.reason, result.details)
    if probe.equal:
        assert result.reason == "correct", (probe.category, result.reason)
    else:
        assert not result.reason.startswith(NOT_A_VERDICT), (probe.category, result.reason, result.details)
