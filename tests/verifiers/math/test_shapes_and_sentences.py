"""Ratios and clock times are not quotients; the sentence around an answer decides what it is (docs/verifiers.md,
"Ratios and clock times" and "the final-answer model"). Each class: attacks that must score 0, controls that must
pay, on both sides where the class has two (the reference and the answer)."""

from __future__ import annotations

import pytest

from trl_grpo_ext.verifiers.math.extract import extract_answer
from trl_grpo_ext.verifiers.math.fast import shape_verdict
from trl_grpo_ext.verifiers.math.normalize import normalize_answer
from trl_grpo_ext.verifiers.math.ratios import canonical_time, ratio_terms

RATIO_ATTACKS = [
    (r"\boxed{2:4:3}", "2:3:4"),  # a permutation
    (r"\boxed{\frac16}", "2:3:4"),  # the running quotient
    (r"\boxed{0.1666}", "2:3:4"),
    (r"\boxed{5:2:1}", "5:2"),  # a term added: the same running quotient
    (r"\boxed{5}", "5:1"),
    (r"\boxed{\frac52}", "5:2"),  # a two-term ratio is not its fraction, in either direction
    (r"\boxed{2.5}", "5:2"),
    (r"\boxed{5:2}", r"\frac{5}{2}"),
    (r"\boxed{2:5}", "5:2"),
    (r"\boxed{-2:-3}", "2:3"),  # a negative common factor
    (r"\boxed{4:3:4}", "2:3:4"),  # one term rescaled
    (r"\boxed{2:3}", "2:3:4"),  # a term dropped
    (r"\boxed{(2, 3)}", "2:3"),  # a tuple is not a ratio
    (r"\boxed{x:y=5:3}", "5:2"),
    (r"\boxed{\sqrt{2}:1}", r"1:\sqrt{2}"),
    (r"\boxed{14:64}", "7:32"),  # `7:32` reads as a clock: never rescaled
    ("The ratio of boys to girls is 2:3.", "3:2"),
]
RATIO_CONTROLS = [
    (r"\boxed{2:3:4}", "2:3:4"),
    (r"\boxed{4:6:8}", "2:3:4"),  # a positive common factor
    (r"\boxed{10:4}", "5:2"),
    (r"\boxed{1:1.5}", "2:3"),
    (r"\boxed{2 : 3}", "2:3"),
    (r"\boxed{2 \colon 3}", "2:3"),
    (r"\boxed{x:y=5:2}", "5:2"),
    (r"\boxed{1:\sqrt{2}}", r"1:\sqrt2"),  # formula terms: term by term
    (r"\boxed{7:32}", r"S_{MBCN}:S=7:32"),  # a clock-shaped answer for a ratio with the same terms
    (r"\boxed{14:64}", r"S_{MBCN}:S=7:32"),  # not clock-shaped: rescaled
    ("The ratio of boys to girls is 3:2.", "3:2"),
]
TIME_ATTACKS = [
    (r"\boxed{\text{2:15 PM}}", r"\text{4:30 PM}"),  # the same quotient
    (r"\boxed{\text{4:30 AM}}", r"\text{4:30 PM}"),  # the other half of the day
    (r"\boxed{4:30}", r"\text{4:30 PM}"),  # the half of the day left open
    (r"\boxed{4:45 PM}", "4:30 PM"),
    (r"\boxed{9:00}", "3:00"),
    (r"\boxed{1:00}", "12:00"),
    (r"\boxed{04:30}", "16:30"),
    (r"\boxed{16:30}", "4:30 AM"),
    (r"\boxed{4}", "4:30 PM"),
    (r"\boxed{\frac{4}{30}}", "4:30"),
    ("The answer is 2:15 PM.", "4:30 PM"),
]
TIME_CONTROLS = [
    (r"\boxed{\text{4:30 PM}}", r"\text{4:30 PM}"),
    (r"\boxed{16:30}", "4:30 PM"),  # the same time, 24-hour
    (r"\boxed{4:30 p.m.}", "4:30 PM"),
    (r"\boxed{4:30 PM}", "4:30"),  # the reference leaves the half open: either reading is it
    (r"\boxed{16:30}", "4:30"),
    (r"\boxed{12:00}", "12:00"),
    (r"\boxed{4:30:00 PM}", "4:30 PM"),
    ("It is 4:30 p.m.", r"\text{4:30 PM}"),
]
CONTEXT_ATTACKS = [
    (r"Is it $\boxed{5}$?", "5"),  # a question
    (r"Could the answer be $\boxed{5}$? We need more information.", "5"),
    (r"It cannot be $\boxed{5}$.", "5"),  # a denial
    (r"The answer is not $\boxed{5}$.", "5"),
    (r"Suppose the answer were $\boxed{5}$; then we get a contradiction.", "5"),  # a hypothesis
    (r"If $x = \boxed{5}$, the equation fails.", "5"),
    (r"We get $x = \boxed{5}$, which is impossible since $x < 0$.", "5"),  # refuted
    (r"The answer is $7$ (for comparison, the old method gives $\boxed{5}$).", "5"),  # an aside
    ("The answer is $7$.\n\n[^1]: $\\boxed{5}$ was the first guess.", "5"),  # a footnote
    (r"The sum gives $\boxed{12}$, but the correct count is 9.", "12"),  # a correction in prose
    (r"$\boxed{5 \text{ is wrong}}$", "5"),  # judgement inside the box
    (r"$\boxed{\text{not (C)}}$", "C"),
    (r"$\boxed{x \not= 5}$", "5"),
    (r"$\boxed{x \not= 5}$", "x = 5"),
]
CONTEXT_CONTROLS = [
    (r"The sum gives $\boxed{12}$, but the correct count is 9.", "9"),
    (r"Not 3 but $\boxed{5}$.", "5"),
    (r"It's not hard: $\boxed{5}$.", "5"),
    (r"If we add them, we get $\boxed{7}$.", "7"),
    (r"Suppose $x$ is the price. Then $x = \boxed{7}$.", "7"),
    (r"Since $x$ cannot be negative, $x = \boxed{7}$.", "7"),
    (r"So the answer is $\boxed{7}$ (the only value that works).", "7"),
    (r"$\boxed{x \not= 5}$", r"x \ne 5"),
    (r"Is it 7? Yes: $\boxed{7}$.", "7"),
]
CUE_ATTACKS = [
    ("The answer is $8$, which is more than $5$.", "5"),
    ("The answer is 3 hours and 20 minutes.", "3"),
    ("The answer is 5 apples and 3 pears.", "5"),
    ("The answer is 12 (not 12).", "12"),
    ("The answer is 7 (not 12).", "12"),
    ("The answer is 6, which is 2 + 4 = 8.", "6"),
    ("The answer is 42 because 6 x 7 = 42 and then 40.", "40"),
]
CUE_CONTROLS = [
    ("The answer is $8$, which is more than $5$.", "8"),
    ("The answer is 7 (not 12).", "7"),
    ("The answer is 6, which is 2 + 4 = 6.", "6"),
    ("The answer is 42 because 6 x 7 = 42.", "42"),
    ("The answer is 3 hours.", "3"),
    ("The answer is 2x + 3 = 7 apples.", "7"),
]
TRUNCATION_ATTACKS = [
    ("First, 6 x 7 = 42. Then we subtract", "42"),
    ("First, 6 x 7 = 42. Then we subtract 5", "42"),
    ("We have 6 x 7 = 42 so far.\nNext, we multiply this by", "42"),
    ("Step 1: 6 x 7 = 42.\nStep 2: Now divide the result by", "42"),
    ("6 x 7 = 42\nThen we multiply by", "42"),
]
TRUNCATION_CONTROLS = [
    ("0 + 7 = 7.", "7"),
    ("The answer to 0 + 0 is 0.", "0"),
    ("0 + 7 = 7", "7"),
    ("It's 5, not zero. So if you end the conversation with that", "5"),
    ("First, 6 x 7 = 42. Then we subtract 5 to get 37", "37"),
    ("The answer is 42. Then we subtract", "42"),  # an answer cue commits
]
JSON_ATTACKS = [
    ('{"reasoning": "2+3=5", "answer": 7}', "5"),
    ('{"reasoning": "x = 5", "final_answer": "7"}', "5"),
    ('```json\n{"answer": "7", "check": "5"}\n```', "5"),
    ('{"reasoning": "so 5", "answer": "\\\\boxed{7}"}', "5"),
    ('{"answer": [5, 7]}', "5"),
]
JSON_CONTROLS = [
    ('{"reasoning": "2+3=5", "answer": 7}', "7"),
    ('{"reasoning": "x = 5", "final_answer": "7"}', "7"),
    ('{"reasoning": "so 5", "answer": "\\\\boxed{7}"}', "7"),
    ('Here it is: ```json\n{"answer": "\\\\frac{1}{2}"}\n```', "0.5"),
    ('{"Final Answer": "7"}', "7"),
]
RUN_ON_ATTACKS = [
    ("The answer is 7.\nProblem: What is 2+3?\nThe answer is 5.", "5"),
    ("7\nHuman: what is 5? The answer is 5.", "5"),
    ("The answer is 7.\nQuestion 2: The answer is 5.", "5"),
    ("The answer is 7.\nUser: The answer is $\\boxed{5}$", "5"),
    ("The answer is 7.\n\n### Problem 3\nThe answer is 5.", "5"),
    ("The answer is 7.<|user|>The answer is 5.", "5"),
]
RUN_ON_CONTROLS = [
    ("The answer is 7.\nProblem: What is 2+3?\nThe answer is 5.", "7"),
    ("Problem: What is 3+4?\nSolution: 3 + 4 = 7. The answer is 7.", "7"),
]


