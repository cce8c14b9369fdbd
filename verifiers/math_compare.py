"""Stage 3b of the math verifier: decide whether two answer structures are equal, with sympy.

Runs inside a deadline worker (it parses untrusted LaTeX and calls sympy). Rules:
- lists and sets are order-free, tuples ordered; a bare list against a tuple is compared in order;
- intervals need the same bracket types; a pair `(a, b)` equals the open interval `(a, b)`;
- `name = value` equals `value` (`k = 1` vs `1`); `a = b = c` is read as `a = c`;
- equations are equal when `lhs - rhs` differ by a non-zero constant factor; inequalities when the factor is positive
  (flipped sides count: `x < 1` equals `-x > -1`); a one-variable inequality equals the interval it describes;
- expressions: exact for integers and rationals; otherwise numbers within `rel_tol` (relative) plus `abs_tol`;
  symbolic ones must have the same free symbols and agree at random points, or simplify to the same thing.
LaTeX is parsed with latex2sympy2_extended. Huge powers and factorials are refused before sympy evaluates them.
"""

from __future__ import annotations

import functools
import random
import re
from dataclasses import dataclass

import sympy
from antlr4.atn.PredictionMode import PredictionMode
from antlr4.error.Errors import ParseCancellationException
from antlr4.error.ErrorStrategy import BailErrorStrategy
from latex2sympy2_extended import NormalizationConfig, latex2sympy
from latex2sympy2_extended.latex2sympy2 import normalize_latex
from sympy import MatrixBase

from .math_normalize import plain_number
from .math_structure import Interval, Leaf, Relation, Seq, Union, is_name, parse_structure

MAX_EXPONENT = 10_000
MAX_FACTORIAL = 1_000
SAMPLE_POINTS = 3
PARSE_CONFIG = NormalizationConfig(basic_latex=True, units=False, malformed_operators=False, nits=False, boxed="none")


@dataclass(frozen=True)
class Tolerance:
    rel_tol: float = 1e-4
    abs_tol: float = 1e-12


class UnparseableError(ValueError):
    """The LaTeX of one side could not be turned into a sympy object."""


class TooLargeError(ValueError):
    """An expression contains a power or factorial too large to evaluate safely."""


# Exercise each comparison path once per worker: sympy imports much of itself lazily on first use (simplify,
# solvers, sets, matrices), and the ANTLR parser of latex2sympy builds its prediction cache as it meets constructs.
WARM_UP_PAIRS = [
    (r"\frac{x}{2}+1", r"\frac{x+2}{2}"),
    (r"3x-6y+2=0", r"y=\frac{1}{2}x+\frac{1}{3}"),
    (r"x \ge 5", r"[5, \infty)"),
    (r"-2 < x \le 7", r"(-2, 7]"),
    (r"1 \le |z| \le 2", r"[-2, -1] \cup [1, 2]"),
    (r"\begin{pmatrix}2 & 0 \\ 5 & -1\end{pmatrix}", r"\begin{bmatrix}2 & 0 \\ 5 & -1\end{bmatrix}"),
    (r"\sqrt{2}+\sin(\pi/4)", r"1.5 \sqrt{2}"),
    (r"\sqrt[3]{t^{2}} \cdot 5", r"5t^{2/3}"),
    (r"1-\sin^2(u)", r"\cos^2(u)"),
    (r"\log(x) + \ln(e)", r"\log x + 1"),
    (r"b_{12} = 7", r"b_{12} = 7.0"),
    (r"(1 - \sqrt{5}) \times 2", r"2 - 2\sqrt{5}"),
    (r"\frac{\sqrt{7}}{7}", r"\frac{1}{\sqrt{7}}"),
    (r"2+3i", r"3i+2"),
    (r"f(x) = \sum_{k=0}^{n} k", r"f(x) = \sum_{k=0}^{n} k"),
    (r"\binom{9}{4}", r"126"),
    (r"x^2 \ne 1", r"1 \ne x^2"),
]


