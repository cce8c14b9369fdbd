"""Stage 2 of the math verifier alone: canonical LaTeX for an extracted answer."""

from fractions import Fraction

import pytest

from trl_grpo_ext.verifiers.math.normalize import as_word, normalize_answer, plain_number


@pytest.mark.parametrize(
    "raw, canonical",
    [
        (r"\dfrac{1}{3}", r"\frac{1}{3}"),
        (r"\tfrac83", r"\frac{8}{3}"),
        (r"\frac12", r"\frac{1}{2}"),
        (r"\sqrt3", r"\sqrt{3}"),
        (r"\sqrt[3]2", r"\sqrt[3]{2}"),
        (r"\frac{1}{3}.", r"\frac{1}{3}"),
        (r"42.", "42"),
        (r"(1,2),", "(1,2)"),
        (r"\text{odd}", "odd"),
        (r"\textbf{A}", "A"),
        (r"\mathrm{e}", "e"),
        (r"10\text{ units}", "10"),
        (r"15\mbox{ cm}^2", "15"),
        ("125 miles", "125"),
        (r"90^\circ", "90"),
        (r"90^{\circ}", "90"),
        ("45°", "45"),
        (r"\$10", "10"),
        ("1,000,000", "1000000"),
        (r"11,\! 111,\! 100", "11111100"),
        (r"14{,}916", "14916"),
        ("1 000", "1000"),
        ("(12,102)", "(12,102)"),  # a pair, not twelve thousand
        ("**17**", "17"),
        (r"\left( 3, \frac{\pi}{2} \right)", r"( 3, \frac{\pi}{2} )"),
        (r"\\frac{1}{2}", r"\frac{1}{2}"),  # doubled backslashes from JSON
        ("x <= 5", r"x \le 5"),
        (r"x \leq 5", r"x \le 5"),
        (r"x \geqslant 5", r"x \ge 5"),
        (r"x \neq 3", r"x \ne 3"),
        ("0,111", "0.111"),
        ("1, 2, 3, ...", "1, 2, 3, ..."),  # an ellipsis is part of the answer
        (r"6 \text{ and } 8", "6, 8"),
        ("{1,3}", "1,3"),  # grouping braces
        (r"4\frac{4}{9}", r"4\frac{4}{9}"),  # latex mixed number: left for the parser
    ],
)
def test_normalises(raw, canonical):
    assert normalize_answer(raw).text == canonical


@pytest.mark.parametrize("raw, value", [(r"20\%", "20"), ("28 percent", "28"), ("28pct", "28"), ("5%", "5")])
def test_percent_is_removed_and_remembered(raw, value):
    result = normalize_answer(raw)
    assert (result.text, result.percent) == (value, True)


@pytest.mark.parametrize(
    "raw, fraction", [("4 4/9", r"\frac{40}{9}"), ("-2 1/2", r"-\frac{5}{2}"), ("4 0/9", r"\frac{36}{9}")]
)
def test_plain_mixed_numbers(raw, fraction):
    assert normalize_answer(raw).text == fraction


@pytest.mark.parametrize("raw", ["4 4/0", "11 6/6", "11 7/6", "0 0/0"])
def test_improper_mixed_numbers_are_invalid_not_truncated(raw):
    assert normalize_answer(raw).invalid == "invalid_mixed_number"


@pytest.mark.parametrize(
    "text, value",
    [
        ("12", Fraction(12)),
        ("-0.5", Fraction(-1, 2)),
        (".25", Fraction(1, 4)),
        ("1e-7", Fraction(1, 10_000_000)),
        ("3/4", Fraction(3, 4)),
        (r"\frac{3}{4}", Fraction(3, 4)),
        (r"-\frac{3}{4}", Fraction(-3, 4)),
        (r"2\frac{1}{2}", Fraction(5, 2)),
        ("+7", Fraction(7)),
    ],
)
def test_plain_numbers(text, value):
    assert plain_number(text) == value


@pytest.mark.parametrize("text", ["x", r"\sqrt{2}", "1e999999", "3/0", "9" * 100, "1,2", ""])
def test_not_plain_numbers(text):
    assert plain_number(text) is None


@pytest.mark.parametrize(
    "text, word", [("odd", "odd"), ("Evelyn", "Evelyn"), ("east wind", "east wind"), ("x+1", None), ("12", None)]
)
def test_words(text, word):
    assert as_word(text) == word