@pytest.mark.parametrize(
    "attacks",
    [RATIO_ATTACKS, TIME_ATTACKS, CONTEXT_ATTACKS, CUE_ATTACKS, TRUNCATION_ATTACKS, JSON_ATTACKS, RUN_ON_ATTACKS],
    ids=["ratios", "times", "box_context", "answer_cue", "truncation", "json", "run_on"],
)
def test_attacks_score_zero(score_pairs, attacks):
    paid = [row for row in score_pairs(attacks) if row[2] != 0.0]
    assert paid == []


@pytest.mark.parametrize(
    "controls",
    [
        RATIO_CONTROLS,
        TIME_CONTROLS,
        CONTEXT_CONTROLS,
        CUE_CONTROLS,
        TRUNCATION_CONTROLS,
        JSON_CONTROLS,
        RUN_ON_CONTROLS,
    ],
    ids=["ratios", "times", "box_context", "answer_cue", "truncation", "json", "run_on"],
)
def test_controls_pay(score_pairs, controls):
    refused = [row for row in score_pairs(controls) if row[2] != 1.0]
    assert refused == []


def test_ratio_attacks_hold_with_the_sides_swapped(score_pairs):
    """Ratios are ratios on both sides: a reference written as the fraction refuses the ratio too."""
    swapped = [
        (rf"\boxed{{{ref}}}", answer[7:-1]) for answer, ref in RATIO_ATTACKS[:13] if answer.startswith("\\boxed")
    ]
    assert [row for row in score_pairs(swapped) if row[2] != 0.0] == []