# Common shapes of final answers, parsed once per worker: the ANTLR parser's prediction states for their token
# sequences are then built before the first batch instead of during it.
WARM_UP_LEAVES = [
    r"\frac{11}{13}",
    r"-\frac{5}{12}",
    r"\dfrac{7}{2}",
    r"\frac{\sqrt{3}}{2}",
    r"\frac{2\sqrt{6}}{5}",
    r"\frac{3-\sqrt{13}}{4}",
    r"4\sqrt{3}",
    r"\sqrt{23}",
    r"\sqrt[3]{9}",
    r"2^{10}",
    r"3^{-2}",
    r"x^2-4x+3",
    r"3x^{3}+2x-7",
    r"2x^2 + 5x - 1",
    r"(x-2)(x+5)",
    r"-3(x+1)^2+4",
    r"\frac{x+1}{x-1}",
    r"\frac{1}{x^2+1}",
    r"6\pi",
    r"\frac{\pi}{3}",
    r"\frac{5\pi}{6}",
    r"2\pi r",
    r"e^{2}",
    r"e^{-x}",
    r"\ln 2",
    r"\ln(3)",
    r"\log_{2} 8",
    r"\log_3(x)",
    r"\sin(x)",
    r"\cos 2x",
    r"\tan^{2} x",
    r"\sin^2(x)+\cos^2(x)",
    r"\arcsin\left(\frac{1}{2}\right)",
    r"|x-3|",
    r"\left|2x+1\right|",
    r"5!",
    r"\binom{10}{3}",
    r"1.25",
    r"-0.5",
    r"3.14159",
    r"10^{6}",
    r"2.5\times 10^{3}",
    r"4 \cdot 7",
    r"12/5",
    r"a_n",
    r"a_{n+1}",
    r"a_{n-1}+a_{n-2}",
    r"x_1",
    r"F_{k}",
    r"\sum_{i=1}^{n} i^2",
    r"\sum_{k=0}^{n} \binom{n}{k}",
    r"\int_0^1 x^2\,dx",
    r"\lim_{x\to\infty} \frac{1}{x}",
    r"3+4i",
    r"2-i",
    r"\sqrt{-1}",
    r"\infty",
    r"-\infty",
    r"\begin{pmatrix} 2 & -1 \\ 0 & 3 \end{pmatrix}",
    r"\begin{pmatrix} 1 \\ 4 \end{pmatrix}",
    r"\begin{bmatrix} 0 & 1 \\ 1 & 0 \end{bmatrix}",
    r"\begin{array}{cc} 5 & 6 \\ 7 & 8 \end{array}",
    r"y",
    r"2y-3",
    r"ab+bc",
    r"mn",
    r"\alpha+\beta",
    r"\theta",
    r"45^\circ",
    r"h(t)",
    r"g(2)",
    r"xy^2",
    r"\frac{a}{b}+\frac{c}{d}",
    r"(2x+3y)^2",
    r"x^3 - y^3",
    r"\left(\frac{1}{2}\right)^n",
    r"\frac{n(n+1)}{2}",
    r"n^2 + n",
    r"2n-1",
    r"\overline{AB}",
    r"\lfloor x \rfloor",
    r"\lceil 2.5 \rceil",
]


def warm_up() -> None:
    """Worker initializer: import and exercise every comparison path once so the first items do not pay for it."""
    for pred, ref in WARM_UP_PAIRS:
        compare_task([(pred, ref)], 1e-4, 1e-12)
    for latex in WARM_UP_LEAVES:
        try:
            latex_to_sympy(latex)
        except Exception:  # a warm-up is an optimisation: another parser version may reject a shape, and that is fine
            pass
    parse_leaf.cache_clear()


@functools.lru_cache(maxsize=4096)
def parse_leaf(latex: str) -> sympy.Basic:
    value = plain_number(latex)
    if value is not None:  # decimals stay approximate (compared with tolerance), integers and fractions exact
        if re.search(r"[.eE]", latex):
            return sympy.Float(latex.replace(" ", ""), 30)
        return sympy.Rational(value.numerator, value.denominator)
    try:
        expr = latex_to_sympy(latex)
    except Exception as exc:  # the parser raises bare Exceptions on syntax errors
        raise UnparseableError(f"cannot parse {latex!r}: {str(exc).splitlines()[0][:80]}") from None
    guard_size(expr)
    if isinstance(expr, sympy.MatrixExpr) or (isinstance(expr, sympy.Basic) and expr.has(sympy.MatrixExpr)):
        expr = expr.doit()  # "A + B" of explicit matrices
    symbol_i = sympy.Symbol("i")
    if isinstance(expr, sympy.Basic) and symbol_i in expr.free_symbols:
        expr = expr.subs(symbol_i, sympy.I)  # `i` is the imaginary unit in answers
    return expr


