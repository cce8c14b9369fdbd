"""Wrong answers generated from correct ones (issue 19): every mutant of the probes' references scores 0.

`benchmarks/math_mutants.py` builds, from each reference, completions that are different answers by construction
(a changed value, a qualifier or another unit, a hedge with a wrong alternative, an approximation of an exact value,
a perturbation that sampling must refute). This is its fast slice: the references of the probes, in one batch."""

from __future__ import annotations

import pytest
from benchmark_modules import load_benchmark

from trl_grpo_ext.verifiers import get_verifier

MUTANTS = load_benchmark("math_mutants")


@pytest.fixture(scope="module")
def scored():
    items = [m for ref in MUTANTS.probe_references() for m in MUTANTS.mutants(ref)]
    verifier = get_verifier("math", n_workers=2)
    try:
        results = verifier.verify_batch([m.completion for m in items], [m.reference for m in items])
    finally:
        verifier.close()
    return list(zip(items, results))


def test_every_class_is_generated(scored):
    counts = {kind: sum(m.kind == kind for m, _ in scored) for kind in MUTANTS.CLASSES}
    assert min(counts.values()) >= 30, counts


def test_no_wrong_mutant_is_paid(scored):
    paid = [(m.kind, m.completion, m.reference, r.reason) for m, r in scored if r.score == 1.0]
    assert paid == []


def test_no_mutant_escapes_its_zero(scored):
    """A wrong answer is 0, never None: None would keep it out of its group's statistics."""
    escaped = [(m.completion, m.reference, r.reason) for m, r in scored if r.score is None]
    assert escaped == []


@pytest.mark.parametrize(
    "reference, kinds",
    [
        ("42", {"value", "qualifier", "unit", "hedge"}),
        (r"\frac{1}{3}", {"value", "qualifier", "hedge", "approximation"}),
        ("123456", {"approximation"}),
        ("x^2 + 1", {"value", "perturbation", "hedge"}),
        ("B", {"hedge"}),
    ],
)
def test_mutants_of_a_reference_cover_its_classes(reference, kinds):
    made = MUTANTS.mutants(reference)
    assert kinds <= {m.kind for m in made}
    assert all(m.completion.replace(" ", "") != rf"\boxed{{{reference}}}".replace(" ", "") for m in made)
