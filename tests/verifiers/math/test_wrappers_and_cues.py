"""Right answers in forms that decorate or spell their value (docs/verifiers.md, "Wrappers, invisible characters,
plain-text math and answer cues"): box-like wrappers, invisible characters inside a number, an equation chain without
variables ending in the value, answer cues in more languages, `sqrt(2)` and `pi/2` in plain text, number words. Each pays, and the
same form around another value does not."""

from __future__ import annotations

import pytest

from trl_grpo_ext.verifiers.math.normalize import normalize_answer
from trl_grpo_ext.verifiers.math.wrappers import number_from_words, plain_text_math, stated_number, undecorated

PAID = [
    (r"$\framebox{5}$", "5"),
    (r"$\framebox[2cm][c]{5}$", "5"),
    (r"$\boxed{\boxed{5}}$", "5"),
    (r"$x = 5 \tag{1}$", "5"),
    (r"$\boxed{\underbrace{5}_{\text{total}}}$", "5"),
    (r"$\boxed{\hspace{1em}5}$", "5"),
    (r"$\boxed{\textstyle \frac12}$", "0.5"),
    (r"$\boxed{\left. 5 \right.}$", "5"),
    ("The answer is 1\u200b2.", "12"),  # zero-width space
    ("$\\boxed{1\u200d2}$", "12"),  # zero-width joiner
    ("$\\boxed{1\u00ad2}$", "12"),  # soft hyphen
    ("$\\boxed{\ufeff12}$", "12"),  # byte-order mark
    ("$\\boxed{\u200e12}$", "12"),  # left-to-right mark
    (r"$\boxed{\binom{6}{2} = 15}$", "15"),
    (r"$\boxed{4 \times 5 - 2 = 18}$", "18"),
    ("A resposta é 7.", "7"),
    ("La risposta è 7.", "7"),
    ("Antwort: 7", "7"),
    ("Jawabannya adalah 7.", "7"),
    ("Đáp án là 7.", "7"),
    ("The answer is sqrt(2).", r"\sqrt{2}"),
    ("x = pi/2", r"\frac{\pi}{2}"),
    ("The answer is pi/2.", r"\frac{\pi}{2}"),
    ("The answer is twenty-four.", "24"),
    (r"$\boxed{\text{one half}}$", r"\frac12"),
    (r"$\boxed{\text{a million}}$", "1000000"),
    ("Final answer: three quarters", "0.75"),
]
REFUSED = [
    (r"$\boxed{\underbrace{5}_{6}}$", "6"),  # the label is not the value
    ("The answer is 1\u200b2.", "1"),
    (r"$\boxed{4 \times 5 - 2 = 18}$", "4"),
    (r"$\boxed{\binom{6}{2} = 16}$", "15"),
    ("The answer is sqrt(2).", "2"),
    ("The answer is pi/2.", "2"),
    ("A resposta é 7.", "8"),
    ("The answer is twenty-five.", "24"),
    (r"$\boxed{\text{six million}}$", "6"),
    (r"$\boxed{6 \text{ million}}$", "6"),
    (r"$\boxed{\text{one halves}}$", r"\frac12"),
]


@pytest.mark.parametrize("pairs, score", [(PAID, 1.0), (REFUSED, 0.0)], ids=["paid", "refused"])
def test_forms(score_pairs, pairs, score):
    assert [row for row in score_pairs(pairs) if row[2] != score] == []


def test_the_rewrites():
    assert undecorated(r"\underbrace{2+3}_5") == "2+3"
    assert undecorated(r"\overbrace{x}^{n}+1") == "x+1"
    assert undecorated(r"\boxed{\frac{1}{2}}") == r"\frac{1}{2}"
    assert plain_text_math("sqrt(x+1) + pi") == r"\sqrt{x+1} + \pi "
    assert plain_text_math("spin") == "spin"
    is_number = str.isdigit
    assert stated_number("2 + 3 = 5", is_number) == "5"
    assert stated_number("x = 5", is_number) == "x = 5"  # a name and its value
    assert stated_number(r"2 \le 5", is_number) == r"2 \le 5"
    assert normalize_answer(r"\boxed{\boxed{5}}").text == "5"
    assert [number_from_words(t) for t in ("twenty-four", "a million", "one half", "two hundred and five")] == [
        "24",
        "1000000",
        "1/2",
        "205",
    ]
    assert number_from_words("odd") is None and number_from_words("hundred") is None
