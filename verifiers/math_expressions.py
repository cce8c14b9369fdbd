"""Whether two sympy values (numbers, expressions, matrices) are equal; used for leaves and for relations.

- Numbers follow `math_numbers`: exact numbers exactly (an exact difference, or one evaluated at `DIGITS` digits that
  is not zero), decimals at the precision they are written to.
- Expressions: symbols are real. The difference is first simplified the cheap way (sympy's evaluation on
  construction); then both sides are evaluated at seeded random points over the whole real line (negative and
  positive, near 0, below and above 1 in size, every variable at once) with `DIGITS`-digit arithmetic, each in its
  real domain: a square root of a negative, a logarithm of a non-positive number, a division by 0 leave the domain,
  while odd roots of negatives stay real (`\\sqrt[3]{-8}` is -2, as a reader means it). Where both sides are defined
  they must agree; a point where one side is defined and the other is not is a different answer (`2\\ln x` is not
  `2\\ln|x|`), and isolated points (the hole of `(x^2-1)/(x-1)`) are never drawn. `sympy.simplify` decides only when
  no point can be evaluated. Expressions with the imaginary unit are evaluated with sympy's principal branches.
"""

from __future__ import annotations

import random
from fractions import Fraction

import sympy
from sympy import MatrixBase
from sympy.core.evalf import PrecisionExhausted

from .math_numbers import Tolerance, written_precision

DIGITS = 40  # working precision of every numeric evaluation, in decimal digits
AGREEMENT = sympy.Float("1e-25", DIGITS)  # two values agree within this, relative to max(1, |a|, |b|)
MAX_CANCELLATION_DIGITS = 400  # an exact difference indistinguishable from 0 at this many digits counts as 0
POINTS = 10  # evaluation points per comparison
AGREEING_POINTS = 4  # points inside the common domain needed for a verdict "equal"
SCALES = [(0.001, 0.05), (0.1, 0.95), (1.1, 4.0), (5.0, 30.0)]  # near 0, below 1, above 1, large


class _Undefined(Exception):
    """The point is outside the expression's real domain."""


class _Unevaluable(Exception):
    """The expression has no numeric value at any point (an undefined function `f(x)`, an unevaluated sum)."""


def expressions_equal(
    pred: sympy.Basic, ref: sympy.Basic, tol: Tolerance, pred_text: str | None = None, ref_text: str | None = None
) -> bool:
    """`pred_text` / `ref_text`: the written form of a plain number, which decides the precision of a decimal."""
    if isinstance(pred, MatrixBase) or isinstance(ref, MatrixBase):
        return _matrices_equal(pred, ref, tol)
    if not (isinstance(pred, sympy.Expr) and isinstance(ref, sympy.Expr)):
        return pred == ref
    if _undefined(pred) or _undefined(ref):  # 12:00 parses as 12/0: zoo == zoo must not make 12:00 equal 1:00
        return False
    if pred == ref:
        return True
    pred, ref = _done(pred), _done(ref)
    if not (pred.free_symbols or ref.free_symbols):
        if pred.is_Rational and ref.is_Rational:
            tol = Tolerance()  # the extra tolerance never applies between two integers or fractions
        ref_exact = not ref.has(sympy.Float)
        pred_text = pred_text or _float_text(pred)
        ref_text = ref_text or _float_text(ref)
        pred, ref = (_real_roots(rebuilt(exact(side))) for side in (pred, ref))
        return _constants_equal(pred, ref, tol, written_precision(pred_text, ref_text, ref_exact))
    return _functions_equal(exact(pred), exact(ref))


UNEVALUATED = (sympy.Sum, sympy.Product, sympy.Limit, sympy.Integral, sympy.Derivative)


def _done(expr: sympy.Expr) -> sympy.Expr:
    """Sums, products, limits, integrals and derivatives worked out (`\\sum_{k=0}^{n} k` is `n^2/2 + n/2`), so that
    they can be compared exactly and evaluated at points; left as written where sympy cannot."""
    if not expr.has(*UNEVALUATED):
        return expr
    try:
        return expr.doit()
    except Exception:  # sympy raises many types on exotic input
        return expr


def exact(expr: sympy.Basic) -> sympy.Basic:
    """Decimals inside a formula read as the exact numbers they write: `10\\sqrt{10.5}` is `10\\sqrt{21/2}`."""
    floats = expr.atoms(sympy.Float)
    return expr.xreplace({f: sympy.Rational(_float_text(f)) for f in floats}) if floats else expr


def _real_roots(expr: sympy.Expr) -> sympy.Expr:
    """Odd roots of negative numbers as a reader means them, real: `\\sqrt[3]{-8}` is -2 (sympy's principal root is
    1 + 1.73i). Expressions with the imaginary unit keep sympy's principal roots."""
    if expr.has(sympy.I):
        return expr
    odd_roots = {
        node: (-1) ** node.exp.p * (-node.base) ** node.exp
        for node in expr.atoms(sympy.Pow)
        if node.base.is_negative and node.exp.is_Rational and not node.exp.is_Integer and node.exp.q % 2 == 1
    }
    return expr.xreplace(odd_roots) if odd_roots else expr


