"""Whether two sympy values (numbers, expressions, matrices) are equal; used for leaves and for relations.

- Numbers follow `numbers`: exact numbers exactly (an exact difference, or one evaluated by sympy at `DIGITS`
  digits that is not zero), decimals at the precision they are written to. Against a decimal reference, a value
  sympy does not reduce to a fraction (`\\pi`, `\\sqrt{2}`) counts, like `1/3`, as one whose decimals never end.
- Expressions: symbols are real. The cheap symbolic proof comes first (the difference, rebuilt with real symbols,
  is 0 on construction); then both sides are evaluated at the random points of `points` and at the refuting
  points of `refute`, each in its real domain. Where both are defined they must agree, and their difference must
  not keep the same non-zero value at two working precisions; a random point where one side is defined and the other
  is not is a different answer (`2\\ln x` is not `2\\ln|x|`), while at a refuting point it may be a hole (that of
  `(x^2-1)/(x-1)` at 1) and decides nothing.
  When no point can be evaluated (undefined functions), one exact evaluation at a rational point refutes a
  difference that is a rational function (`nonzero_at_exact_point`); only what it cannot refute goes to `sympy.simplify`.
"""

from __future__ import annotations

import random
from fractions import Fraction

import mpmath
import sympy
from sympy import MatrixBase
from sympy.core.evalf import PrecisionExhausted
from sympy.core.function import AppliedUndef

from .numbers import Precision, Tolerance, never_ends, written_precision
from .points import DIGITS, Unevaluable, difference_is_real, sample_values, values_agree
from .refute import decline, has_nonsmooth, sampling_decides, symbolically_zero

MAX_CANCELLATION_DIGITS = 400  # an exact difference indistinguishable from 0 at this many digits counts as 0
AGREEING_POINTS = 4  # points inside the common domain needed for a verdict "equal"


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
        precision = written_precision(
            pred_text,
            ref_text,
            ref_exact,
            ref_integer=ref.is_Integer is True,
            pred_never_ends=not ref_exact and _never_ends(pred),  # asked only against a decimal reference
        )
        return _constants_equal(pred, ref, tol, precision)
    return _functions_equal(exact(pred), exact(ref))


UNEVALUATED = (sympy.Sum, sympy.Product, sympy.Limit, sympy.Integral, sympy.Derivative)


def _done(expr: sympy.Expr) -> sympy.Expr:
    """Sums, products, limits, integrals and derivatives worked out (`\\sum_{k=0}^{n} k` is `n^2/2 + n/2`), so that
    they can be compared exactly and evaluated at points; left as written where sympy cannot."""
    if not expr.has(*UNEVALUATED):
        return expr
    try:
        return expr.doit()
    except (NotImplementedError, ValueError, ArithmeticError):  # sympy's "cannot": keep what was written
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


def _never_ends(value: sympy.Expr) -> bool:
    """Whether an exact real constant has a decimal expansion that does not end: a fraction by `numbers.never_ends`,
    and any value sympy does not show to be a fraction (`\\pi`, `\\sqrt{2}`, `\\log_2 9`). Decimals inside the value
    were made exact by `exact` before: `0.1\\pi` is `\\pi/10`, `0.5 + 0.04` is `27/50`."""
    if value.is_Rational:
        return never_ends(Fraction(value.p, value.q))
    return value.is_rational is not True and not value.has(sympy.I, sympy.Float)


def _constants_equal(pred: sympy.Expr, ref: sympy.Expr, tol: Tolerance, precision: Precision | None) -> bool:
    """Exactly equal, or within `precision` (that of a written decimal, `numbers.written_precision`) or the user's
    tolerance."""
    difference = pred - ref
    if difference == 0:
        return True
    if difference.is_Rational:
        size = abs(Fraction(difference.p, difference.q))
        return (precision is not None and precision.admits(size)) or _tolerated(pred, ref, tol)
    try:  # strict: raises when the difference cannot be told from 0 even at MAX_CANCELLATION_DIGITS digits
        size = sympy.Abs(difference.evalf(DIGITS, strict=True, maxn=MAX_CANCELLATION_DIGITS)).evalf(DIGITS)
    except PrecisionExhausted:
        return True
    except (NotImplementedError, ArithmeticError):  # no value (sympy cannot evaluate it, or it overflows): not equal
        return False
    if not size.is_Number:
        return False
    if precision is not None and precision.admits(size):
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
    if verdict is True and has_nonsmooth((pred, ref)) and not sampling_decides((pred, ref)):
        # A non-smooth piece can confine a difference to a window no point falls in: only a proof pays.
        return symbolically_zero(pred - ref) or decline()
    if verdict is not None:
        return verdict
    if nonzero_at_exact_point(pred - ref):  # what simplify would find, without simplify (~5-20 ms each)
        return False
    try:
        return sympy.simplify(pred - ref) == 0
    except NotImplementedError:  # sympy's "cannot": no proof that they are equal
        return False


