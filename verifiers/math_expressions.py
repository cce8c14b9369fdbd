"""Whether two sympy values (numbers, expressions, matrices) are equal; used for leaves and for relations."""

from __future__ import annotations

import random
from dataclasses import dataclass

import sympy
from sympy import MatrixBase

SAMPLE_POINTS = 3


@dataclass(frozen=True)
class Tolerance:
    rel_tol: float = 1e-4
    abs_tol: float = 1e-12


def numbers_close(a: complex | float, b: complex | float, tol: Tolerance) -> bool:
    return abs(a - b) <= max(tol.rel_tol * max(abs(a), abs(b)), tol.abs_tol)


def numeric_value(expr: sympy.Basic) -> complex | None:
    try:
        value = complex(expr.evalf(30))
    except (TypeError, ValueError, AttributeError):
        return None
    return None if value != value else value  # NaN


def expressions_equal(a: sympy.Basic, b: sympy.Basic, tol: Tolerance) -> bool:
    if isinstance(a, MatrixBase) or isinstance(b, MatrixBase):
        return _matrices_equal(a, b, tol)
    if not (isinstance(a, sympy.Expr) and isinstance(b, sympy.Expr)):
        return a == b
    if _undefined(a) or _undefined(b):  # 12:00 parses as 12/0: zoo == zoo must not make 12:00 equal 1:00
        return False
    if a == b:
        return True
    if a.is_Rational and b.is_Rational:  # integers and fractions are compared exactly
        return False
    if a.free_symbols != b.free_symbols:
        return False
    if not a.free_symbols:
        va, vb = numeric_value(a), numeric_value(b)
        return va is not None and vb is not None and numbers_close(va, vb, tol)
    return rebuilt(a) == rebuilt(b) or _symbolic_equal(a, b, tol)


def _symbolic_equal(a: sympy.Expr, b: sympy.Expr, tol: Tolerance) -> bool:
    """Agree at random points (a cheap identity test), confirmed by simplification when sampling is impossible."""
    symbols = sorted(a.free_symbols, key=str)
    rng = random.Random(0)
    sampled = 0
    for _ in range(SAMPLE_POINTS * 2):
        point = {s: sympy.Float(rng.uniform(0.3, 2.7)) for s in symbols}
        va, vb = numeric_value(a.xreplace(point)), numeric_value(b.xreplace(point))
        if va is None or vb is None:
            continue
        if not numbers_close(va, vb, Tolerance(max(tol.rel_tol, 1e-9), 1e-9)):
            return False
        sampled += 1
        if sampled >= SAMPLE_POINTS:
            return True
    try:
        return sympy.simplify(a - b) == 0
    except Exception:
        return False


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
    """The constant c with a = c * b, found by sampling random points (simplification only when sampling fails)."""
    symbols = sorted(a.free_symbols, key=str)
    rng = random.Random(0)
    ratios = []
    for _ in range(SAMPLE_POINTS * 2):
        point = {s: sympy.Float(rng.uniform(0.3, 2.7)) for s in symbols}
        va, vb = numeric_value(a.xreplace(point)), numeric_value(b.xreplace(point))
        if va is None or vb is None or vb == 0 or abs(va.imag) > 1e-12 or abs(vb.imag) > 1e-12:
            continue
        ratios.append(va.real / vb.real)
        if len(ratios) == SAMPLE_POINTS:
            close = all(numbers_close(r, ratios[0], Tolerance(1e-9, 1e-12)) for r in ratios)
            return ratios[0] if close else None
    try:
        ratio = sympy.simplify(a / b)
    except Exception:
        return None
    return float(ratio) if not ratio.free_symbols and ratio.is_finite and ratio.is_real else None