def _float_text(expr: sympy.Basic) -> str | None:
    """The shortest decimal of a bare sympy Float (`0.330000000000000` -> `0.33`), else None."""
    if not isinstance(expr, sympy.Float):
        return None
    mantissa, _, exponent = str(expr).partition("e")
    if "." in mantissa:
        mantissa = mantissa.rstrip("0").rstrip(".") or "0"
    return mantissa + (f"e{exponent}" if exponent else "")


def _constants_equal(pred: sympy.Expr, ref: sympy.Expr, tol: Tolerance, precision: Fraction | None) -> bool:
    """Exactly equal, or within `precision` (the written precision of a decimal) or the user's tolerance."""
    difference = pred - ref
    if difference == 0:
        return True
    if difference.is_Rational:
        size = abs(Fraction(difference.p, difference.q))
        return (precision is not None and size <= precision) or _tolerated(pred, ref, tol)
    try:  # strict: raises when the difference cannot be told from 0 even at MAX_CANCELLATION_DIGITS digits
        size = sympy.Abs(difference.evalf(DIGITS, strict=True, maxn=MAX_CANCELLATION_DIGITS)).evalf(DIGITS)
    except PrecisionExhausted:
        return True
    except Exception:  # sympy raises many types on exotic input; an answer that cannot be evaluated is not equal
        return False
    if not size.is_Number:
        return False
    if precision is not None and size <= sympy.Rational(precision.numerator, precision.denominator):
        return True
    return _tolerated(pred, ref, tol)


def _tolerated(pred: sympy.Expr, ref: sympy.Expr, tol: Tolerance) -> bool:
    if not (tol.rel_tol or tol.abs_tol):
        return False
    try:
        a, b = complex(pred.evalf(DIGITS)), complex(ref.evalf(DIGITS))
    except (TypeError, ValueError):
        return False
    return abs(a - b) <= max(tol.rel_tol * max(abs(a), abs(b)), tol.abs_tol)


def _functions_equal(pred: sympy.Expr, ref: sympy.Expr) -> bool:
    symbols = pred.free_symbols | ref.free_symbols
    real = {s: sympy.Symbol(s.name, real=True) for s in symbols if isinstance(s, sympy.Symbol)}
    pred, ref = rebuilt(pred.xreplace(real)), rebuilt(ref.xreplace(real))  # sympy simplifies sqrt(x^2) to |x| here
    if pred == ref or pred - ref == 0:
        return True
    verdict = _agree_at_points(pred, ref)
    if verdict is not None:
        return verdict
    try:
        return sympy.simplify(pred - ref) == 0
    except Exception:
        return False


def _agree_at_points(pred: sympy.Expr, ref: sympy.Expr) -> bool | None:
    """False at the first point where the sides differ (in value, or one defined and the other not); True when they
    agree at `AGREEING_POINTS` points or more; None when they cannot be evaluated."""
    agreeing = 0
    try:
        for a, b, scale in sample_values(pred, ref):
            if a is None and b is None:
                continue
            if a is None or b is None or not values_agree(a, b, scale):
                return False
            agreeing += 1
    except _Unevaluable:
        return None
    return True if agreeing >= AGREEING_POINTS else None


def sample_values(pred: sympy.Expr, ref: sympy.Expr):
    """(pred value, ref value, largest intermediate value) at each of `POINTS` seeded points; a value is None where
    its side is undefined."""
    symbols = sorted(pred.free_symbols | ref.free_symbols, key=str)
    complex_mode = pred.has(sympy.I) or ref.has(sympy.I)
    evaluate = _complex_value if complex_mode else _real_value
    for point in _points(symbols):
        sizes = [0]
        values = [_value_or_none(evaluate, side, point, sizes) for side in (pred, ref)]
        yield values[0], values[1], max(sizes)


def _value_or_none(evaluate, expr: sympy.Expr, point: dict, sizes: list) -> sympy.Expr | None:
    try:
        return evaluate(expr, point, sizes)
    except _Undefined:
        return None
    except _Unevaluable:
        raise
    except (ArithmeticError, TypeError, ValueError, RecursionError):
        return None


def _points(symbols: list[sympy.Symbol]) -> list[dict]:
    """`POINTS` points; each variable takes every sign and scale of `SCALES` in a shuffled order, so the variables
    meet in varied combinations. Seeded: the same answer gets the same verdict."""
    rng = random.Random(0)
    columns = []
    for _ in symbols:
        kinds = [(sign, scale) for sign in (-1, 1) for scale in SCALES]
        rng.shuffle(kinds)
        column = []
        for i in range(POINTS):
            sign, (low, high) = kinds[i % len(kinds)]
            column.append(sympy.Float(sign * sympy.Rational(round(rng.uniform(low, high) * 10**6), 10**6), DIGITS))
        columns.append(column)
    return [{s: column[i] for s, column in zip(symbols, columns)} for i in range(POINTS)]