def nonzero_at_exact_point(difference: sympy.Expr) -> bool:
    """Whether `difference` is shown not to be identically zero by one exact evaluation, so that `simplify` (which
    only rewrites an expression into an equal one) cannot reduce it to 0. For the differences that sampling cannot
    evaluate: undefined functions (`f(x)`, and letter salad such as `Rational(1,3)` read as `R a t i o n a l(1, 3)`).

    Every variable takes a fixed rational value; then every undefined function, applied to rational arguments only,
    takes its own rational value (some function `f` has those values there, a polynomial through them). The result
    must be an exact number `a + b i` with rational a, b: it is if `difference` is a rational function of the
    variables and the applied functions; that function, defined and non-zero at one point, is not zero, under any
    reading of the functions. Anything else (a root, `\\sin`, a pole at the point) proves nothing: False, and the
    caller goes on to simplify.
    """
    symbols = sorted(difference.free_symbols, key=str)
    calls = {call: sympy.Dummy() for call in difference.atoms(AppliedUndef)}
    if not all(arg.is_rational_function(*symbols) for call in calls for arg in call.args):
        return False  # `f(\\sin x)`, `f(g(x))`: not a rational function of the variables once f is one
    if not difference.xreplace(calls).is_rational_function(*symbols, *calls.values()):
        return False
    rng = random.Random(0)
    point = {s: sympy.Rational(rng.randrange(1, 10**6), 999_983) for s in symbols}  # 999983 is prime
    at_point = difference.xreplace(point)
    applied = sorted(at_point.atoms(AppliedUndef), key=str)  # `f(x)` and `f(2x)` are two calls unless x = 0
    if not all(arg.is_Rational for call in applied for arg in call.args):
        return False
    value = at_point.xreplace({call: sympy.Rational(rng.randrange(1, 10**6), 999_979) for call in applied})
    if value.free_symbols or value.atoms(sympy.Function) or any(not p.exp.is_Integer for p in value.atoms(sympy.Pow)):
        return False
    real, imaginary = value.as_real_imag()
    return real.is_Rational is True and imaginary.is_Rational is True and (real != 0 or imaginary != 0)


def _agree_at_points(pred: sympy.Expr, ref: sympy.Expr) -> bool | None:
    """False at the first point where the sides differ (in value, at two working precisions, or one defined and the
    other not at a random point); True when they agree at `AGREEING_POINTS` points or more, random and refuting
    (`refute`) alike; None when they cannot be evaluated."""
    agreeing = 0
    difference = rebuilt(pred - ref)
    complex_mode = pred.has(sympy.I) or ref.has(sympy.I)
    try:
        for sample in sample_values(pred, ref, refute=True):
            a, b = sample.pred, sample.ref
            if a is None and b is None:
                continue
            if a is None or b is None:
                if sample.refuting:  # an isolated hole (`(x^2-1)/(x-1)` at 1) is not a different answer
                    continue
                return False
            if not values_agree(a, b, sample.scale) or difference_is_real(difference, sample.point, complex_mode):
                return False
            agreeing += 1
    except Unevaluable:
        return None
    return True if agreeing >= AGREEING_POINTS else None


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
    """The constant c with a = c * b: the same ratio at every sampled point (simplification only when sampling fails).
    With a non-smooth piece the refuting points are sampled too, and where they cannot decide (`sampling_decides`)
    only a ratio sympy simplifies to a constant counts."""
    ratios = []
    nonsmooth = has_nonsmooth((a, b))
    try:
        for va, vb, *_ in sample_values(a, b, refute=nonsmooth):
            if not (isinstance(va, mpmath.mpf) and isinstance(vb, mpmath.mpf)) or vb == 0:
                continue
            ratios.append(va / vb)
    except Unevaluable:
        ratios = []
    if len(ratios) >= AGREEING_POINTS - 1:
        if not all(values_agree(r, ratios[0]) for r in ratios):
            return None
        if not nonsmooth or sampling_decides((exact(a), exact(b))):
            return float(ratios[0])
        ratio = _simplified_ratio(a, b)  # a proven constant ratio, or a verdict declined for want of a proof
        if ratio is None:
            decline()
        return ratio
    return _simplified_ratio(a, b)


def _simplified_ratio(a: sympy.Expr, b: sympy.Expr) -> float | None:
    try:
        ratio = sympy.simplify(a / b)
    except NotImplementedError:  # sympy's "cannot": no constant ratio found
        return None
    return float(ratio) if not ratio.free_symbols and ratio.is_finite and ratio.is_real else None