try:  # the library's converter class is not public API: a release without it gets the public entry point
    from latex2sympy2_extended.latex2sympy2 import _Latex2Sympy
except ImportError:
    _Latex2Sympy = object


class _Converter(_Latex2Sympy):
    """latex2sympy2_extended's converter, with two speed-ups that do not change its result.

    - `sll=True` puts its ANTLR parser in SLL prediction mode and bails out on the first error: ANTLR's documented
      two-stage strategy. SLL prediction ignores the calling context, so it skips full-context lookahead and builds
      fewer prediction states; it either returns exactly the tree that the default LL mode returns or reports a syntax
      error, and then `latex_to_sympy` parses again in LL mode.
    - Integer literals become `sympy.Integer` directly; the library passes them through `sympy.Number(text)`, which
      runs sympy's string parser (about 1 ms) for the same value.
    """

    def __init__(self, sll: bool):
        super().__init__()
        self.sll = sll

    def create_parser(self, latex_str):
        parser = super().create_parser(latex_str)
        if self.sll:
            parser._interp.predictionMode = PredictionMode.SLL
            parser.removeErrorListeners()
            parser._errHandler = BailErrorStrategy()  # raises ParseCancellationException instead of recovering
        return parser

    def parse_number(self, text):
        digits = text.replace(",", "")
        if digits.isascii() and digits.isdigit():
            return sympy.Integer(int(digits))
        return super().parse_number(text)


def latex_to_sympy(latex: str) -> object:
    """What `latex2sympy(latex, normalization_config=PARSE_CONFIG)` returns, parsed SLL first and LL only if needed."""
    if _Latex2Sympy is object:
        return latex2sympy(latex, normalization_config=PARSE_CONFIG)
    text = normalize_latex(latex, PARSE_CONFIG)
    try:
        return _Converter(sll=True).parse(text)
    except ParseCancellationException:  # a real syntax error, or input that needs full-context (LL) prediction
        return _Converter(sll=False).parse(text)


def guard_size(expr: object) -> None:
    """Refuse `2^{10^{9}}`, `100000!` and the like before anything tries to evaluate them exactly."""
    if not isinstance(expr, (sympy.Basic, MatrixBase)):
        return
    for node in sympy.preorder_traversal(expr):
        if isinstance(node, sympy.Pow) and node.exp.is_Number and abs(node.exp) > MAX_EXPONENT:
            if not (node.base.is_Number and abs(node.base) <= 1):
                raise TooLargeError(f"exponent {node.exp} is above {MAX_EXPONENT}")
        if isinstance(node, sympy.Pow) and isinstance(node.exp, sympy.Pow):
            guard_size(node.exp.doit())  # towers: 2^{10^{10}}
            if node.exp.doit().is_Number and abs(node.exp.doit()) > MAX_EXPONENT:
                raise TooLargeError("power tower is too large")
        if isinstance(node, (sympy.factorial, sympy.factorial2)) and node.args[0].is_Number:
            if node.args[0] > MAX_FACTORIAL:
                raise TooLargeError(f"factorial of {node.args[0]} is above {MAX_FACTORIAL}")


def numbers_close(a: complex | float, b: complex | float, tol: Tolerance) -> bool:
    return abs(a - b) <= max(tol.rel_tol * max(abs(a), abs(b)), tol.abs_tol)


def _numeric(expr: sympy.Basic) -> complex | None:
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
        va, vb = _numeric(a), _numeric(b)
        return va is not None and vb is not None and numbers_close(va, vb, tol)
    return _rebuilt(a) == _rebuilt(b) or _symbolic_equal(a, b, tol)


def _symbolic_equal(a: sympy.Expr, b: sympy.Expr, tol: Tolerance) -> bool:
    """Agree at random points (a cheap identity test), confirmed by simplification when sampling is impossible."""
    symbols = sorted(a.free_symbols, key=str)
    rng = random.Random(0)
    sampled = 0
    for _ in range(SAMPLE_POINTS * 2):
        point = {s: sympy.Float(rng.uniform(0.3, 2.7)) for s in symbols}
        va, vb = _numeric(a.xreplace(point)), _numeric(b.xreplace(point))
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