def values_agree(a: sympy.Expr, b: sympy.Expr, scale: sympy.Float | int = 1) -> bool:
    """Equal within `AGREEMENT`, relative to the largest of 1, |a|, |b| and `scale` (the largest intermediate value of
    the evaluation: `\\cosh^2 x - \\sinh^2 x` at x = 30 cancels 26 digits, well within `DIGITS`)."""
    return bool(abs(a - b) <= AGREEMENT * max(sympy.Float(1), abs(a), abs(b), scale))


def _checked_real(value: sympy.Expr) -> sympy.Float:
    if value.has(sympy.zoo, sympy.nan, sympy.oo, -sympy.oo):
        raise _Undefined
    if not value.is_number:
        raise _Unevaluable
    value = value.evalf(DIGITS)
    real, imag = value.as_real_imag()
    if imag != 0:
        raise _Undefined  # not real: outside the real domain
    if not real.is_Float and not real.is_Rational:
        raise _Unevaluable
    return sympy.Float(real, DIGITS)


def _real_value(expr: sympy.Expr, point: dict, sizes: list) -> sympy.Float:
    """`expr` at `point`, evaluated bottom-up in real arithmetic (raises _Undefined outside the real domain); the size
    of every intermediate value is appended to `sizes`."""
    value = _real_node(expr, point, sizes)
    sizes.append(abs(value))
    return value


def _real_node(expr: sympy.Expr, point: dict, sizes: list) -> sympy.Float:
    if expr.is_Symbol:
        if expr in point:
            return point[expr]
        raise _Unevaluable
    if not expr.free_symbols:
        return _checked_real(expr)
    if not isinstance(expr, (sympy.Add, sympy.Mul, sympy.Pow, sympy.Function)) or getattr(expr, "bound_symbols", ()):
        return _checked_real(expr.xreplace(point))
    args = [_real_value(arg, point, sizes) for arg in expr.args]
    if isinstance(expr, sympy.Pow):
        return _real_power(expr.exp, *args)
    return _checked_real(expr.func(*args))


def _real_power(exponent: sympy.Expr, base: sympy.Float, power: sympy.Float) -> sympy.Float:
    """Powers as a reader means them: odd roots of negatives are real, even roots of negatives are undefined."""
    if base == 0:
        if power > 0:
            return sympy.Float(0, DIGITS)
        raise _Undefined
    if base > 0:
        return _checked_real(base**power)
    if power == int(power):
        return _checked_real(base ** int(power))
    if exponent.is_Rational and exponent.q % 2 == 1:
        return _checked_real((-1) ** exponent.p * (-base) ** power)
    raise _Undefined


def _complex_value(expr: sympy.Expr, point: dict, sizes: list) -> sympy.Expr:
    """`expr` at `point` with sympy's principal branches (its evalf raises precision where terms cancel)."""
    value = expr.xreplace(point).evalf(DIGITS)
    if value.has(sympy.zoo, sympy.nan, sympy.oo, -sympy.oo):
        raise _Undefined
    if not value.is_number:
        raise _Unevaluable
    return value


def _undefined(expr: sympy.Expr) -> bool:
    return expr.has(sympy.zoo, sympy.nan)


def _matrices_equal(a: object, b: object, tol: Tolerance) -> bool:
    if not (isinstance(a, MatrixBase) and isinstance(b, MatrixBase)) or a.shape != b.shape:
        return False
    return all(expressions_equal(x, y, tol) for x, y in zip(a, b))


def rebuilt(expr: sympy.Basic) -> sympy.Basic:
    """`expr` with every node built again, evaluated: the parser leaves some products unevaluated, in the order written,
    so `F_{n-k-1} F_k` and `F_k F_{n-k-1}` differ structurally until rebuilt. Nothing is computed beyond canonical
    ordering and the evaluation sympy does on construction."""
    if not expr.args or not isinstance(expr, sympy.Expr):
        return expr
    return expr.func(*(rebuilt(arg) for arg in expr.args))


def constant_ratio(a: sympy.Expr, b: sympy.Expr) -> float | None:
    """The constant c with a = c * b: the same ratio at every sampled point (simplification only when sampling fails)."""
    ratios = []
    try:
        for va, vb, _ in sample_values(a, b):
            if va is None or vb is None or vb == 0 or not (va.is_real and vb.is_real):
                continue
            ratios.append(va / vb)
    except _Unevaluable:
        ratios = []
    if len(ratios) >= AGREEING_POINTS - 1:
        return float(ratios[0]) if all(values_agree(r, ratios[0]) for r in ratios) else None
    try:
        ratio = sympy.simplify(a / b)
    except Exception:
        return None
    return float(ratio) if not ratio.free_symbols and ratio.is_finite and ratio.is_real else None
