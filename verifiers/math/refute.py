"""Points chosen to refute a sampled equality, on top of the random points of `points`.

Two expressions that agree at random points can still differ: only at integers (`\\lceil x \\rceil - \\lfloor x
\\rfloor` against 1), only far out (`\\min(x, 5000)` against x), or only in a narrow window around a breakpoint
(`x + \\max(0, 1 - 1000|x - 3|)` against x). So the comparison also evaluates both sides at
- integers and half-integers of every size up to 10^6, both signs;
- random points in narrow windows (three points within 10^-6 of a random centre);
- the breakpoints of `|.|`, `\\min`, `\\max`, `\\operatorname{sign}`, floor and ceiling (real roots of their
  arguments, or of the differences of their arguments, in one variable), and points on both sides of each.
At these points an isolated hole of one side (`\\frac{x^2-1}{x-1}` at 1) is no verdict, while two defined values
must agree. Breakpoints are found for arguments that are polynomials of degree <= 6 in one variable, with every other
variable at a random value; others are covered by the integer and random points only.

Agreement at these points decides equality only where they reach every region in which a non-smooth piece can
confine a difference (`sampling_decides`): every piece continuous (|.|, min, max), its arguments polynomials of degree
<= 6 in one variable, the same for all pieces, with breakpoints far enough apart that a point falls between each two.
Elsewhere (`x^2 + \\max(0, \\sin x - 0.99999999)`, `x + \\lfloor \\frac{1}{1+(x-7.3)^2} \\rfloor`: a difference in a
window no point falls in) equality needs a symbolic proof (`symbolically_zero`), and a verdict "not equal" for want
of one is recorded (`decline`) so that the comparison can give its reason, `UNPROVEN_NONSMOOTH`.
"""

from __future__ import annotations

import functools
import random

import mpmath
import sympy
from mpmath.libmp import NoConvergence
from sympy.polys.polyerrors import BasePolynomialError

INTEGERS = [0, 1, -1, 2, -2, 3, -3, 5, -7, 12, -100, 1000, -4096, 10**6, -(10**6)]
HALF_INTEGERS = [0.5, -0.5, 1.5, -2.5, 7.5, -99.5, 1000.5]
WINDOW_CENTRES = 2
WINDOW_WIDTH = 1e-6
MAX_DEGREE = 6
MAX_BREAKPOINTS = 12
SIDE_OFFSETS = (1e-9, 1e-4)  # relative to max(1, |breakpoint|)
KINKED = (sympy.Abs, sympy.sign, sympy.floor, sympy.ceiling, sympy.Min, sympy.Max, sympy.Heaviside)
CONTINUOUS_KINKS = (sympy.Abs, sympy.Min, sympy.Max)
# Pieces with jumps: a jump of a floor can sit at a point no sampled point is near (`\\lfloor x - 0.3 \\rfloor -
# \\lfloor x - 0.3 - 10^{-30} \\rfloor` is 1 on a window 10^-30 wide), so sampling never decides where one of them is.
JUMPS = (sympy.sign, sympy.floor, sympy.ceiling, sympy.frac, sympy.Mod, sympy.Heaviside, sympy.Piecewise)
NONSMOOTH = CONTINUOUS_KINKS + JUMPS
SEPARATION = 1e-8  # breakpoints closer than this (times max(1, |breakpoint|)) leave a cell the side points may miss
UNPROVEN_NONSMOOTH = "unproven_nonsmooth"  # the reason of a verdict "not equal" for want of a symbolic proof
# What sympy's polynomial tools raise for an argument that is not a polynomial they handle: not a polynomial in the
# variable (PolynomialError), coefficients outside a numerical domain (DomainError), roots it cannot isolate or sort
# (NotImplementedError, "sorted roots not supported over EX"), no convergence of the root finder (NoConvergence).
# Anything else is a bug: it escapes to the verifier, which reports it as a comparison_error (counted, logged), rather
# than silently dropping refuting points.
NOT_A_POLYNOMIAL = (BasePolynomialError, NotImplementedError, NoConvergence)


def _dyadic(value: float) -> mpmath.mpf:
    """`value` rounded to a multiple of 2^-40: exact in binary, so every working precision sees the same point."""
    return mpmath.mpf(round(value * 2**40)) / 2**40


