"""Values of two expressions at seeded random points over the whole real line, in `DIGITS`-digit arithmetic.

Every variable takes every sign and scale of `SCALES` (near 0, below 1, above 1, large, up to 10^6) once in `POINTS`
points (exact binary fractions, so that every working precision sees the same point), in a shuffled order per variable, so the variables also meet in varied combinations. Each side is evaluated bottom-up
in its real domain with mpmath: an even root of a negative number, a logarithm of a non-positive one, a division by 0,
`\\arcsin 2` are outside it, while odd roots of negatives are real (`\\sqrt[3]{-8}` is -2, as a reader means it).
Expressions with the imaginary unit are evaluated by sympy with its principal branches instead.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from typing import NamedTuple

import mpmath
import sympy

from .refute import refuting_points

DIGITS = 40  # working precision of every evaluation, in decimal digits
HIGH_DIGITS = 2 * DIGITS  # the second precision: a true identity's difference shrinks there, a real one does not
AGREEMENT = mpmath.mpf("1e-30")  # two values agree within this, relative to max(1, |a|, |b|, largest intermediate)
# near 0, below 1, above 1, large, very large, up to 10^6
SCALES = [(0.001, 0.05), (0.1, 0.95), (1.1, 4.0), (5.0, 30.0), (40.0, 2000.0), (2500.0, 10.0**6)]
POINTS = 2 * len(SCALES)  # each sign and scale once per variable


class Undefined(Exception):
    """The point is outside the expression's (real) domain."""


class Unevaluable(Exception):
    """The expression has no numeric value at the point (an undefined function `f(x)`, an unevaluated sum)."""


class Sample(NamedTuple):
    """Both sides at one point (None where a side is undefined), the largest intermediate value, the point, and
    whether it is a refuting point (`refute`), where a hole of one side is no verdict."""

    pred: mpmath.mpf | mpmath.mpc | None
    ref: mpmath.mpf | mpmath.mpc | None
    scale: mpmath.mpf
    point: dict
    refuting: bool


def sample_values(pred: sympy.Expr, ref: sympy.Expr, refute: bool = False) -> Iterator[Sample]:
    """Both sides at each random point, then (`refute`) at the refuting points of `refute`. Raises Unevaluable
    when a side cannot be evaluated at all."""
    symbols = sorted(pred.free_symbols | ref.free_symbols, key=str)
    complex_mode = pred.has(sympy.I) or ref.has(sympy.I)
    constants: dict = {}
    chosen = [(p, False) for p in points(symbols)]
    if refute:
        chosen += [(p, True) for p in refuting_points(symbols, (pred, ref))]
    with mpmath.workdps(DIGITS):
        for point, refuting in chosen:
            sizes = [mpmath.mpf(0)]
            values = [_value_or_none(side, point, sizes, constants, complex_mode) for side in (pred, ref)]
            yield Sample(values[0], values[1], max(sizes), point, refuting)


def difference_is_real(difference: sympy.Expr, point: dict, complex_mode: bool) -> bool:
    """Whether `difference` (pred - ref as one expression) is non-zero at `point` at both working precisions by the
    same amount: a true identity's rounding noise shrinks about 10^40-fold from `DIGITS` to `HIGH_DIGITS`, while a
    real difference (`10^{-35}`, a bump far below the agreement tolerance) stays what it is."""
    values, sizes = [], [mpmath.mpf(0)]
    for digits in (DIGITS, HIGH_DIGITS):
        with mpmath.workdps(digits):
            value = _value_or_none(difference, point, sizes, {}, complex_mode)
            if value is None:
                return False
            values.append(value)
    low, high = values
    if high == 0 or abs(high - low) > abs(high) / 2:
        return False
    # The same value at both precisions can also be a cancellation beyond both (`\cosh^2 x - \sinh^2 x - 1` at
    # x = 100 is -1 at 40 and at 80 digits): only a difference above the rounding of the largest intermediate counts.
    return not (high == low and abs(high) <= max(sizes) * mpmath.mpf(10) ** (5 - HIGH_DIGITS))


def values_agree(a: mpmath.mpf | mpmath.mpc, b: mpmath.mpf | mpmath.mpc, scale: mpmath.mpf = 1) -> bool:
    """Equal within `AGREEMENT`, relative to the largest of 1, |a|, |b| and `scale` (the largest intermediate value of
    the evaluation: `\\cosh^2 x - \\sinh^2 x` at x = 30 cancels 26 digits, well within `DIGITS`)."""
    with mpmath.workdps(DIGITS):
        return bool(abs(a - b) <= AGREEMENT * max(1, abs(a), abs(b), scale))


def points(symbols: list[sympy.Symbol]) -> list[dict]:
    """`POINTS` points, seeded: the same answer always gets the same verdict."""
    rng = random.Random(0)
    columns = []
    for _ in symbols:
        kinds = [(sign, scale) for sign in (-1, 1) for scale in SCALES]
        rng.shuffle(kinds)
        column = []
        for i in range(POINTS):
            sign, (low, high) = kinds[i % len(kinds)]
            column.append(mpmath.mpf(sign * round(rng.uniform(low, high) * 2**30)) / 2**30)  # exact in binary
        columns.append(column)
    return [{s: column[i] for s, column in zip(symbols, columns)} for i in range(POINTS)]


