"""The number rules of the math verifier alone: exact numbers exactly, decimals at the precision they are written to;
a decimal reference pays a different value only where it reads as a rounding of it."""

from fractions import Fraction

import pytest

from trl_grpo_ext.verifiers.math.expressions import expressions_equal
from trl_grpo_ext.verifiers.math.normalize import plain_number
from trl_grpo_ext.verifiers.math.numbers import (
    Precision,
    Tolerance,
    half_unit,
    is_decimal_text,
    never_ends,
    plain_numbers_equal,
    significant_digits,
    written_precision,
)
from trl_grpo_ext.verifiers.math.parse import parse_leaf


@pytest.mark.parametrize(
    "text, half, digits",
    [
        ("0.33", Fraction(5, 1000), 2),
        ("2.50", Fraction(5, 1000), 3),
        ("1.5e-3", Fraction(5, 100000), 2),
        ("1.0e-7", Fraction(5, 10**9), 2),
        (r"6.02 \times 10^{23}", Fraction(5 * 10**20), 3),
        (".5", Fraction(5, 100), 1),
        ("1000.0", Fraction(5, 100), 5),
        ("-0.0833", Fraction(5, 100000), 3),
    ],
)
def test_half_unit_of_the_last_written_digit(text, half, digits):
    assert is_decimal_text(text)
    assert half_unit(text) == half
    assert significant_digits(text) == digits


@pytest.mark.parametrize("text", ["12", "-7", r"\frac{1}{2}", "1/2", "x", "", "1e-7", r"3 \times 10^5"])
def test_integers_and_fractions_are_not_decimals(text):
    assert not is_decimal_text(text)


def test_written_precision_comes_from_a_decimal_reference_or_a_precise_decimal_prediction():
    assert written_precision("1/3", "0.33", ref_exact=False, pred_never_ends=True) == Precision(
        Fraction(5, 1000), True
    )
    assert written_precision("1", "0.33", ref_exact=False) is None  # a terminating value is not rounded to 0.33
    assert written_precision("0.333", "0.33", ref_exact=False) is None  # 2 significant digits: not read as rounded
    assert written_precision("3.14159", "3.142", ref_exact=False) == Precision(Fraction(5, 10000), True)
    assert written_precision("1/4", "0.2", ref_exact=False) is None
    assert written_precision("1563/125", "12.50", ref_exact=False) == Precision(Fraction(5, 1000), True)
    assert written_precision("0.3333", "1/3", ref_exact=True) == Precision(Fraction(5, 100000), False)
    assert written_precision("0.333", "1/3", ref_exact=True) is None  # 3 significant digits are not enough
    assert written_precision("2", "1/3", ref_exact=True) is None


@pytest.mark.parametrize(
    "value, ends",
    [
        (Fraction(1, 3), False),
        (Fraction(2, 3), False),
        (Fraction(1, 7), False),
        (Fraction(5, 6), False),
        (Fraction(-1, 12), False),
        (Fraction(1, 8), True),
        (Fraction(11, 20), True),
        (Fraction(1, 4), True),
        (Fraction(3, 1), True),
        (Fraction(-7, 1250), True),
    ],
)
def test_never_ends_when_the_reduced_denominator_has_a_prime_other_than_2_and_5(value, ends):
    assert never_ends(value) is not ends


@pytest.mark.parametrize(
    "pred, ref, equal",
    [
        ("2.0001", "2", False),
        ("1000000.4", "1000000", False),
        ("2.0000", "2", True),
        ("1", "1.0001", False),
        ("1/3", "0.33", True),
        ("0.335", "0.33", False),  # exactly half a unit away, and a longer decimal against 2 significant digits
        ("0.3351", "0.33", False),
        ("0.33", "1/3", False),
        ("0.3333", "1/3", True),
        ("0.3334", "1/3", False),
        ("0.6666", "2/3", False),  # truncated, not rounded
        ("1e-7", "2e-7", False),
        ("1.4e-7", "1e-7", False),  # without a decimal point, 1e-7 is exactly 10^-7
        ("1.04e-7", "1.0e-7", False),  # 2 significant digits: 1.0e-7 is not read as a rounding of 1.04e-7
        ("1.00004e-7", "1.0000e-7", True),  # 5 significant digits: it is
        ("123456789012345678901234567891", "123456789012345678901234567890", False),
    ],
)
def test_plain_numbers(pred, ref, equal):
    assert plain_numbers_equal(plain_number(pred), plain_number(ref), pred, ref, Tolerance()) is equal