def refuting_points(symbols: list[sympy.Symbol], exprs: tuple[sympy.Expr, ...], seed: int = 1) -> list[dict]:
    """Integer, half-integer, narrow-window and breakpoint points for `symbols` (seeded: the same verdict always)."""
    rng = random.Random(seed)
    points: list[dict] = []
    for values in (INTEGERS, HALF_INTEGERS):
        for i in range(len(values)):
            points.append({s: _dyadic(values[(i + 3 * k) % len(values)]) for k, s in enumerate(symbols)})
    for _ in range(WINDOW_CENTRES):
        centre = {s: rng.uniform(-20, 20) for s in symbols}
        for step in (-1, 0, 1):
            points.append({s: _dyadic(c + step * WINDOW_WIDTH * rng.random()) for s, c in centre.items()})
    points.extend(_breakpoint_points(symbols, exprs, rng))
    return points


def _kink_arguments(expr: sympy.Expr) -> list[sympy.Expr]:
    """Expressions whose real roots are breakpoints: the argument of |.|, sign, floor, ceiling (minus the integers
    around), and the pairwise differences of the arguments of min and max."""
    return [a for node in sympy.preorder_traversal(expr) if isinstance(node, KINKED) for a in _node_arguments(node)]


def _node_arguments(node: sympy.Basic) -> list[sympy.Expr]:
    if isinstance(node, (sympy.Min, sympy.Max)):
        return [a - b for i, a in enumerate(node.args) for b in node.args[i + 1 :]]
    if isinstance(node, (sympy.floor, sympy.ceiling)):
        return [node.args[0] - k for k in (-2, -1, 0, 1, 2, 3)]
    return [node.args[0]]


def has_nonsmooth(exprs: tuple[sympy.Expr, ...]) -> bool:
    return any(isinstance(expr, sympy.Basic) and expr.has(*NONSMOOTH) for expr in exprs)


def sampling_decides(exprs: tuple[sympy.Expr, ...]) -> bool:
    """Whether agreement of `exprs` at the random and refuting points may decide that they are equal: True when
    they hold no non-smooth piece with a variable in it, or when every such piece is |.|, min or max whose arguments
    (pairwise differences for min and max) are polynomials of degree <= `MAX_DEGREE` in one variable, the same for
    every piece, and whose breakpoints are all among the refuting points, at most `MAX_BREAKPOINTS`, each two
    `SEPARATION` apart. Then every cell between two breakpoints holds a side point, and in a cell both sides are
    analytic, so a difference there is not 0 at that point (nor its own rounding noise, `points.difference_is_real`).
    Not covered: several variables (the breakpoints are searched along one variable at a time, so a bump in x times
    a bump in y is missed), a rational or trigonometric argument (its window can be narrower than any point's
    reach), breakpoints closer than the side points, and a jump (floor, ceiling, sign, Mod, Piecewise: a jump can sit
    between two points, or a value hold at one point only)."""
    arguments = []
    for expr in exprs:
        for node in sympy.preorder_traversal(expr):
            if isinstance(node, JUMPS) and node.free_symbols:
                return False
            if isinstance(node, CONTINUOUS_KINKS):
                arguments += [a for a in _node_arguments(node) if a.free_symbols]
    variables = set().union(*(a.free_symbols for a in arguments))
    if not variables:
        return True
    if len(variables) > 1:
        return False
    return _breakpoints_sampled(arguments, variables.pop())


def _breakpoints_sampled(arguments: list[sympy.Expr], symbol: sympy.Symbol) -> bool:
    """Every real root of `arguments` (polynomials in `symbol` with rational coefficients), found exactly, is one
    that `_breakpoint_points` samples, and each two are `SEPARATION` apart (so that the side points fall between)."""
    try:
        polynomials = [sympy.Poly(a, symbol) for a in arguments]
        if any(p.degree() > MAX_DEGREE or not (p.domain.is_ZZ or p.domain.is_QQ) for p in polynomials):
            return False
        moving = [p.sqf_part() for p in polynomials if p.degree() > 0]
        if not moving:
            return True
        squarefree = functools.reduce(lambda p, q: p.lcm(q), moving)  # each root once: distinct roots stay distinct
        if squarefree.degree() > 2 * MAX_BREAKPOINTS:
            return False
        roots = [float(r.evalf(30)) for r in squarefree.real_roots()]
    except NOT_A_POLYNOMIAL:  # not a polynomial with rational coefficients, or sympy cannot isolate its roots
        return False
    if len(roots) > MAX_BREAKPOINTS:
        return False
    sampled = sorted({round(r, 12) for a in arguments for r in _real_roots(a, symbol)})[:MAX_BREAKPOINTS]
    scale = [max(1.0, abs(r)) for r in roots]
    if any(b - a < SEPARATION * max(sa, sb) for a, b, sa, sb in zip(roots, roots[1:], scale, scale[1:])):
        return False
    return all(any(abs(r - s) <= 1e-10 * size for s in sampled) for r, size in zip(roots, scale))