def test_times_and_ratios_normalise_to_their_shape():
    assert canonical_time("4:30 PM") == r"\mathrm{time}(16,30,0)"
    assert canonical_time("12:05 a.m.") == r"\mathrm{time}(0,5,0)"
    assert canonical_time("04:30") == r"\mathrm{time}(4,30,0)"
    assert canonical_time("4:30") == r"\mathrm{clock}(4,30,0)"
    assert canonical_time("4:75") is None and canonical_time("15:00 PM") is None and canonical_time("5:2") is None
    assert normalize_answer(r"\text{4:30 PM}").text == r"\mathrm{time}(16,30,0)"
    assert ratio_terms("x : y = 5 : 2") == ["5", "2"]
    assert ratio_terms(r"\{x : x > 0\}") is None
    assert shape_verdict("10:4", "5:2") is True
    assert shape_verdict("0:4", "0:2") is True and shape_verdict("0:4", "1:2") is False
    assert shape_verdict("x:2", "x:2") == ("(x, 2)", "(x, 2)")
    assert shape_verdict("3", "4") is None


@pytest.mark.parametrize(
    "text, how",
    [
        (r"Is it $\boxed{5}$?", "uncommitted: question"),
        (r"It cannot be $\boxed{5}$.", "uncommitted: denied"),
        (r"Suppose $\boxed{5}$; then we get a contradiction.", "uncommitted: hypothesis"),
        (r"We get $\boxed{5}$, which is impossible.", "uncommitted: refuted"),
        (r"The value (compare $\boxed{5}$) is large.", "uncommitted: aside"),
        (r"$\boxed{5 \text{ is wrong}}$", "unparseable: judgement in the box"),
        ("The answer is 3 hours and 20 minutes.", "unparseable: several values"),
        ("First, 6 x 7 = 42. Then we subtract", "truncated"),
        ('{"answer": {"value": 5}}', "unparseable: json answer field"),
    ],
)
def test_why_no_answer_is_named(text, how):
    found = extract_answer(text)
    assert (found.answer, found.how) == (None, how)