def test_extra_tolerance_is_opt_in_and_never_between_integers_or_fractions():
    two, near = plain_number("2"), plain_number("2.0001")
    assert not plain_numbers_equal(near, two, "2.0001", "2", Tolerance())
    assert plain_numbers_equal(near, two, "2.0001", "2", Tolerance(rel_tol=1e-3))
    assert plain_numbers_equal(plain_number("1e-13"), plain_number("0"), "1e-13", "0", Tolerance(abs_tol=1e-12))
    big, bigger = plain_number("1000000"), plain_number("1000001")
    assert not plain_numbers_equal(bigger, big, "1000001", "1000000", Tolerance(rel_tol=0.1))


# The decimal-reference rule: (prediction, reference, paid). Both the fast path (two plain numbers, in-process) and
# the worker (`expressions_equal`, sympy) must give the same verdict.
DECIMAL_REFERENCES = [
    # equal in value: always paid
    ("0.50", "0.5", True),
    ("1/2", "0.5", True),
    (r"\frac{1}{2}", "0.5", True),
    ("1.5e-3", "0.0015", True),
    ("0.0015", "1.5e-3", True),
    ("2.5", "2.50", True),
    ("-0.50", "-0.5", True),
    # a different terminating value against a short reference: wrong, however close
    ("0.54", "0.5", False),
    ("0.46", "0.5", False),
    ("2.46", "2.5", False),
    ("2.54", "2.5", False),
    ("1.45", "1.5", False),
    ("12.54", "12.5", False),
    ("0.254", "0.25", False),
    ("0.333", "0.33", False),
    ("0.331", "0.33", False),
    ("2.504", "2.50", False),  # 3 significant digits, trailing zero included
    ("-0.54", "-0.5", False),
    ("-12.54", "-12.5", False),
    # a terminating fraction is not rounded either; the boundary never pays
    ("1/4", "0.2", False),
    ("11/20", "0.5", False),
    ("9/20", "0.5", False),
    ("1/8", "0.13", False),
    (r"\frac{1}{8}", "0.13", False),
    ("-1/4", "-0.2", False),
    # a fraction whose decimals never end: paid strictly inside half a unit
    ("1/3", "0.33", True),
    ("1/3", "0.333", True),
    ("1/3", "0.3333", True),
    ("2/3", "0.67", True),
    ("2/3", "0.667", True),
    ("1/7", "0.1429", True),
    ("1/7", "0.143", True),
    ("1/12", "0.0833", True),
    ("-1/3", "-0.33", True),
    ("-2/3", "-0.67", True),
    (r"-\frac{1}{7}", "-0.1429", True),
    ("1/3", "0.3", True),  # 0.0333 < 0.05
    ("2/3", "0.66", False),  # truncated, not rounded
    ("1/7", "0.1428", False),
    ("1/3", "0.34", False),
    ("1/3", "0.33333334", False),  # 1/3 - 0.33333334 = -6.7e-9, more than 5e-9
    ("-1/3", "0.33", False),
    # a longer decimal against a reference of 4+ significant digits: paid strictly inside half a unit
    ("3.14159", "3.142", True),
    ("3.1416", "3.142", True),
    ("0.33333", "0.3333", True),
    ("0.333333", "0.3333", True),
    ("-3.14159", "-3.142", True),
    ("12.504", "12.50", True),  # 4 significant digits, trailing zero included
    ("1000.04", "1000.0", True),
    ("1563/125", "12.50", True),  # 12.504: the same value as a decimal or a fraction, the same verdict
    ("3927/1250", "3.142", True),  # 3.1416
    ("1000", "1000.0", True),  # equal
    ("1001/1000", "1.0000", False),  # 1.001: outside half a unit
    ("3.1425", "3.142", False),  # the boundary, above
    ("3.1415", "3.142", False),  # the boundary, below
    ("3.1426", "3.142", False),
    ("3.141", "3.142", False),  # same length
    ("3.14", "3.142", False),  # shorter
    ("3.1", "3.142", False),
    ("0.3334", "0.3333", False),  # same length
    ("0.33336", "0.3333", False),
    ("3.14159", "-3.142", False),
]