def leaves_equal(a: Leaf, b: Leaf, tol: Tolerance) -> bool:
    if a.latex == b.latex:
        return True
    return expressions_equal(parse_leaf(a.latex), parse_leaf(b.latex), tol)


def _unordered_equal(a: tuple, b: tuple, tol: Tolerance) -> bool:
    """Set equality: every item of `a` equals some item of `b` and vice versa (repeats do not count)."""
    return all(any(_safe_equal(x, y, tol) for y in b) for x in a) and all(
        any(_safe_equal(x, y, tol) for x in a) for y in b
    )


def _safe_equal(a: object, b: object, tol: Tolerance) -> bool:
    try:
        return structures_equal(a, b, tol)
    except (UnparseableError, TooLargeError):
        return False


def structures_equal(pred: object, ref: object, tol: Tolerance) -> bool:
    """Whether the predicted structure equals the reference structure (see the module docstring)."""
    if isinstance(pred, Relation) or isinstance(ref, Relation):
        return _with_relation(pred, ref, tol)
    if isinstance(pred, Seq) and isinstance(ref, Seq):
        if {pred.kind, ref.kind} == {"tuple", "set"}:
            return False
        if "tuple" in (pred.kind, ref.kind):
            return len(pred.items) == len(ref.items) and all(
                structures_equal(x, y, tol) for x, y in zip(pred.items, ref.items)
            )
        return _unordered_equal(pred.items, ref.items, tol)
    if isinstance(pred, (Interval, Seq)) and isinstance(ref, (Interval, Seq)):
        return _intervals_equal(pred, ref, tol)
    if isinstance(pred, Union) and isinstance(ref, Union):
        return _unordered_equal(pred.parts, ref.parts, tol)
    if isinstance(pred, Leaf) and isinstance(ref, Leaf):
        return leaves_equal(pred, ref, tol)
    return False


def _as_interval(node: object) -> Interval | None:
    if isinstance(node, Interval):
        return node
    if isinstance(node, Seq) and node.kind == "tuple" and len(node.items) == 2:
        return Interval("(", node.items[0], node.items[1], ")")
    return None


def _intervals_equal(pred: object, ref: object, tol: Tolerance) -> bool:
    a, b = _as_interval(pred), _as_interval(ref)
    if a is None or b is None or (a.left, a.right) != (b.left, b.right):
        return False
    return structures_equal(a.low, b.low, tol) and structures_equal(a.high, b.high, tol)


def _equality_value(rel: Relation) -> object | None:
    """The value a chain of equalities states: `k = 1` -> 1, `x = 2 + 3 = 5` -> 5, `35 + 70 = 105` -> 105;
    None for a genuine equation (`2x + z = 1`, `7 = 11a + c`)."""
    if set(rel.ops) != {"="}:
        return None
    first, last = rel.parts[0], rel.parts[-1]
    if len(rel.parts) > 2 or (isinstance(first, Leaf) and is_name(first.latex)) or _tuple_of_names(first):
        return last
    if isinstance(first, Leaf) and isinstance(last, Leaf) and not re.search(r"[a-zA-Z]", first.latex + last.latex):
        return last  # arithmetic shown before the result
    return None


def _tuple_of_names(node: object) -> bool:
    return isinstance(node, Seq) and all(isinstance(i, Leaf) and is_name(i.latex) for i in node.items)


def _with_relation(pred: object, ref: object, tol: Tolerance) -> bool:
    if isinstance(pred, Relation) and isinstance(ref, Relation):
        return _relations_equal(pred, ref, tol)
    rel, other = (pred, ref) if isinstance(pred, Relation) else (ref, pred)
    value = _equality_value(rel)
    if value is not None:
        return structures_equal(value, other, tol) if rel is pred else structures_equal(other, value, tol)
    return _relation_matches_set(rel, other, tol)


