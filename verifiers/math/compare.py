"""Stage 3b of the math verifier: decide whether two answer structures are equal, with sympy.

Runs inside a deadline worker (it parses untrusted LaTeX and calls sympy). Rules:
- lists and sets are order-free, tuples ordered; a bare list against a tuple is compared in order;
- intervals need the same bracket types; a pair `(a, b)` equals the open interval `(a, b)`;
- relations (equations, inequalities, `name = value`) follow `relations`;
- leaves are parsed by `parse` and compared by `expressions` (numbers by the rules of `numbers`).
"""

from __future__ import annotations

import re

from .expressions import expressions_equal
from .numbers import Tolerance
from .parse import TooLargeError, UnparseableError, parse_leaf
from .refute import UNPROVEN_NONSMOOTH, declined
from .relations import as_interval, same_real_set, with_relation
from .structure import Interval, Leaf, Relation, Seq, Union, parse_structure

WORD = re.compile(r"[A-Za-z]{3,}")


def leaves_equal(a: Leaf, b: Leaf, tol: Tolerance) -> bool:
    if a.latex == b.latex:
        return True
    if WORD.fullmatch(a.latex) and WORD.fullmatch(b.latex):  # `(dog, 1)` is not `(god, 1)`: words, not products
        return a.latex.lower() == b.latex.lower()
    return expressions_equal(parse_leaf(a.latex), parse_leaf(b.latex), tol, a.latex, b.latex)


def _unordered_equal(a: tuple, b: tuple, tol: Tolerance) -> bool:
    """Set equality: every item of `a` equals some item of `b` and vice versa (repeats do not count). Each pair is
    compared at most once: the second direction reuses what the first found (a comparison is deterministic)."""
    known: dict[tuple[int, int], bool] = {}

    def equal(i: int, j: int) -> bool:
        if (i, j) not in known:
            known[i, j] = _safe_equal(a[i], b[j], tol)
        return known[i, j]

    rows, columns = range(len(a)), range(len(b))
    return all(any(equal(i, j) for j in columns) for i in rows) and all(
        any(equal(i, j) for i in rows) for j in columns
    )


def _safe_equal(a: object, b: object, tol: Tolerance) -> bool:
    try:
        return structures_equal(a, b, tol)
    except (UnparseableError, TooLargeError):
        return False


def structures_equal(pred: object, ref: object, tol: Tolerance) -> bool:
    """Whether the predicted structure equals the reference structure (see the module docstring)."""
    if isinstance(pred, Relation) or isinstance(ref, Relation):
        return with_relation(pred, ref, tol, structures_equal)
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
    if isinstance(pred, Union) and isinstance(ref, Union) and _unordered_equal(pred.parts, ref.parts, tol):
        return True
    if isinstance(pred, (Union, Interval)) and isinstance(ref, (Union, Interval)):
        return same_real_set(pred, ref)  # `[1, 2] \cup [2, 3]` is `[1, 3]`
    if isinstance(pred, Leaf) and isinstance(ref, Leaf):
        return leaves_equal(pred, ref, tol)
    if isinstance(pred, Seq) and pred.kind == "list" and isinstance(ref, Leaf):
        return all(structures_equal(item, ref, tol) for item in pred.items)  # one value in two forms: `\frac12, 0.5`
    return False


def _intervals_equal(pred: object, ref: object, tol: Tolerance) -> bool:
    a, b = as_interval(pred), as_interval(ref)
    if a is None or b is None or (a.left, a.right) != (b.left, b.right):
        return False
    return structures_equal(a.low, b.low, tol) and structures_equal(a.high, b.high, tol)


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
        unproven = declined()
        try:
            if structures_equal(parse_structure(pred), ref_structure, tol):
                return True, "symbolic"
            if declined() > unproven:  # equal at every sampled point, but a non-smooth piece needed a proof
                reason = UNPROVEN_NONSMOOTH
        except (UnparseableError, TooLargeError) as exc:
            try:
                _parse_all_leaves(ref_structure)
            except (UnparseableError, TooLargeError) as ref_exc:
                return None, f"unusable_reference: {ref_exc}"
            reason = f"{'unparseable' if isinstance(exc, UnparseableError) else 'too_large'}: {exc}"
    return False, reason


def compare_all_task(groups: list[list[tuple[str, str]]], rel_tol: float, abs_tol: float) -> tuple[bool | None, str]:
    """Worker entry point for several candidate answers (a hedge of boxes): equal only when every group of
    (prediction, reference) pairs is equal, as `compare_task` decides each."""
    for pairs in groups:
        equal, reason = compare_task(pairs, rel_tol, abs_tol)
        if not equal:
            return equal, reason
    return True, "symbolic"
