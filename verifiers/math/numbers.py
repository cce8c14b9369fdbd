"""How exactly two numbers must agree: exactly, or, where one side is a decimal, at the precision it is written to.
Pure Python (no sympy), so the verifier's fast path in the caller's process and the sympy comparison in the workers
apply the same rule.

- An exact number (integer of any size, fraction, and in `expressions` surds and expressions in pi or e) is
  compared exactly: `2.0001` is not `2`, `10^{20}+1` is not `10^{20}`, `2^{-60}` is not `0`.
- A reference written as a decimal (`0.33`, `2.50`, `1.5e-3`, `6.02 \\times 10^{23}`; with a decimal point) is paid
  by an equal value (`0.50`, `1/2` for `0.5`). It cannot say whether it was rounded, so a different value is paid
  only where "the reference is a rounding of it" is the likelier reading, and only strictly inside half a unit of
  the reference's last written digit (the boundary, exactly half a unit away, never pays):
  (a) an exact value whose decimal expansion does not end: a fraction whose reduced denominator has a prime factor
      other than 2 and 5 (`1/3` for `0.33`, `1/7` for `0.1429`), or, in `expressions`, a value sympy does not
      reduce to a fraction (`\\pi` for `3.14`, `\\sqrt{2}` for `1.414`): a rounding is the only way to write it
      as a decimal;
  (b) any value, against a reference of at least `MIN_SIGNIFICANT_DIGITS` significant digits: a value that
      close to it is written to more places (`3.14159` for `3.142`, `0.33333` for `0.3333`, `2^{100}` for
      `1.2676506002282294e30`), and a reference that precise reads as a rounding, where a short one (`0.5`, `12.5`,
      `0.25`, `6.02 \\times 10^{23}`) reads as the answer itself.
  Anything else is a different answer: `0.54` and `11/20` for `0.5`, `12.54` for `12.5`, `0.254` for `0.25`,
  `1/4` for `0.2`, `1/8` for `0.13`, `0.333` for `0.33`. (A decimal as short as the reference or shorter is never
  inside half a unit of it unless equal.)
- A decimal prediction for an exact reference is accepted only when it is that reference correctly rounded at the
  prediction's last digit, carries at least `MIN_SIGNIFICANT_DIGITS` significant digits and writes the units digit:
  `0.3333` or `0.33333` for `1/3`, `2.6667` for `8/3`, never `0.33` or `0.3`, nor `3.333 \\times 10^{6}` for
  `10^7/3`. An integer reference is matched exactly: `2.0001` is not `2`, `1.234 \\times 10^{5}` is not `123412`.
- `rel_tol` / `abs_tol` (verifier options, default 0) add an explicit tolerance on top, for users who want one;
  it never applies between two integers or fractions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

MIN_SIGNIFICANT_DIGITS = 4
DECIMAL_TEXT = re.compile(r"[+-]?(\d*)\.?(\d*)(?:[eE]([+-]?\d+))?")


@dataclass(frozen=True)
class Tolerance:
    """Extra tolerance on top of the exactness rules: |a - b| <= max(rel_tol * max(|a|, |b|), abs_tol)."""

    rel_tol: float = 0.0
    abs_tol: float = 0.0

    def accepts(self, a: Fraction | float, b: Fraction | float) -> bool:
        if not (self.rel_tol or self.abs_tol):
            return False
        bound = max(Fraction(self.rel_tol) * max(abs(Fraction(a)), abs(Fraction(b))), Fraction(self.abs_tol))
        return abs(Fraction(a) - Fraction(b)) <= bound


SCIENTIFIC = re.compile(r"([+-]?(?:\d+\.?\d*|\.\d+))(?:\\times|\\cdot|\*)10\^(?:\{([+-]?\d+)\}|(\d))")


def _plain(text: str) -> str:
    """`6.02 \\times 10^{23}` as `6.02e23`; other text without spaces."""
    text = text.replace(" ", "")
    match = SCIENTIFIC.fullmatch(text)
    return f"{match.group(1)}e{match.group(2) or match.group(3)}" if match else text


def is_decimal_text(text: str) -> bool:
    """A plain number written with a decimal point, alone or with an exponent (`0.5`, `.5`, `5.`, `1.0e-7`,
    `6.02 \\times 10^{23}`). Without a point it is exact: `1e-7` and `3 \\times 10^5` are 10^-7 and 300000."""
    text = _plain(text)
    return bool("." in text and DECIMAL_TEXT.fullmatch(text) and re.search(r"\d", text))


def half_unit(text: str) -> Fraction:
    """Half a unit of the last written digit of a decimal: `0.33` -> 0.005, `2.50` -> 0.005, `1.5e-3` -> 0.00005."""
    match = DECIMAL_TEXT.fullmatch(_plain(text))
    places = len(match.group(2)) - int(match.group(3) or 0)
    return Fraction(1, 2) * Fraction(10) ** -places


def significant_digits(text: str) -> int:
    """Digits of a decimal from its first non-zero one: `0.0833` -> 3, `2.50` -> 3, `1000.0` -> 5."""
    match = DECIMAL_TEXT.fullmatch(_plain(text))
    return len((match.group(1) + match.group(2)).lstrip("0"))


def never_ends(value: Fraction) -> bool:
    """Whether the decimal expansion of a fraction goes on for ever: its reduced denominator has a prime factor other
    than 2 and 5 (`1/3`, `1/7`, `5/6`; not `1/8`, `11/20`)."""
    denominator = value.denominator
    for prime in (2, 5):
        while denominator % prime == 0:
            denominator //= prime
    return denominator != 1


@dataclass(frozen=True)
class Precision:
    """The differences that the rules above accept between two values that are not equal: |pred - ref| < `bound`,
    or <= `bound` when not `strict`."""

    bound: Fraction
    strict: bool

    def admits(self, size) -> bool:
        """`size`: |pred - ref|, a Fraction or any number that compares with one (a sympy number)."""
        return bool(size < self.bound) if self.strict else bool(size <= self.bound)


def written_precision(
    pred_text: str | None,
    ref_text: str | None,
    ref_exact: bool,
    ref_integer: bool = False,
    pred_never_ends: bool = False,
) -> Precision | None:
    """The differences the rules above accept when the values differ; None when they must be equal.

    `pred_never_ends`: the prediction is an exact value whose decimal expansion does not end (`never_ends` of a
    fraction; in `expressions` also a value sympy does not reduce to a fraction, such as `\\pi`).

    A decimal reference accepts, strictly inside half a unit of its last digit, a prediction that never ends, or
    any prediction when the reference has `MIN_SIGNIFICANT_DIGITS` significant digits or more.
    An exact reference accepts a decimal prediction correctly rounded (<= half a unit of the prediction's last
    digit) with `MIN_SIGNIFICANT_DIGITS` significant digits; an integer reference is matched exactly, and a decimal
    prediction must write at least the units digit: with a positive exponent (`1.234 \\times 10^{5}`) half a unit
    of its last written digit is 1 or more, so it would accept a different integer."""
    if ref_text is not None and is_decimal_text(ref_text):
        if pred_never_ends or significant_digits(ref_text) >= MIN_SIGNIFICANT_DIGITS:
            return Precision(half_unit(ref_text), strict=True)
        return None
    if ref_exact and not ref_integer and pred_text is not None and is_decimal_text(pred_text):
        bound = half_unit(pred_text)
        if significant_digits(pred_text) >= MIN_SIGNIFICANT_DIGITS and bound < 1:
            return Precision(bound, strict=False)
    return None


def plain_numbers_equal(pred: Fraction, ref: Fraction, pred_text: str, ref_text: str, tol: Tolerance) -> bool:
    """Two plain numbers (`plain_number` values with their texts): the rules of this module, in exact arithmetic."""
    if pred == ref:
        return True
    if re.search(r"[.eE]", pred_text + ref_text) and tol.accepts(pred, ref):
        return True  # the extra tolerance never applies between two integers or fractions
    precision = written_precision(
        pred_text, ref_text, ref_exact=True, ref_integer=ref.denominator == 1, pred_never_ends=never_ends(pred)
    )
    return precision is not None and precision.admits(abs(pred - ref))