def symbolically_zero(difference: sympy.Expr) -> bool:
    """Whether `difference` is proven 0 by sympy: on construction, or by `sympy.simplify`, once min and max are
    written with |.| (`\\max(a, b)` is `(a + b + |a - b|) / 2`), ceiling, fractional part and Mod with floor, |.| of
    a product as the product of |.|, and the logarithm of a product of non-negative factors as the sum of their
    logarithms (`\\ln|ab| = \\ln|a| + \\ln|b|` where either side is defined). Each rewriting is an identity."""
    rewritten = difference.replace(
        lambda n: isinstance(n, (sympy.Min, sympy.Max)), lambda n: n.rewrite(sympy.Abs)
    ).replace(lambda n: isinstance(n, (sympy.ceiling, sympy.frac, sympy.Mod)), lambda n: n.rewrite(sympy.floor))
    rewritten = rewritten.replace(
        lambda n: isinstance(n, sympy.Abs) and n.args[0].is_Mul,
        lambda n: sympy.Mul(*(sympy.Abs(f) for f in n.args[0].args)),
    ).replace(
        lambda n: isinstance(n, sympy.log) and n.args[0].is_Mul and all(f.is_nonnegative for f in n.args[0].args),
        lambda n: sympy.Add(*(sympy.log(f) for f in n.args[0].args)),
    )
    if rewritten == 0:
        return True
    try:
        return sympy.simplify(rewritten) == 0
    except NotImplementedError:  # sympy's "cannot": no proof
        return False


_declined = [0]  # verdicts "not equal" given for want of a symbolic proof, in this process


def decline() -> bool:
    """Record a verdict "not equal" for want of a proof (the reason `UNPROVEN_NONSMOOTH`), and give it: False."""
    _declined[0] += 1
    return False


def declined() -> int:
    """How many verdicts `decline` has given in this process: a caller compares the count before and after."""
    return _declined[0]


def _real_roots(expr: sympy.Expr, symbol: sympy.Symbol) -> list[float]:
    try:
        numerator = sympy.fraction(sympy.together(expr))[0]
        poly = sympy.Poly(numerator, symbol)
        if poly.degree() < 1 or poly.degree() > MAX_DEGREE:
            return []
        roots = poly.nroots(n=30, maxsteps=60)
    except NOT_A_POLYNOMIAL:  # not a polynomial in `symbol`, or no convergence: no breakpoints from this argument
        return []
    return [float(sympy.re(r)) for r in roots if abs(sympy.im(r)) < 1e-12]


def _breakpoint_points(symbols: list[sympy.Symbol], exprs: tuple[sympy.Expr, ...], rng: random.Random) -> list[dict]:
    """Each breakpoint in each variable, and points on both sides of it; the other variables at a positive value
    (inside the domain of `\\sqrt{y}`, `\\ln y`) and then at values of random signs."""
    arguments = [a for expr in exprs for a in _kink_arguments(expr)]
    if not arguments or not symbols:
        return []
    points = []
    for signs in ((1,) * len(symbols), tuple(rng.choice((-1, 1)) for _ in symbols)):
        base = {s: _dyadic(rng.uniform(0.3, 3.0) * sign) for s, sign in zip(symbols, signs)}
        for symbol in symbols:
            others = {s: sympy.Rational(int(v * 2**40), 2**40) for s, v in base.items() if s != symbol}
            roots = sorted({round(r, 12) for a in arguments for r in _real_roots(a.xreplace(others), symbol)})
            for root in roots[:MAX_BREAKPOINTS]:
                for offset in (0.0, *SIDE_OFFSETS, *(-o for o in SIDE_OFFSETS)):
                    point = dict(base)
                    point[symbol] = _dyadic(root + offset * max(1.0, abs(root)))
                    points.append(point)
        if len(symbols) == 1:
            break  # one variable: the other signs change nothing
    return points
