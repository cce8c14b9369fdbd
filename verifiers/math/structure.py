"""Stage 3a of the math verifier: split a normalised answer into its structure. Pure string work, no sympy.

An answer is a tree of
- `Seq(kind, items)`: "list" (bare `a, b`; order-free), "tuple" (`(a, b, c)`; ordered), "set" (`\\{a, b\\}`);
- `Interval(left, low, high, right)`: `[a, b)`, `(a, b]`, `[a, b]` (a bare `(a, b)` is a 2-tuple that may also
  stand for an open interval: the comparison decides from the other side);
- `Union(parts)`: parts joined by `\\cup`;
- `Relation(parts, ops)`: `a = b`, `x \\le 5`, `-2 \\le x < 7`, `x = 1 = y`;
- `Leaf(latex)`: one expression (number, formula, matrix), parsed later by latex2sympy.
`x \\in S` becomes S; `a \\pm b` becomes the list `a + b, a - b`. Splitting happens only at bracket depth 0.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

OPENERS = {"(": ")", "[": "]", "{": "}"}
CLOSERS = set(")]}")
RELATION_OPS = re.compile(r"\\le\b|\\ge\b|\\ne\b|<|>|=|\\approx\b")


@dataclass(frozen=True)
class Leaf:
    latex: str


@dataclass(frozen=True)
class Seq:
    kind: str
    items: tuple


@dataclass(frozen=True)
class Interval:
    left: str
    low: object
    high: object
    right: str


@dataclass(frozen=True)
class Union:
    parts: tuple


@dataclass(frozen=True)
class Relation:
    parts: tuple
    ops: tuple


def _depth_scan(text: str):
    """Yield (index, depth) for every character; `\\{` `\\}` and `\\begin..\\end` count as brackets."""
    depth = 0
    i = 0
    while i < len(text):
        if text.startswith("\\begin", i):
            depth += 1
        elif text.startswith("\\end", i):
            depth -= 1
        ch = text[i]
        if ch == "\\" and i + 1 < len(text) and text[i + 1] in "{}":
            if text[i + 1] == "{":
                depth += 1
                yield i, depth
            else:
                yield i, depth
                depth -= 1
            i += 2
            continue
        if ch in OPENERS:
            depth += 1
        elif ch in CLOSERS:
            depth -= 1
            yield i, depth + 1
            i += 1
            continue
        yield i, depth
        i += 1


def split_top(text: str, separators: str) -> list[str]:
    """Split at characters in `separators` that sit at bracket depth 0."""
    if not any(separator in text for separator in separators):  # nothing to split: skip the scan
        return [text.strip()]
    pieces, start = [], 0
    for i, depth in _depth_scan(text):
        if depth == 0 and text[i] in separators and not (i > 0 and text[i - 1] == "\\"):
            pieces.append(text[start:i])
            start = i + 1
    pieces.append(text[start:])
    return [p.strip() for p in pieces]


def _top_level_spans(text: str, pattern: re.Pattern) -> list[re.Match]:
    depth_at = {i: d for i, d in _depth_scan(text)}
    return [m for m in pattern.finditer(text) if depth_at.get(m.start(), 1) == 0]


def _split_pattern(text: str, pattern: re.Pattern) -> tuple[list[str], list[str]]:
    if pattern.search(text) is None:  # nothing to split: skip the depth scan
        return [text.strip()], []
    matches = _top_level_spans(text, pattern)
    parts, ops, start = [], [], 0
    for m in matches:
        parts.append(text[start : m.start()].strip())
        ops.append(m.group(0))
        start = m.end()
    parts.append(text[start:].strip())
    return parts, ops


def _outer_brackets(text: str) -> tuple[str, str, str] | None:
    """(opener, inner, closer) when one bracket pair encloses the whole text."""
    if text.startswith("\\{") and text.endswith("\\}"):
        opener, inner, closer = "\\{", text[2:-2], "\\}"
    elif text[:1] in "([" and text[-1:] in ")]":
        opener, inner, closer = text[0], text[1:-1], text[-1]
    else:
        return None
    # The bracket opened first must close at the very end: "(x-2)(x+2)" is not enclosed.
    for i, depth in _depth_scan(text):
        if depth == 1 and (text[i] in CLOSERS or text.startswith("\\}", i)):
            return (opener, inner, closer) if i == len(text) - len(closer) else None
    return None


@functools.lru_cache(maxsize=4096)
def parse_structure(text: str) -> object:
    """The structure tree of a normalised answer (see the module docstring); immutable, so kept per text (a reference
    is compared with every answer of its group)."""
    text = text.strip()
    groups = [group for group in split_top(text, ";") if group]
    if len(groups) > 1 and any(len(split_top(group, ",")) > 1 for group in groups):
        # "p=5, q=2; p=7, q=2": semicolons separate solutions, commas the parts of one solution
        return Seq("list", tuple(Seq("tuple", tuple(parse_structure(i) for i in split_top(g, ","))) for g in groups))
    items = [item for item in split_top(text, ",;") if item]
    if len(items) > 1:
        return Seq("list", tuple(parse_structure(item) for item in items))
    if not items:
        return Leaf("")
    text = items[0]
    member = _split_pattern(text, re.compile(r"\\in\b"))[0]
    if len(member) == 2 and member[1]:
        return parse_structure(member[1])
    union, _ = _split_pattern(text, re.compile(r"\\cup\b"))
    if len(union) > 1:
        return Union(tuple(parse_structure(part) for part in union))
    parts, ops = _split_pattern(text, RELATION_OPS)
    if len(parts) > 1 and all(parts):
        return _relation(parts, ops)
    return _bracketed(text) or _plus_minus(text)


def _relation(parts: list[str], ops: list[str]) -> object:
    if "\\approx" in ops:  # "x \approx 3" names a value; "1/3 \approx 0.33" keeps the exact side
        first = ops.index("\\approx")
        if first == 0 and is_name(parts[0]):
            return parse_structure(" ".join(p + " " + o for p, o in zip(parts[1:], ops[1:])) + " " + parts[-1])
        parts, ops = parts[: first + 1], ops[:first]
        if not ops:
            return parse_structure(parts[0])
    return Relation(tuple(parse_structure(p) for p in parts), tuple(ops))


def _bracketed(text: str) -> object | None:
    outer = _outer_brackets(text)
    if outer is None:
        return None
    opener, inner, closer = outer
    items = split_top(inner, ",;")
    if opener == "\\{":
        return Seq("set", tuple(parse_structure(item) for item in items if item))
    if len(items) == 1:
        return parse_structure(inner) if opener == "(" and closer == ")" else None
    if len(items) == 2 and (opener, closer) != ("(", ")"):
        return Interval(opener, parse_structure(items[0]), parse_structure(items[1]), closer)
    return Seq("tuple", tuple(parse_structure(item) for item in items))


def _plus_minus(text: str) -> object:
    if text.count("\\pm") == 1:
        plus, minus = text.replace("\\pm", "+"), text.replace("\\pm", "-")
        return Seq("list", (Leaf(plus.strip()), Leaf(minus.strip())))
    return Leaf(text)


NAME_CORE = re.compile(r"(?:\\[a-zA-Z]+|[a-zA-Z{}|:/' ])+")


def is_name(text: str) -> bool:
    """Whether `text` names a quantity (`x`, `a_{37}`, `f(x)`, `|AB|`, `A:B`, `\\frac{NO}{BO}`, `(p,q)`), so that
    `name = value` states the value: letters only, digits allowed in subscripts and function arguments."""
    text = text.strip()
    outer = _outer_brackets(text)
    if outer is not None and outer[0] == "(":
        return all(is_name(item) for item in split_top(outer[1], ","))
    core = re.sub(r"_\{[^{}]*\}|_\w|(?<=[a-zA-Z}])\([^()]*\)", "", text)
    return NAME_CORE.fullmatch(core) is not None and re.search(r"[a-zA-Z]", core.replace("\\frac", "")) is not None
