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
"""

from __future__ import annotations

import random

import mpmath
import sympy

INTEGERS = [0, 1, -1, 2, -2, 3, -3, 5, -7, 12, -100, 1000, -4096, 10**6, -(10**6)]
HALF_INTEGERS = [0.5, -0.5, 1.5, -2.5, 7.5, -99.5, 1000.5]
WINDOW_CENTRES = 2
WINDOW_WIDTH = 1e-6
MAX_DEGREE = 6
MAX_BREAKPOINTS = 12
SIDE_OFFSETS = (1e-9, 1e-4)  # relative to max(1, |breakpoint|)
KINKED = (sympy.Abs, sympy.sign, sympy.floor, sympy.ceiling, sympy.Min, sympy.Max, sympy.Heaviside)


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
    found = []
    for node in sympy.preorder_traversal(expr):
        if not isinstance(node, KINKED):
            continue
        if isinstance(node, (sympy.Min, sympy.Max)):
            found += [a - b for i, a in enumerate(node.args) for b in node.args[i + 1 :]]
        elif isinstance(node, (sympy.floor, sympy.ceiling)):
            found += [node.args[0] - k for k in (-2, -1, 0, 1, 2, 3)]
        else:
            found.append(node.args[0])
    return found


def _real_roots(expr: sympy.Expr, symbol: sympy.Symbol) -> list[float]:
    try:
        numerator = sympy.fraction(sympy.together(expr))[0]
        poly = sympy.Poly(numerator, symbol)
        if poly.degree() < 1 or poly.degree() > MAX_DEGREE:
            return []
        roots = poly.nroots(n=30, maxsteps=60)
    except Exception:  # not a polynomial in `symbol`, or no convergence: no breakpoints from this argument
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
