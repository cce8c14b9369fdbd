"""Wrong answers generated from correct ones: every mutant of the probes' references scores 0.

`benchmarks/math_mutants.py` builds, from each reference, completions that are different answers by construction
(a changed value, a qualifier or another unit, a hedge with a wrong alternative, an approximation of an exact value,
a perturbation that sampling must refute, the question echoed unevaluated, a wrong value then a cut-off sentence, a
hedge in a later sentence), and places each in whole-completion templates (chain of thought, Minerva, GSM8K, bold,
tagged, Unicode, intermediate boxes, restatements, a check, a retraction). This is its fast slice: the references of
the probes, each mutant as generated and in a seeded sample of templates, and the controls (the reference itself in
every template), in one batch."""

from __future__ import annotations

from collections import Counter

import pytest
from benchmark_modules import load_benchmark

MUTANTS = load_benchmark("math_mutants")
# Templates per mutant in this slice (besides the mutant as generated), drawn with a fixed seed; the script runs all.
SAMPLE, SEED = 4, 0
# Controls of the probes' references that pay, as measured (2911 controls; 3 misses, listed below): a one-letter unit
# in bold or GSM8K prose ("**Answer:** 5 m" for `5 \text{ m}`: `5 m` is read as 5 times m). Before the letter path read
# labels and corrections and a lone word became an answer, 17 missed (2894 paid).
CONTROLS_PAID = 2908
KNOWN_MISSES = {(t, r"5 \text{ m}") for t in ("gsm8k", "bold_label", "bold_sentence")}


@pytest.fixture(scope="module")
def report():
    references = MUTANTS.probe_references()
    items = MUTANTS.placed_mutants(references, sample=SAMPLE, seed=SEED)
    controls = [c for ref in references for c in MUTANTS.controls(ref)]
    return MUTANTS.score(items, controls)


def _listing(rows) -> str:
    return "\n".join(repr(row) for row in rows)


def test_every_class_and_template_is_generated(report):
    by_class, by_template = {}, {}
    for (kind, template), (n, _) in report.mutants.items():
        by_class[kind] = by_class.get(kind, 0) + n
        by_template[template] = by_template.get(template, 0) + n
    assert min(by_class.get(kind, 0) for kind in MUTANTS.CLASSES) >= 30, by_class
    assert min(by_template.get(template, 0) for template in MUTANTS.TEMPLATES) >= 30, by_template
    assert set(report.controls) == set(MUTANTS.CONTROL_TEMPLATES), report.controls


def test_no_wrong_mutant_is_paid(report):
    paid = [(m.kind, m.template, m.completion, m.reference, reason) for m, reason in report.paid]
    by_form = Counter((kind, template) for kind, template, *_ in paid)
    assert paid == [], f"{len(paid)} mutants paid, by class and template: {dict(by_form)}\n{_listing(paid)}"


def test_no_mutant_escapes_its_zero(report):
    """A wrong answer is 0, never None: None would keep it out of its group's statistics."""
    escaped = [(m.kind, m.template, m.completion, m.reference, reason) for m, reason in report.escaped]
    assert escaped == [], _listing(escaped)
    assert report.unusable == []  # every probe's reference can be read


def test_an_echoed_question_is_not_simplified(report):
    """`28 + 14`, `2 \\times 21`, `\\sqrt{1764}` for 42, wherever the completion states it as its only answer."""
    wrong = [(m.template, m.completion, m.reference, reason) for m, reason in report.echo_reasons]
    assert wrong == [], _listing(wrong)


def test_controls_pay(report):
    """The reference itself in every template pays, except the misses measured (listed on failure)."""
    misses = [(c.template, c.completion, c.reference, score, reason) for c, score, reason in report.misses]
    paid = sum(p for _, p in report.controls.values())
    print(f"controls: {sum(n for n, _ in report.controls.values())}, paid {paid}; not paid:\n{_listing(misses)}")
    assert paid >= CONTROLS_PAID, _listing(misses)
    assert {(t, ref) for t, _, ref, _, _ in misses} <= KNOWN_MISSES, _listing(misses)


@pytest.mark.parametrize(
    "reference, kinds",
    [
        ("42", {"value", "qualifier", "unit", "hedge", "echo", "cut_off", "hedge_across_sentences"}),
        (r"\frac{1}{3}", {"value", "qualifier", "hedge", "approximation", "cut_off", "hedge_across_sentences"}),
        ("123456", {"approximation", "echo"}),
        ("x^2 + 1", {"value", "perturbation", "hedge", "cut_off", "hedge_across_sentences"}),
        ("B", {"hedge", "hedge_across_sentences"}),
    ],
)
def test_mutants_of_a_reference_cover_its_classes(reference, kinds):
    made = MUTANTS.mutants(reference)
    assert kinds <= {m.kind for m in made}
    assert all(m.completion.replace(" ", "") != rf"\boxed{{{reference}}}".replace(" ", "") for m in made)


def test_echoes_write_the_question_unevaluated():
    assert MUTANTS.echoes(42) == ["28 + 14", r"2 \times 21", r"\sqrt{1764}"]
    assert r"2^{10}" in MUTANTS.echoes(1024)
    assert r"\dbinom{16}{5}" in MUTANTS.echoes(4368)
    assert MUTANTS.echoes(-7) == ["-5 - 2", r"-\sqrt{49}"]
    assert not any(m.kind == "echo" for m in MUTANTS.mutants("1.2676506002282294e30"))  # a decimal takes arithmetic


def test_a_mutant_is_placed_in_every_template():
    (wrong,) = [m for m in MUTANTS.mutants("42") if m.kind == "value" and m.answer == "-42"]
    placed = {m.template: m.completion for m in MUTANTS.placements(wrong)}
    assert set(placed) == set(MUTANTS.TEMPLATES)
    assert placed["minerva"].endswith("Final Answer: The final answer is $-42$. I hope it is correct.")
    assert placed["gsm8k"].endswith("#### -42")
    assert placed["unicode"].endswith("So the answer is \u221242.")
    assert placed["tagged"].endswith("<answer>-42</answer>")
    assert placed["retraction"].endswith(r"$\boxed{42}$. Wait, that's wrong: the correct value is $-42$.")
    assert placed["restate_ref_after"].endswith(r"$\boxed{-42}$ (or $42$).")
    assert r"$\boxed{42}$ on the first pass" in placed["intermediate"]
    assert placed["intermediate"].endswith(r"**Final Answer:** $\boxed{-42}$")


def test_controls_place_the_reference_itself():
    made = {c.template: c.completion for c in MUTANTS.controls("-7")}
    assert set(made) == set(MUTANTS.CONTROL_TEMPLATES)
    assert made["bare"] == "-7"
    assert made["unicode"].endswith("So the answer is \u22127.")
    assert made["restate_equal"].endswith(r"$\boxed{-7}$ (or $-7$).")
    assert made["correction_box"].endswith(r"Redoing it: $\boxed{-7}$")
    assert "unicode" not in {c.template for c in MUTANTS.controls("42")}
    assert MUTANTS.unicode_form(r"2\sqrt{3} - \pi") == "2√3 \u2212 π"
