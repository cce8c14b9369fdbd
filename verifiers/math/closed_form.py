"""The closed-form rule of the `math` verifier: an answer holds no operation left to perform. Pure string work.

A policy that copies a "compute" question into its box (`\\boxed{17 \\times 23}` for 391, `\\boxed{\\dbinom{16}{5}}`,
`\\boxed{\\int_0^1 x^2\\,dx}` for 1/3, `0 + 7` for 7) would be paid for an answer it never computed. So:

- where the reference is an exact rational number (an integer or a fraction, each item of a tuple or list of them),
  the answer must be a number too: an integer, a decimal, a fraction of integers (`\\frac{6}{4}`, `3/2`), a mixed
  number, or scientific notation (`3 \\times 10^{5}`, `10^{6}`); arithmetic on numbers (`17 \\times 23`, `2^{10}`,
  `\\sqrt{9}`, `|-3|`) is an operation left to perform. A chain `17 \\times 23 = 391` or `x = 391` states its last
  part, which is what is checked;
- in any answer, an operation of a kind the reference does not hold is left to perform: integrals, sums, products,
  limits, derivatives, binomial coefficients, gcd and lcm, `mod`, factorials, logarithms, trigonometric functions,
  `\\max`/`\\min`, floor and ceiling (`\\sin\\frac{\\pi}{6}` for `\\frac{1}{2}`, `\\log_2 1024` for 10). A reference
  that holds the same kind of operation (`\\binom{16}{5}`, `2\\sin x\\cos x`) allows it.

Such an answer scores 0 with reason `not_simplified: <what is left>`; option `closed_form=False` of the verifier
relaxes the rule (value alone decides).
"""

from __future__ import annotations

import re

from .normalize import plain_number
from .numbers import SCIENTIFIC
from .structure import split_top

# Operations that are never a final form, whatever they are applied to.
CALCULUS: dict[str, re.Pattern] = {
    "integral": re.compile(r"\\i*int(?![a-zA-Z])|\\oint"),
    "sum": re.compile(r"\\sum(?![a-zA-Z])"),
    "product": re.compile(r"\\prod(?![a-zA-Z])"),
    "limit": re.compile(r"\\lim(?![a-zA-Z])"),
    "derivative": re.compile(
        r"\\frac\s*\{\s*(?:\\mathrm\{d\}|d|\\partial)\s*(?:\^\s*\{?\d\}?)?\s*\}|\\nabla|\\partial"
    ),
}
# Operations left to perform when applied to exact values only (`\\log_2 1024`, `5!`); on a variable they are a
# closed form (`\\max(x, 0)`, `\\sin^2 x + \\cos^2 x`, `n!`).
ON_VALUES: dict[str, re.Pattern] = {
    "binomial": re.compile(r"\\[dt]?binom(?![a-zA-Z])|\\choose(?![a-zA-Z])"),
    "gcd or lcm": re.compile(r"\\?\b(?:gcd|lcm)\b"),
    "modulo": re.compile(r"\\[bp]?mod(?![a-zA-Z])|\bmod\b"),
    "factorial": re.compile(r"!"),
    "logarithm": re.compile(r"\\(?:log|ln|lg)(?![a-zA-Z])|\b(?:log|ln)\b"),
    "trigonometric function": re.compile(r"\\(?:arc)?(?:sin|cos|tan|cot|sec|csc)h?(?![a-zA-Z])"),
    "max or min": re.compile(r"\\(?:max|min)(?![a-zA-Z])"),
    "floor or ceiling": re.compile(r"\\[lr](?:floor|ceil)(?![a-zA-Z])"),
}
POWER_OF_TEN = re.compile(r"10\^(?:\{[+-]?\d+\}|\d)")
BRACKETS = {"(": ")", "[": "]", "\\{": "\\}"}


def operation_left(pred: str, ref: str, numbers: bool = True) -> str | None:
    """What `pred` (a normalised answer) leaves to perform for the reference `ref` (normalised): the kind of
    operation, or None when it is in closed form. `numbers=False` skips the rule for rational references (an angle
    in degrees may be given in radians: `\\frac{\\pi}{6}` for `30^\\circ`)."""
    if _unbalanced(pred):
        return None  # `\\boxed{\\frac{1}{2}`: malformed, which the parser reports as unparseable
    for kind, pattern in CALCULUS.items():
        if pattern.search(pred) and not pattern.search(ref):
            return kind
    pred_items, ref_items = _items(pred), _items(ref)
    for kind, pattern in ON_VALUES.items():
        if pattern.search(pred) and not pattern.search(ref) and not any(map(_has_variable, pred_items)):
            return kind
    if numbers and len(pred_items) == len(ref_items) and all(map(_exact_rational, ref_items)):
        for item in pred_items:
            stated = _stated(item)
            if not _is_number(stated) and not _has_variable(stated):
                return "arithmetic on numbers"  # with a variable, or a relation, it is simply not the number
    return None


def _unbalanced(text: str) -> bool:
    unescaped = re.sub(r"\\[{}]", "", text)  # `\{` and `\}` are set braces, not groups
    return unescaped.count("{") != unescaped.count("}")


def _items(text: str) -> list[str]:
    """The items of a bracketed tuple or a bare list; the text itself otherwise."""
    text = text.strip()
    for opener, closer in BRACKETS.items():
        if len(text) > len(opener) + len(closer) and text.startswith(opener) and text.endswith(closer):
            inner = text[len(opener) : -len(closer)]
            if len(split_top(inner, "()[]")) > 1:
                break  # `[1, 2] \\cup [2, 3]`: the brackets do not enclose the whole answer
            items = split_top(inner, ",")
            if len(items) > 1:
                return items
    return split_top(text, ",")


def _stated(item: str) -> str:
    """The part of `a = b = c` that an answer states: its last part; `(35 + 70 = 105)` states 105 and
    `x = 1/3 \\approx 0.33` its exact side."""
    item = item.strip()
    if item.startswith("(") and item.endswith(")") and len(split_top(item[1:-1], "()")) == 1:
        item = item[1:-1]
    return split_top(item.split("\\approx")[0], "=")[-1]


def _has_variable(text: str) -> bool:
    """A letter outside LaTeX commands other than the constants `e` and `i` (`x`, `n`), or a relation: not a
    computation on exact values alone."""
    without_commands = re.sub(r"\\[a-zA-Z]+", " ", text)
    return re.search(r"[a-df-hj-zA-Z<>]", without_commands) is not None


def _exact_rational(text: str) -> bool:
    """An integer or a fraction, not written as a decimal: a decimal reference may be a rounding of an exact value
    written in closed form (`\\pi` for 3.14), which the decimal rule judges."""
    return plain_number(text) is not None and not re.search(r"\d\.|\.\d", text)


def _is_number(text: str) -> bool:
    """A number written as a number: integer, decimal, fraction of integers, mixed number, scientific notation."""
    text = text.strip()
    while len(text) > 1 and text[0] in "({" and text[-1] == {"(": ")", "{": "}"}[text[0]]:
        text = text[1:-1].strip()  # `(-3)`, `{12}`
    if plain_number(text) is not None:
        return True
    compact = text.replace(" ", "")
    return SCIENTIFIC.fullmatch(compact) is not None or POWER_OF_TEN.fullmatch(compact.lstrip("+-")) is not None
