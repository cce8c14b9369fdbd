"""Relations (equations, inequalities, chains) and the sets they describe, compared with each other and with values.

- `name = value` equals `value` (`k = 1` vs `1`); `a = b = c` is read as `a = c`;
- equations are equal when `lhs - rhs` differ by a non-zero constant factor; inequalities when the factor is positive
  (flipped sides count: `x < 1` equals `-x > -1`); a one-variable relation equals the set of its real solutions.

Parts of a relation may be any structure, so the functions here take `equal`, the structure comparison of
`compare`, to compare them.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import sympy

from .expressions import constant_ratio, rebuilt
from .numbers import Tolerance
from .parse import parse_leaf
from .structure import Interval, Leaf, Relation, Seq, Union, is_name

StructuresEqual = Callable[[object, object, Tolerance], bool]


def as_interval(node: object) -> Interval | None:
    """An interval, or a pair `(a, b)` read as the open interval."""
    if isinstance(node, Interval):
        return node
    if isinstance(node, Seq) and node.kind == "tuple" and len(node.items) == 2:
        return Interval("(", node.items[0], node.items[1], ")")
    return None


def with_relation(pred: object, ref: object, tol: Tolerance, equal: StructuresEqual) -> bool:
    """Prediction against reference when at least one of them is a relation."""
    if isinstance(pred, Relation) and isinstance(ref, Relation):
        return _relations_equal(pred, ref, tol, equal)
    rel, other = (pred, ref) if isinstance(pred, Relation) else (ref, pred)
    value = _equality_value(rel)
    if value is not None:
        return equal(value, other, tol) if rel is pred else equal(other, value, tol)
    return _relation_matches_set(rel, other, tol, equal)


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


def _relations_equal(a: Relation, b: Relation, tol: Tolerance, equal: StructuresEqual) -> bool:
    va, vb = _equality_value(a), _equality_value(b)
    if va is not None and vb is not None and len(a.parts) + len(b.parts) > 4:
        return equal(va, vb, tol)  # chains: compare what they conclude
    if len(a.parts) == len(b.parts) == 2 and a.ops == b.ops == ("=",) and a.parts[0] == b.parts[0]:
        if isinstance(a.parts[0], Leaf) and is_name(a.parts[0].latex):
            return equal(a.parts[1], b.parts[1], tol)
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
    if rebuilt(ea) == rebuilt(eb):  # the same expression: ratio 1, no need to sample (a sum sampled costs ~0.1 s)
        return True
    ratio = constant_ratio(ea, eb)
    if ratio is None or ratio == 0:
        return False
    return kind_a in ("=", "!=") or ratio > 0


def _relation_matches_set(rel: Relation, other: object, tol: Tolerance, equal: StructuresEqual) -> bool:
    """`-2 \\le x \\le 7` against `[-2, 7]`: the set of real solutions of a one-variable relation; a chain
    `a < f(x) < b` with constant ends and no solvable variable stands for the interval (a, b)."""
    atoms = _atomic_relations(rel)
    target = _to_sympy_set(other)
    symbols = set().union(*(expr.free_symbols for expr, _ in atoms)) if atoms else set()
    undefined_function = atoms and any(expr.atoms(sympy.core.function.AppliedUndef) for expr, _ in atoms)
    if atoms is None or target is None or len(symbols) != 1 or undefined_function:
        bounded = _chain_interval(rel)
        return bounded is not None and (equal(bounded, other, tol) or equal(other, bounded, tol))
    (symbol,) = symbols
    real = sympy.Symbol("real_" + symbol.name, real=True)
    ops = {"<": sympy.StrictGreaterThan, "<=": sympy.GreaterThan, "=": sympy.Eq, "!=": sympy.Ne}
    condition = sympy.And(*(ops[kind](expr.xreplace({symbol: real}), 0) for expr, kind in atoms))
    try:
        return solution_set(condition, real) == target
    except NotImplementedError:  # sympy cannot solve the relation: it is not shown to be that set
        return False


def solution_set(condition: sympy.Basic, real: sympy.Symbol) -> sympy.Set:
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
        return sympy.Intersection(*(linear_set(part, real) or part._eval_as_set() for part in parts))
    return condition.as_set()


LINEAR_SETS = {
    # (relation, sign of the slope) -> the solutions of `slope * x + intercept (relation) 0` around its root r
    (sympy.StrictGreaterThan, 1): lambda r: sympy.Interval.open(r, sympy.oo),
    (sympy.StrictGreaterThan, -1): lambda r: sympy.Interval.open(-sympy.oo, r),
    (sympy.GreaterThan, 1): lambda r: sympy.Interval(r, sympy.oo),
    (sympy.GreaterThan, -1): lambda r: sympy.Interval(-sympy.oo, r),
    (sympy.StrictLessThan, 1): lambda r: sympy.Interval.open(-sympy.oo, r),
    (sympy.StrictLessThan, -1): lambda r: sympy.Interval.open(r, sympy.oo),
    (sympy.LessThan, 1): lambda r: sympy.Interval(-sympy.oo, r),
    (sympy.LessThan, -1): lambda r: sympy.Interval(r, sympy.oo),
    (sympy.Equality, 1): sympy.FiniteSet,
    (sympy.Equality, -1): sympy.FiniteSet,
}


def linear_set(relation: sympy.Basic, real: sympy.Symbol) -> sympy.Set | None:
    """The real solutions of a relation whose sides differ by `a x + b` with rational a != 0 and b, written down
    directly: what `relation._eval_as_set()` returns (tested), without the periodicity check and the solver it runs
    first (5 - 10 ms per relation). None for any other relation."""
    difference = relation.lhs - relation.rhs
    slope, intercept = difference.coeff(real, 1), difference.coeff(real, 0)
    if not (slope.is_Rational and intercept.is_Rational and slope != 0) or difference != slope * real + intercept:
        return None
    build = LINEAR_SETS.get((type(relation), 1 if slope > 0 else -1))
    return build(-intercept / slope) if build is not None else None


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


# What sympy's set operations raise when they cannot decide: a comparison of ends whose order is unknown (TypeError,
# "cannot determine truth value of Relational"), an invalid set (ValueError), an operation it does not implement
# (NotImplementedError). Anything else is a bug: it escapes to the verifier, which reports it as a comparison_error
# (counted, logged), never a silent "not equal".
SET_FAILURES = (TypeError, ValueError, NotImplementedError)


def same_real_set(a: object, b: object) -> bool:
    """Whether two unions of intervals describe the same set of reals (their ends compared exactly)."""
    set_a, set_b = _to_sympy_set(a), _to_sympy_set(b)
    if set_a is None or set_b is None:
        return False
    try:
        return bool(sympy.simplify(set_a.symmetric_difference(set_b)) == sympy.S.EmptySet)
    except SET_FAILURES:  # sympy's "cannot decide" on ends it cannot order or sets it cannot reduce: not shown equal
        return False


def _to_sympy_set(node: object) -> sympy.Set | None:
    interval = as_interval(node)
    if interval is not None:
        if not (isinstance(interval.low, Leaf) and isinstance(interval.high, Leaf)):
            return None
        low, high = parse_leaf(interval.low.latex), parse_leaf(interval.high.latex)
        if not all(isinstance(end, sympy.Expr) and end.is_extended_real is not False for end in (low, high)):
            return None  # `(2i, -2i)`: complex numbers are no interval of reals, so no set of real solutions
        try:
            return sympy.Interval(low, high, left_open=interval.left == "(", right_open=interval.right == ")")
        except (TypeError, ValueError):  # ends sympy cannot order
            return None
    if isinstance(node, Union):
        parts = [_to_sympy_set(p) for p in node.parts]
        return None if any(p is None for p in parts) else sympy.Union(*parts)
    return None
