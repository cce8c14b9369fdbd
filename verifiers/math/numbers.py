"""How exactly two numbers must agree: exactly, or at the precision a decimal is written to. Pure Python (no sympy),
so the verifier's fast path in the caller's process and the sympy comparison in the workers apply the same rule.

- An exact number (integer of any size, fraction, and in `expressions` surds and expressions in pi or e) is
  compared exactly: `2.0001` is not `2`, `10^{20}+1` is not `10^{20}`, `2^{-60}` is not `0`.
- A reference written as a decimal (`0.33`, `2.50`, `1.5e-3`, `6.02 \\times 10^{23}`; with a decimal point) accepts whatever lies within half a unit of its last
  written digit: `0.33` accepts `1/3`, `0.333` and `0.325`, not `0.3` or `0.336`; `2.50` accepts [2.495, 2.505].
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


def written_precision(
    pred_text: str | None, ref_text: str | None, ref_exact: bool, ref_integer: bool = False
) -> Fraction | None:
    """The largest |pred - ref| that the rules above accept when the values differ; None when they must be equal.

    An integer reference is matched exactly, and a decimal prediction must write at least the units digit: with
    a positive exponent (`1.234 \\times 10^{5}`) half a unit of its last written digit is 1 or more, so it would
    accept a different integer."""
    if ref_text is not None and is_decimal_text(ref_text):
        return half_unit(ref_text)
    if ref_exact and not ref_integer and pred_text is not None and is_decimal_text(pred_text):
        bound = half_unit(pred_text)
        if significant_digits(pred_text) >= MIN_SIGNIFICANT_DIGITS and bound < 1:
            return bound
    return None


def plain_numbers_equal(pred: Fraction, ref: Fraction, pred_text: str, ref_text: str, tol: Tolerance) -> bool:
    """Two plain numbers (`plain_number` values with their texts): the rules of this module, in exact arithmetic."""
    if pred == ref:
        return True
    if re.search(r"[.eE]", pred_text + ref_text) and tol.accepts(pred, ref):
        return True  # the extra tolerance never applies between two integers or fractions
    bound = written_precision(pred_text, ref_text, ref_exact=True, ref_integer=ref.denominator == 1)
    return bound is not None and abs(pred - ref) <= bound