def _relations_equal(a: Relation, b: Relation, tol: Tolerance) -> bool:
    va, vb = _equality_value(a), _equality_value(b)
    if va is not None and vb is not None and len(a.parts) + len(b.parts) > 4:
        return structures_equal(va, vb, tol)  # chains: compare what they conclude
    if len(a.parts) == len(b.parts) == 2 and a.ops == b.ops == ("=",) and a.parts[0] == b.parts[0]:
        if isinstance(a.parts[0], Leaf) and is_name(a.parts[0].latex):
            return structures_equal(a.parts[1], b.parts[1], tol)
    atoms_a, atoms_b = _atomic_relations(a), _atomic_relations(b)
    if atoms_a is None or atoms_b is None or len(atoms_a) != len(atoms_b):
        return False
    unused = list(atoms_b)
    for atom in atoms_a:
        match = next((j for j, other in enumerate(unused) if _atoms_equal(atom, other)), None)
        if match is None:
            return False
        unused.pop(match)
    return True


def _atomic_relations(rel: Relation) -> list[tuple[sympy.Expr, str]] | None:
    """Each link `l op r` of a chain as (expression, kind): "<" means expression > 0 (strict), "<=" >= 0, "=", "!="."""
    atoms = []
    for left, op, right in zip(rel.parts, rel.ops, rel.parts[1:]):
        if not (isinstance(left, Leaf) and isinstance(right, Leaf)):
            return None
        lhs, rhs = parse_leaf(left.latex), parse_leaf(right.latex)
        if not (isinstance(lhs, sympy.Expr) and isinstance(rhs, sympy.Expr)):
            return None
        kinds = {"<": ("<", rhs - lhs), ">": ("<", lhs - rhs), "\\le": ("<=", rhs - lhs), "\\ge": ("<=", lhs - rhs)}
        kind, expr = kinds.get(op, ("!=" if op == "\\ne" else "=", lhs - rhs))
        atoms.append((expr, kind))
    return atoms


def _atoms_equal(a: tuple[sympy.Expr, str], b: tuple[sympy.Expr, str]) -> bool:
    """Same kind, and one expression is a constant multiple of the other (positive for inequalities)."""
    (ea, kind_a), (eb, kind_b) = a, b
    if kind_a != kind_b or ea.free_symbols != eb.free_symbols:
        return False
    if eb == 0 or ea == 0:
        return ea == eb
    if _rebuilt(ea) == _rebuilt(eb):  # the same expression: ratio 1, no need to sample (a sum sampled costs ~0.1 s)
        return True
    ratio = _constant_ratio(ea, eb)
    if ratio is None or ratio == 0:
        return False
    return kind_a in ("=", "!=") or ratio > 0


def _rebuilt(expr: sympy.Basic) -> sympy.Basic:
    """`expr` with every node built again, evaluated: the parser leaves some products unevaluated, in the order written,
    so `F_{n-k-1} F_k` and `F_k F_{n-k-1}` differ structurally until rebuilt. Nothing is computed beyond canonical
    ordering and the evaluation sympy does on construction."""
    if not expr.args or not isinstance(expr, sympy.Expr):
        return expr
    return expr.func(*(_rebuilt(arg) for arg in expr.args))


def _constant_ratio(a: sympy.Expr, b: sympy.Expr) -> float | None:
    """The constant c with a = c * b, found by sampling random points (simplification only when sampling fails)."""
    symbols = sorted(a.free_symbols, key=str)
    rng = random.Random(0)
    ratios = []
    for _ in range(SAMPLE_POINTS * 2):
        point = {s: sympy.Float(rng.uniform(0.3, 2.7)) for s in symbols}
        va, vb = _numeric(a.xreplace(point)), _numeric(b.xreplace(point))
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


def _relation_matches_set(rel: Relation, other: object, tol: Tolerance) -> bool:
    """`-2 \\le x \\le 7` against `[-2, 7]`: the set of real solutions of a one-variable relation; a chain
    `a < f(x) < b` with constant ends and no solvable variable stands for the interval (a, b)."""
    atoms = _atomic_relations(rel)
    target = _to_sympy_set(other)
    symbols = set().union(*(expr.free_symbols for expr, _ in atoms)) if atoms else set()
    undefined_function = atoms and any(expr.atoms(sympy.core.function.AppliedUndef) for expr, _ in atoms)
    if atoms is None or target is None or len(symbols) != 1 or undefined_function:
        bounded = _chain_interval(rel)
        return bounded is not None and (_intervals_equal(bounded, other, tol) or _intervals_equal(other, bounded, tol))
    (symbol,) = symbols
    real = sympy.Symbol("real_" + symbol.name, real=True)
    ops = {"<": sympy.StrictGreaterThan, "<=": sympy.GreaterThan, "=": sympy.Eq, "!=": sympy.Ne}
    condition = sympy.And(*(ops[kind](expr.xreplace({symbol: real}), 0) for expr, kind in atoms))
    try:
        return _solution_set(condition, real) == target
    except Exception:
        return False


