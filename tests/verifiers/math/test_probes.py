"""The `math` verifier on its hand-written probes: the value probes of `benchmarks/math_probes.py`, the class probes
of `benchmarks/math_probes_classes.py` and the completion probes of `benchmarks/math_probes_completions.py`. Wrong
answers a policy could learn to give score 0, the true identities score 1. Each set runs as one batch through one
verifier.

The value probes judge values (`5!` is 120, `\\log_2 8` is 3): they run with `closed_form=False`, and under the
default closed-form rule each of their equal pairs must either pay or score `not_simplified`, never anything else."""

from __future__ import annotations

import pytest
from benchmark_modules import load_benchmark

from trl_grpo_ext.verifiers import get_verifier

PROBES_MODULE = load_benchmark("math_probes")
PROBES = PROBES_MODULE.PROBES
CLASSES_MODULE = load_benchmark("math_probes_classes")
CLASS_PROBES = CLASSES_MODULE.CLASS_PROBES
COMPLETIONS_MODULE = load_benchmark("math_probes_completions")
COMPLETION_PROBES = COMPLETIONS_MODULE.COMPLETION_PROBES


def _verdicts(probes, boxed: bool = False, **options) -> dict:
    """Every probe's result, keyed by (prediction, reference), from one batch through one verifier."""
    verifier = get_verifier("math", n_workers=2, **options)
    try:
        completions = [rf"\boxed{{{p.pred}}}" if boxed else p.pred for p in probes]
        results = verifier.verify_batch(completions, [p.ref for p in probes])
    finally:
        verifier.close()
    return {(p.pred, p.ref): result for p, result in zip(probes, results)}


@pytest.fixture(scope="module")
def verdicts():
    return _verdicts(PROBES, boxed=True, closed_form=False)


@pytest.fixture(scope="module")
def closed_form_verdicts():
    return _verdicts(PROBES, boxed=True)


@pytest.fixture(scope="module")
def class_verdicts():
    return _verdicts(CLASS_PROBES)


@pytest.fixture(scope="module")
def completion_verdicts():
    return _verdicts(COMPLETION_PROBES)


def test_class_probes_cover_every_class():
    assert len({(p.pred, p.ref) for p in CLASS_PROBES}) == len(CLASS_PROBES)
    counts = {c: sum(p.category == c for p in CLASS_PROBES) for c in CLASSES_MODULE.CLASS_CATEGORIES}
    assert len(counts) == 8 and min(counts.values()) >= 8, counts
    assert sum(not p.equal for p in CLASS_PROBES) >= 60


@pytest.mark.parametrize("probe", CLASS_PROBES, ids=[f"{p.pred} vs {p.ref}" for p in CLASS_PROBES])
def test_class_probe(probe, class_verdicts):
    """The class probes: whole completions (boxed, or prose for the hedges), one per class of false positive."""
    result = class_verdicts[(probe.pred, probe.ref)]
    assert result.score == (1.0 if probe.equal else 0.0), (probe.category, result.reason, result.details)


def test_at_least_200_value_probes_over_every_category():
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


def test_value_probes_under_the_closed_form_rule(closed_form_verdicts):
    """By default no wrong probe pays, and an equal one pays unless it leaves an operation to perform."""
    left_to_perform = []
    for probe in PROBES:
        result = closed_form_verdicts[(probe.pred, probe.ref)]
        if not probe.equal:
            assert result.score == 0.0, (probe, result.reason)
        elif result.score != 1.0:
            assert result.reason.startswith("not_simplified"), (probe, result.reason)
            left_to_perform.append(probe.pred)
    assert r"\log_2 8" in left_to_perform and "5!" in left_to_perform
    assert r"\sin^2 x + \cos^2 x" not in left_to_perform  # an identity in a variable is a closed form


def test_completion_probes_cover_every_class():
    assert len({(p.pred, p.ref) for p in COMPLETION_PROBES}) == len(COMPLETION_PROBES)
    counts = {c: sum(p.category == c for p in COMPLETION_PROBES) for c in COMPLETIONS_MODULE.COMPLETION_CATEGORIES}
    assert len(counts) == 10 and min(counts.values()) >= 3, counts
    assert sum(not p.equal for p in COMPLETION_PROBES) >= 50


@pytest.mark.parametrize("probe", COMPLETION_PROBES, ids=[f"{p.pred} vs {p.ref}" for p in COMPLETION_PROBES])
def test_completion_probe(probe, completion_verdicts):
    """The completion probes: whole completions as policies write them, one category per class."""
    result = completion_verdicts[(probe.pred, probe.ref)]
    assert result.score == (1.0 if probe.equal else 0.0), (probe.category, result.reason, result.details)
    if not probe.equal:
        assert not result.reason.startswith(NOT_A_VERDICT), (probe.category, result.reason, result.details)