@pytest.mark.parametrize("pred, ref, paid", DECIMAL_REFERENCES)
def test_a_decimal_reference_pays_another_value_only_where_it_reads_as_a_rounding(pred, ref, paid):
    a, b = plain_number(pred), plain_number(ref)
    assert a is not None and b is not None
    assert plain_numbers_equal(a, b, pred, ref, Tolerance()) is paid
    assert expressions_equal(parse_leaf(pred), parse_leaf(ref), Tolerance(), pred, ref) is paid


@pytest.mark.parametrize(
    "pred, ref, paid",
    [
        (r"\pi", "3.14", True),
        (r"\pi", "3.1416", True),
        (r"\pi", "3.142", True),
        (r"\pi", "3.15", False),
        (r"\pi", "3.141", False),  # truncated
        (r"-\pi", "-3.14", True),
        (r"\sqrt{2}", "1.414", True),
        (r"\sqrt{2}", "1.41", True),
        (r"\sqrt{2}", "1.415", False),
        (r"\frac{\sqrt{2}}{2}", "0.71", True),
        ("e", "2.718", True),
        ("e", "2.72", True),
        ("e", "2.71", False),
        (r"\log_2 9", "3.170", True),
        (r"0.1\pi", "0.314", True),  # a decimal inside a formula is exact: pi/10
        ("0.5+0.04", "0.5", False),  # 27/50 ends
        (r"\frac{1}{3}+\frac{1}{5}", "0.53", True),  # 8/15 never ends
        (r"\frac{1}{4}+\frac{3}{10}", "0.5", False),  # 11/20 ends
        # scientific notation: the rule reads the written places and significant digits of the mantissa
        (r"6.0221 \times 10^{23}", r"6.02 \times 10^{23}", False),  # 3 significant digits: not a rounding
        (r"6.0221 \times 10^{23}", r"6.022 \times 10^{23}", True),
        (r"6.02214 \times 10^{23}", r"6.022 \times 10^{23}", True),
        (r"6.0225 \times 10^{23}", r"6.022 \times 10^{23}", False),  # the boundary
        (r"6.021 \times 10^{23}", r"6.022 \times 10^{23}", False),  # same length
        (r"6.02 \times 10^{23}", r"6.020 \times 10^{23}", True),  # equal
        (r"\frac{2}{3} \times 10^{23}", r"6.67 \times 10^{22}", True),
        (r"\frac{1}{4} \times 10^{23}", r"2.6 \times 10^{22}", False),
        (r"6.02 \times 10^{23} + 1", r"6.02 \times 10^{23}", False),  # an integer: it ends
        (r"-6.0221 \times 10^{23}", r"-6.022 \times 10^{23}", True),
        ("602214076000000000000000", r"6.022 \times 10^{23}", True),  # an integer finer than 4 digits
        ("2^{100}", "1.2676506002282294e30", True),  # 17 significant digits: a float's rounding of 2^100
        ("2^{100}+10^{14}", "1.2676506002282294e30", False),  # 1.01e14 > half a unit (5e13)
    ],
)
def test_the_worker_applies_the_same_rule_to_irrational_values_and_formulas(pred, ref, paid):
    assert expressions_equal(parse_leaf(pred), parse_leaf(ref), Tolerance(), pred, ref) is paid


def test_an_explicit_tolerance_still_applies_against_a_decimal_reference():
    half, near = plain_number("0.5"), plain_number("0.54")
    assert not plain_numbers_equal(near, half, "0.54", "0.5", Tolerance())
    assert plain_numbers_equal(near, half, "0.54", "0.5", Tolerance(abs_tol=0.05))
    assert plain_numbers_equal(near, half, "0.54", "0.5", Tolerance(rel_tol=0.1))
    assert expressions_equal(parse_leaf("0.54"), parse_leaf("0.5"), Tolerance(abs_tol=0.05), "0.54", "0.5")
