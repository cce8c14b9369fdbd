"""The number rules of the math verifier alone: exact numbers exactly, decimals at the precision they are written to."""

from fractions import Fraction

import pytest

from trl_grpo_ext.verifiers.math.normalize import plain_number
from trl_grpo_ext.verifiers.math.numbers import (
    Tolerance,
    half_unit,
    is_decimal_text,
    plain_numbers_equal,
    significant_digits,
    written_precision,
)


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
    assert written_precision("1", "0.33", ref_exact=False) == Fraction(5, 1000)
    assert written_precision("0.3333", "1/3", ref_exact=True) == Fraction(5, 100000)
    assert written_precision("0.333", "1/3", ref_exact=True) is None  # 3 significant digits are not enough
    assert written_precision("2", "1/3", ref_exact=True) is None


@pytest.mark.parametrize(
    "pred, ref, equal",
    [
        ("2.0001", "2", False),
        ("1000000.4", "1000000", False),
        ("2.0000", "2", True),
        ("1", "1.0001", False),
        ("1/3", "0.33", True),
        ("0.335", "0.33", True),  # exactly half a unit away: accepted (<=)
        ("0.3351", "0.33", False),
        ("0.33", "1/3", False),
        ("0.3333", "1/3", True),
        ("0.3334", "1/3", False),
        ("0.6666", "2/3", False),  # truncated, not rounded
        ("1e-7", "2e-7", False),
        ("1.4e-7", "1e-7", False),  # without a decimal point, 1e-7 is exactly 10^-7
        ("1.04e-7", "1.0e-7", True),
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