def _value_or_none(expr: sympy.Expr, point: dict, sizes: list, constants: dict, complex_mode: bool):
    try:
        return _complex_value(expr, point) if complex_mode else _real_value(expr, point, sizes, constants)
    except Undefined:
        return None
    except Unevaluable:
        raise
    except (ArithmeticError, ValueError):  # a division by zero, a math domain error: undefined at this point
        return None


def _to_mpmath(value: sympy.Expr) -> mpmath.mpf | mpmath.mpc:
    """A numeric sympy value at `DIGITS` digits, as mpmath; Undefined for infinities and nan."""
    if value.has(sympy.zoo, sympy.nan, sympy.oo, -sympy.oo):
        raise Undefined
    if not value.is_number:
        raise Unevaluable
    try:
        number = value.evalf(mpmath.mp.dps)._to_mpmath(mpmath.mp.prec + 8)
    except (TypeError, ValueError, AttributeError):
        raise Unevaluable from None
    if not mpmath.isfinite(number):
        raise Undefined
    return number


def _real(number: mpmath.mpf | mpmath.mpc) -> mpmath.mpf:
    if isinstance(number, mpmath.mpc):
        if number.imag != 0:
            raise Undefined  # not real: outside the real domain
        number = number.real
    if not mpmath.isfinite(number):
        raise Undefined
    return number


def _real_value(expr: sympy.Expr, point: dict, sizes: list, constants: dict) -> mpmath.mpf:
    """`expr` at `point` in real arithmetic; the size of every intermediate value goes to `sizes`, and the values of
    constant subexpressions are kept in `constants` for the next points."""
    if expr.is_Symbol:
        if expr in point:
            return point[expr]
        raise Unevaluable
    if not expr.free_symbols:
        if expr not in constants:
            try:
                constants[expr] = _real(_to_mpmath(expr))
            except Undefined:
                constants[expr] = None
        value = constants[expr]
        if value is None:
            raise Undefined
    elif isinstance(expr, (sympy.Add, sympy.Mul, sympy.Pow)) or type(expr) in REAL_FUNCTIONS:
        args = [_real_value(arg, point, sizes, constants) for arg in expr.args]
        if isinstance(expr, sympy.Add):
            value = mpmath.fsum(args)
        elif isinstance(expr, sympy.Mul):
            value = mpmath.fprod(args)
        elif isinstance(expr, sympy.Pow):
            value = _real_power(expr.exp, *args)
        else:
            value = _real(REAL_FUNCTIONS[type(expr)](*args))
    else:  # anything else (a sum, an integral, a special function): sympy evaluates the node at the point
        numbers = {s: sympy.Float(v, mpmath.mp.dps) for s, v in point.items()}
        value = _real(_to_mpmath(expr.xreplace(numbers)))
    sizes.append(abs(value))
    return value


def _real_power(exponent: sympy.Expr, base: mpmath.mpf, power: mpmath.mpf) -> mpmath.mpf:
    """Powers as a reader means them: odd roots of negatives are real, even roots of negatives are undefined."""
    if base == 0:
        if power > 0:
            return mpmath.mpf(0)
        raise Undefined
    if base > 0:
        return _real(mpmath.power(base, power))
    if power == int(power):
        return _real(mpmath.power(base, int(power)))
    if exponent.is_Rational and exponent.q % 2 == 1:
        return (-1) ** int(exponent.p) * _real(mpmath.power(-base, power))
    raise Undefined


def _positive(function: Callable) -> Callable:
    def restricted(value):
        if value <= 0:
            raise Undefined
        return function(value)

    return restricted


def _within_one(function: Callable) -> Callable:
    def restricted(value):
        if abs(value) > 1:
            raise Undefined
        return function(value)

    return restricted


def _nonzero(function: Callable) -> Callable:
    def restricted(value):
        result = function(value)
        if not mpmath.isfinite(result):
            raise Undefined
        return result

    return restricted


def _gamma(value):
    if value <= 0 and value == int(value):
        raise Undefined
    return mpmath.gamma(value)


REAL_FUNCTIONS: dict[type, Callable] = {
    sympy.sin: mpmath.sin,
    sympy.cos: mpmath.cos,
    sympy.tan: _nonzero(mpmath.tan),
    sympy.cot: _nonzero(mpmath.cot),
    sympy.sec: _nonzero(mpmath.sec),
    sympy.csc: _nonzero(mpmath.csc),
    sympy.asin: _within_one(mpmath.asin),
    sympy.acos: _within_one(mpmath.acos),
    sympy.atan: mpmath.atan,
    sympy.sinh: mpmath.sinh,
    sympy.cosh: mpmath.cosh,
    sympy.tanh: mpmath.tanh,
    sympy.asinh: mpmath.asinh,
    sympy.exp: mpmath.exp,
    sympy.log: _positive(mpmath.log),
    sympy.Abs: abs,
    sympy.sign: mpmath.sign,
    sympy.floor: mpmath.floor,
    sympy.ceiling: mpmath.ceil,
    sympy.Min: min,
    sympy.Max: max,
    sympy.gamma: _gamma,
    sympy.factorial: lambda value: _gamma(value + 1),
}


def _complex_value(expr: sympy.Expr, point: dict) -> mpmath.mpf | mpmath.mpc:
    """`expr` at `point` with sympy's principal branches (its evalf raises precision where terms cancel), at the
    working precision of mpmath."""
    return _to_mpmath(expr.xreplace({s: sympy.Float(v, mpmath.mp.dps) for s, v in point.items()}))