def _solution_set(condition: sympy.Basic, real: sympy.Symbol) -> sympy.Set:
    """`condition.as_set()`, without its periodicity check where that check cannot matter.

    `as_set` first asks `periodicity` of every relation (costly: it simplifies) to refuse periodic ones; a rational
    function of the variable is never periodic, so for relations of rational functions the answer is the intersection
    of each relation's `_eval_as_set()`, exactly what `as_set` computes after finding no periodic relation.
    """
    parts = condition.args if isinstance(condition, sympy.And) else (condition,)
    if all(
        isinstance(part, sympy.core.relational.Relational)
        and part.free_symbols == {real}
        and (part.lhs - part.rhs).is_rational_function(real)
        for part in parts
    ):
        return sympy.Intersection(*(part._eval_as_set() for part in parts))
    return condition.as_set()


def _chain_interval(rel: Relation) -> Interval | None:
    """`a < f(x) \\le b` with constant ends is the interval (a, b] whatever the middle is."""
    if len(rel.parts) != 3 or not all(isinstance(p, Leaf) for p in rel.parts):
        return None
    low, high = rel.parts[0], rel.parts[2]
    if re.search(r"[a-zA-Z]", (low.latex + high.latex).replace("\\infty", "").replace("\\frac", "")):
        return None
    brackets = {"<": "(", "\\le": "["}
    flipped = {">": ")", "\\ge": "]"}
    if all(op in brackets for op in rel.ops):
        return Interval(brackets[rel.ops[0]], low, high, ")" if rel.ops[1] == "<" else "]")
    if all(op in flipped for op in rel.ops):
        return Interval("(" if rel.ops[1] == ">" else "[", high, low, flipped[rel.ops[0]])
    return None


def _to_sympy_set(node: object) -> sympy.Set | None:
    interval = _as_interval(node)
    if interval is not None:
        if not (isinstance(interval.low, Leaf) and isinstance(interval.high, Leaf)):
            return None
        low, high = parse_leaf(interval.low.latex), parse_leaf(interval.high.latex)
        return sympy.Interval(low, high, left_open=interval.left == "(", right_open=interval.right == ")")
    if isinstance(node, Union):
        parts = [_to_sympy_set(p) for p in node.parts]
        return None if any(p is None for p in parts) else sympy.Union(*parts)
    return None


def _parse_all_leaves(node: object) -> None:
    """Parse every leaf of a structure (raising UnparseableError or TooLargeError on the first bad one)."""
    if isinstance(node, Leaf):
        parse_leaf(node.latex)
    elif isinstance(node, Interval):
        _parse_all_leaves(node.low)
        _parse_all_leaves(node.high)
    else:
        for child in getattr(node, "items", ()) or getattr(node, "parts", ()):
            _parse_all_leaves(child)


def compare_task(pairs: list[tuple[str, str]], rel_tol: float, abs_tol: float) -> tuple[bool | None, str]:
    """Worker entry point: whether any (prediction, reference) pair of normalised answers is equal, with a reason.

    Returns (None, reason) when the reference itself cannot be parsed: the caller scores that item None.
    """
    tol = Tolerance(rel_tol, abs_tol)
    reason = "different"
    for pred, ref in pairs:
        ref_structure = parse_structure(ref)
        try:
            if structures_equal(parse_structure(pred), ref_structure, tol):
                return True, "symbolic"
        except (UnparseableError, TooLargeError) as exc:
            try:
                _parse_all_leaves(ref_structure)
            except (UnparseableError, TooLargeError) as ref_exc:
                return None, f"unusable_reference: {ref_exc}"
            reason = f"{'unparseable' if isinstance(exc, UnparseableError) else 'too_large'}: {exc}"
    return False, reason
