"""Stage 2 of the math verifier: turn an extracted answer into canonical LaTeX. Pure string work, no sympy.

Removes what does not change the value: math delimiters, spacing commands, `\\left`/`\\right`, `\\text{}` wrappers,
trailing units and punctuation, degrees, currency, thousands separators, bold markdown; rewrites `\\dfrac`/`\\tfrac`,
`\\frac12`, `\\sqrt3`, `<=`, and plain-text mixed numbers (`4 4/9` -> `\\frac{40}{9}`). A per-cent sign is removed and
remembered in `Normalized.percent` (the comparison decides what it means). `plain_number` reads the numbers that
need no parser, so the verifier can decide them in-process.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

from .ratios import canonical_time
from .structure import split_top
from .units import has_wrapped_words, split_unit, unit_as_quotient
from .wrappers import number_from_words, ordinal_number, plain_text_math, stated_number, undecorated

# Longest number the in-process fast path reads; longer ones go to a worker under the deadline.
MAX_FAST_NUMBER_CHARS = 60
MAX_FAST_EXPONENT = 300

SPACING = re.compile(r"(?<!\\)\\[,;:! ]|\\q?quad\b|\\displaystyle|\\left\b|\\right\b|\\middle\b|~")
TEXT_WRAPPERS = re.compile(
    r"\\(?:text|textbf|textit|textrm|textnormal|mathrm|mathbf|mathit|mbox|operatorname|boldsymbol|bm)\s*\{([^{}]*)\}"
)
NAMED_FUNCTION = re.compile(r"\\(?:operatorname|mathrm|text)\s*\{\s*(lcm|gcd)\s*\}")
UNICODE_ROOT = re.compile(r"([√∛∜])\s*(?:\{([^{}]*)\}|\(([^()]*)\)|(\d+(?:\.\d+)?|[a-zA-Z]|\\pi(?![a-zA-Z])))")
ROOT_INDEX = {"√": "", "∛": "[3]", "∜": "[4]"}
# Every sign a model writes for math, as LaTeX (a command ends at a non-letter, so no space is needed before one).
UNICODE_SIGNS = {"π": "\\pi", "∞": "\\infty", "×": "\\times", "✕": "\\times", "÷": "\\div", "·": "\\cdot",
                 "⋅": "\\cdot", "∙": "\\cdot", "−": "-", "–": "-", "‒": "-", "－": "-", "﹣": "-", "＋": "+", "±": "\\pm",
                 "∓": "\\mp", "≤": "\\le", "⩽": "\\le", "≥": "\\ge", "⩾": "\\ge", "≠": "\\ne", "≈": "\\approx",
                 "∈": "\\in", "∉": "\\notin", "∪": "\\cup", "∩": "\\cap", "∅": "\\emptyset", "θ": "\\theta",
                 "α": "\\alpha", "β": "\\beta", "∠": "\\angle", "⁄": "/", "∕": "/", "ⅈ": "i"}  # fmt: skip
SUPERSCRIPTS = dict(zip("⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺⁽⁾ⁿ", "0123456789-+()n"))
SUBSCRIPTS = dict(zip("₀₁₂₃₄₅₆₇₈₉₋₊", "0123456789-+"))
SCRIPT_RUN = re.compile(f"[{''.join(SUPERSCRIPTS)}]+|[{''.join(SUBSCRIPTS)}]+")
VULGAR_FRACTIONS = {"½": (1, 2), "⅓": (1, 3), "⅔": (2, 3), "¼": (1, 4), "¾": (3, 4), "⅕": (1, 5), "⅖": (2, 5),
                    "⅗": (3, 5), "⅘": (4, 5), "⅙": (1, 6), "⅚": (5, 6), "⅐": (1, 7), "⅛": (1, 8), "⅜": (3, 8),
                    "⅝": (5, 8), "⅞": (7, 8), "⅑": (1, 9), "⅒": (1, 10)}  # fmt: skip
UNICODE_MATH = re.compile(
    "[" + "".join([*UNICODE_SIGNS, *ROOT_INDEX, *SUPERSCRIPTS, *SUBSCRIPTS, *VULGAR_FRACTIONS]) + "]"
)
REALS = re.compile(r"\\mathbb\s*\{?\s*R\s*\}?|ℝ")
EMPTY_SET = re.compile(r"\\varnothing\b|\\emptyset\b|^\s*\\\{\s*\\\}\s*$|^\s*\{\s*\}\s*$")
SET_BUILDER = re.compile(r"\\\{\s*([a-zA-Z])\s*(?:\\in\s*\(-\\infty, \\infty\))?\s*(?:\\mid|\||:)(.+)\\\}")
REPEATING = re.compile(r"([+-]?)(\d*)\.(\d*)(?:\\overline\{(\d+)\}|(?:\\ldots|\.\.\.|…))")
FRAC_ALIASES = re.compile(r"\\[dtc]frac(?![a-zA-Z])")
# `\\frac12`, `\\frac1x`, `\\frac ab`: one-character arguments (a letter after the command needs a space).
FRAC_SHORT = re.compile(r"\\frac(?:\s*(\d)|\s+([a-zA-Z]))\s*(\d|[a-zA-Z](?![a-zA-Z]))")
FRAC_SHORT_NUM = re.compile(r"\\frac\s*(\d)\s*\{")
FRAC_SHORT_DEN = re.compile(r"\\frac\s*(\{[^{}]*\})\s*(\d|[a-zA-Z](?![a-zA-Z]))")
SQRT_SHORT = re.compile(r"\\sqrt\s*(\[[^\[\]]*\])?\s*(\d+|[a-zA-Z])")
DEGREES = re.compile(r"\^\s*\{?\s*\\circ\s*\}?|°|\\degree\b|\\circ\b")
PERCENT = re.compile(r"(?<=[\d\s}])\s*(?:\\%|%|percentage|percent|pct)\s*$")
CURRENCY = re.compile(r"\\\$|\$|€|£|\\textdollar\b|\\euro\b|\\pounds\b|\brs\.?(?=\s*\d)")
# A currency sign is the answer's unit (`\\$1250` is not `1250 \\text{ cents}`).
CURRENCY_UNITS = ((re.compile(r"\\\$|\\textdollar\b"), "dollar"), (re.compile(r"€|\\euro\b"), "euro"))
IMAGINARY_UNIT = re.compile(r"\\(?:mathrm|text|mathit)\s*\{\s*([ie])\s*\}")
# "10,455" but not the pair "(12,102)": a comma right inside brackets separates items.
THOUSANDS = re.compile(r"(?<![\d.,(\[{])(\d{1,3})((?:,\d{3})+)(?![\d,)\]])")
SPACE_THOUSANDS = re.compile(r"-?\d{1,3}(?: \d{3})+(?:\.\d+)?")
MIXED_NUMBER = re.compile(r"(-?)(\d+)\s+(\d+)\s*/\s*(\d+)")
# `!` after a digit, a bracket, another `!` or a lone letter is a factorial; after a word (`yes!`) it is punctuation.
FACTORIAL_END = re.compile(r"(?:[\d)}\]|]|(?<![a-zA-Z\\])[a-zA-Z])!!?$")
BOLD = re.compile(r"\*\*(.+?)\*\*")
RELATION_WORDS = {"<=": r" \le ", ">=": r" \ge ", "!=": r" \ne "}
# `\\not=` is `\\ne` and `\\not\\in` is `\\notin`; any other `\\not` negates a relation no comparison reads.
NEGATED_RELATION = re.compile(r"\\not\s*(=|\\in(?![a-zA-Z]))")
RELATION_COMMANDS = re.compile(r"\\(?:leqslant|leq|le)\b|\\(?:geqslant|geq|ge)\b|\\(?:neq|ne)\b|\\lt\b|\\gt\b")
LIST_WORDS = re.compile(r"\s*(?:\\text\{\s*(?:and|or)\s*\}|\b(?:and|or)\b)\s*")
ALTERNATIVE_WORD = re.compile(r"\\text\{\s*or\s*\}|\bor\b")
NUMBER_TEXT = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
INT_FRACTION = re.compile(r"([+-]?)(?:(\d+)\s*)?\\frac\{(\d+)\}\{(\d+)\}|([+-]?\d+)\s*/\s*(\d+)")


@dataclass(frozen=True)
class Normalized:
    """Canonical LaTeX of an answer. percent: it carried a per-cent sign. invalid: why it can never be right.
    unit: its canonical unit (`cm^2`, `mi`), compared with the other side's when both have one. text_answer: the
    whole answer was written as text (`\\text{no}`): its letters form words, not a product of variables."""

    text: str
    percent: bool = False
    invalid: str | None = None
    unit: str | None = None
    text_answer: bool = False
    degrees: bool = False  # written in degrees (`30^\\circ`): equal to radians in pi (`\\frac{\\pi}{6}`)


def _unwrap_text(text: str) -> str:
    text = NAMED_FUNCTION.sub(r"\\\1", text)  # \operatorname{lcm}(4, 6) is the function, not the letters l, c, m
    previous = None
    while previous != text:  # nested wrappers: \text{\textbf{A}}
        previous = text
        text = TEXT_WRAPPERS.sub(r"\1", text)
    return text


VECTOR = re.compile(r"\\begin\{([pbB]?matrix)\}(.*)\\end\{\1\}", re.S)


def _vector_as_tuple(text: str) -> str:
    """A whole answer that is one column or one row of a matrix (`\\begin{pmatrix}1\\\\2\\\\3\\end{pmatrix}`) is
    the vector `(1, 2, 3)`: a tuple written as a column, as MATH writes its vectors. Determinants (`vmatrix`) and
    matrices of more than one row and column stay matrices."""
    vector = VECTOR.fullmatch(text.strip())
    if vector is None:
        return text
    rows = [[cell.strip() for cell in row.split("&")] for row in re.split(r"\\\\", vector.group(2)) if row.strip()]
    if len(rows) >= 2 and all(len(row) == 1 for row in rows):
        entries = [row[0] for row in rows]
    elif len(rows) == 1 and len(rows[0]) >= 2:
        entries = rows[0]
    else:
        return text
    return "(" + ", ".join(entries) + ")" if all(entries) else text


def _list_words(text: str) -> str:
    """ "and"/"or" between items as commas; between groups that have commas of their own (`p = 5, q = 2 \\text{ and }
    p = 7, q = 2`) as the semicolon that separates solutions; "or" alone names alternatives, a set, which never equals
    the ordered pair (`3 or 5` is not `(3, 5)`)."""
    parts = LIST_WORDS.split(text)
    if len(parts) > 1 and all(len(split_top(part, ",")) > 1 for part in parts):
        return "; ".join(part.strip() for part in parts)
    alternatives = ALTERNATIVE_WORD.search(text) is not None
    text = LIST_WORDS.sub(", ", text)
    return f"\\{{{_strip_punctuation(text)}\\}}" if alternatives else text


def unicode_to_latex(text: str) -> str:
    """Every math sign a model writes in Unicode as LaTeX: `−7` is -7, `2√3` is `2\\sqrt{3}`, `∛8`, `3π`, `x²`,
    `10⁵`, `x⁻¹`, `½` and `2½`, `×`, `÷`, `·`, `≤`, `≠`, `∈`, `∪`, the en dash as a minus. Text without them is
    returned unchanged (the common case costs one scan)."""
    if UNICODE_MATH.search(text) is None:
        return text
    for sign, (num, den) in VULGAR_FRACTIONS.items():
        text = text.replace(sign, f"\\frac{{{num}}}{{{den}}}")
    text = SCRIPT_RUN.sub(_script, text)
    for sign, latex in UNICODE_SIGNS.items():
        if sign in text:
            spaced = latex + " " if latex[-1].isalpha() else latex
            text = re.sub(re.escape(sign) + "(?=[a-zA-Z])", lambda _, r=spaced: r, text).replace(sign, latex)
    return UNICODE_ROOT.sub(
        lambda m: f"\\sqrt{ROOT_INDEX[m.group(1)]}{{{m.group(2) or m.group(3) or m.group(4)}}}", text
    )


def _script(match: re.Match) -> str:
    run = match.group(0)
    if run[0] in SUPERSCRIPTS:
        return "^{" + "".join(SUPERSCRIPTS[ch] for ch in run) + "}"
    return "_{" + "".join(SUBSCRIPTS[ch] for ch in run) + "}"


def _unicode_and_named_sets(text: str) -> str:
    """Unicode math as LaTeX (`unicode_to_latex`); `\\mathbb{R}` as the interval of all reals; every empty-set
    sign as `\\emptyset`."""
    text = unicode_to_latex(text)
    text = REALS.sub(r"(-\\infty, \\infty)", text)
    return EMPTY_SET.sub(r"\\emptyset", text)


def _set_builder(text: str) -> str:
    """`\\{x \\mid x > 2\\}` and `\\{x \\in \\mathbb{R} : x > 2\\}` state the condition `x > 2`."""
    match = SET_BUILDER.fullmatch(text.strip())
    if match is None or not re.search(rf"(?<![a-zA-Z\\]){match.group(1)}(?![a-zA-Z])", match.group(2)):
        return text
    return match.group(2).strip()


def _repeating_decimal(text: str) -> str:
    """`0.\\overline{3}`, `0.1\\overline{6}`, `0.333\\ldots`, `0.142857142857...` as the exact fraction they
    write; an ellipsis repeats the shortest block that the written digits end with at least twice."""
    match = REPEATING.fullmatch(text.replace(" ", ""))
    if match is None:
        return text
    sign, whole, digits = match.group(1), match.group(2) or "0", match.group(3)
    if match.group(4) is not None:
        fixed, period = digits, match.group(4)
    else:
        period_length = next((p for p in range(1, len(digits) // 2 + 1) if digits[-p:] * 2 == digits[-2 * p :]), 0)
        if period_length == 0:
            return text
        fixed, period = digits[: -2 * period_length], digits[-period_length:]
        while fixed.endswith(period):
            fixed = fixed[: -len(period)]
    value = Fraction(int(whole)) + Fraction(
        int(fixed + period) - int(fixed or "0"), 10 ** len(fixed) * (10 ** len(period) - 1)
    )
    return f"{sign}\\frac{{{value.numerator}}}{{{value.denominator}}}"


def _relations(text: str) -> str:
    for plain, latex in RELATION_WORDS.items():
        text = text.replace(plain, latex)
    text = NEGATED_RELATION.sub(lambda m: " \\ne " if m.group(1) == "=" else " \\notin ", text)

    def command(match: re.Match) -> str:
        name = match.group(0)
        for prefix, canonical in (("\\l", "\\le"), ("\\g", "\\ge"), ("\\n", "\\ne")):
            if name.startswith(prefix):
                return {"\\lt": "<", "\\gt": ">"}.get(name, canonical) + " "
        return name

    return RELATION_COMMANDS.sub(command, text)


def _fracs_and_roots(text: str) -> str:
    text = FRAC_ALIASES.sub(r"\\frac", text)
    text = FRAC_SHORT.sub(lambda m: f"\\frac{{{m.group(1) or m.group(2)}}}{{{m.group(3)}}}", text)
    text = FRAC_SHORT_NUM.sub(r"\\frac{\1}{", text)
    text = FRAC_SHORT_DEN.sub(r"\\frac\1{\2}", text)
    return SQRT_SHORT.sub(lambda m: f"\\sqrt{m.group(1) or ''}{{{m.group(2)}}}", text)


def _strip_punctuation(text: str) -> str:
    """Trailing `.`, `,`, `!` (not a factorial: `n!`, `5!!` keep theirs), `\\.`, a lone `\\`, a leading `=`; an
    ellipsis (`1, 2, 3, ...`) is kept."""
    previous = None
    while previous != text:
        previous = text
        text = text.strip()
        factorial = FACTORIAL_END.search(text) is not None  # `5!`, `n!`, `(n+1)!`, `7!!`: not an exclamation
        if text[-1:] in (".", ",", ";", ":", "!", "?") and not text.endswith("..") and not factorial:
            text = text[:-1]
        text = re.sub(r"\\[.,]?$", "", text) if not text.endswith("\\\\") else text
        if text.startswith("="):
            text = text[1:]
    return text.strip()


def _mixed_number(text: str) -> Normalized | None:
    """`4 4/9` -> 40/9; a proper fraction is required, so `11 7/6` or `4 4/0` is an invalid answer, not 11."""
    match = MIXED_NUMBER.fullmatch(text)
    if match is None:
        return None
    sign, whole, num, den = match.group(1), int(match.group(2)), int(match.group(3)), int(match.group(4))
    if den == 0 or num >= den:
        return Normalized(text, invalid="invalid_mixed_number")
    value = whole * den + num
    return Normalized(f"{sign}\\frac{{{value}}}{{{den}}}")


def normalize_answer(answer: str, strip_units: bool = True, reference: bool = False) -> Normalized:
    """Canonical LaTeX for one extracted answer (see the module docstring for the rules). Unknown trailing words make
    an answer invalid, and are kept as the unit of a `reference` (which is trusted: `17 \\text{ any text}`)."""
    text = BOLD.sub(r"\1", answer).replace("\n", " ").replace("\r", " ")
    text_answer = TEXT_WRAPPERS.fullmatch(text.strip()) is not None
    if "matrix" not in text and "array" not in text:  # answers copied from JSON or code: \\frac -> \frac
        text = re.sub(r"\\\\(?=[a-zA-Z])", r"\\", text)
    text = re.sub(r"\s*\{\s*,\s*\}\s*", ",", text).replace("\\dots", "\\ldots").replace("\\cdots", "\\ldots")
    text = plain_text_math(undecorated(text))  # `\boxed{\boxed{5}}`, `\hspace{1em}`, `sqrt(2)`
    text = IMAGINARY_UNIT.sub(r"\1", _unicode_and_named_sets(text))  # `3+4\\mathrm{i}`
    text = re.sub(r"(\d),\\!\s*(?=\d)", r"\1,", text)
    text = unit_as_quotient(SPACING.sub(" ", text))  # `\mathrm{km\,h^{-1}}`: km/h
    text = text.replace("\\(", " ").replace("\\)", " ").replace("\\[", " ").replace("\\]", " ")
    currency = next((unit for sign, unit in CURRENCY_UNITS if sign.search(text)), None)
    text = CURRENCY.sub(" ", text)
    degrees = DEGREES.search(text) is not None
    text = DEGREES.sub("", text)
    wrapped_words = has_wrapped_words(_strip_punctuation(text))
    text = _unwrap_text(text)
    text = _vector_as_tuple(_strip_punctuation(text))
    time = canonical_time(text)
    if time is not None:  # `4:30 PM`: a time of day, not a quotient and not a number with a unit
        return Normalized(time, text_answer=text_answer)
    text, percent = _strip_percent(text)
    unit = None
    if strip_units and not percent:
        stripped, unit, invalid = split_unit(text, wrapped_words)
        if invalid and not reference:
            return Normalized(text, percent, invalid)
        text = stripped  # a reference's trailing words act as its unit: a bare answer or the same words match it
        text, percent = _strip_percent(text)
    unit = unit or currency or ("deg" if degrees else None)
    text = _relations(_fracs_and_roots(text))
    if re.search(r"\\not(?![a-zA-Z])", text):
        return Normalized(text, percent, "unparseable: negated relation", unit)
    if re.search(r"\d|\\", text) and LIST_WORDS.search(text):
        text = _list_words(text)
    if re.fullmatch(r"-?0,\d+", text.strip()):  # 0,111 can only be a decimal comma
        text = text.replace(",", ".")
    text = THOUSANDS.sub(lambda m: m.group(1) + m.group(2).replace(",", ""), text)
    text = re.sub(r"\s+", " ", _strip_punctuation(text)).strip()
    if SPACE_THOUSANDS.fullmatch(text):
        text = text.replace(" ", "")
    while text.startswith("{") and balanced_close(text, 0) == len(text):  # LaTeX grouping braces: {1,3}, {{12}}
        text = text[1:-1].strip()
    spelled = number_from_words(text) if re.fullmatch(r"[A-Za-z][A-Za-z\s-]*\.?", text) else None
    spelled = spelled or ordinal_number(text)  # "the 3rd", "the third": a position
    if spelled is not None:  # "twenty-four", "a million", "one half", `\\text{twelve}`
        text = spelled
    text = _repeating_decimal(_set_builder(stated_number(text, lambda part: plain_number(part) is not None)))
    mixed = _mixed_number(text)
    if mixed is not None:
        return Normalized(mixed.text, percent, mixed.invalid, unit)
    return Normalized(text, percent, unit=unit, text_answer=text_answer, degrees=degrees or unit == "deg")


def balanced_close(text: str, open_at: int) -> int:
    """Index just past the brace closing the one at `open_at`; -1 if it never closes."""
    depth = 0
    for i in range(open_at, len(text)):
        if text[i] == "{" and (i == 0 or text[i - 1] != "\\"):
            depth += 1
        elif text[i] == "}" and (i == 0 or text[i - 1] != "\\"):
            depth -= 1
            if depth == 0:
                return i + 1
    return -1


def _strip_percent(text: str) -> tuple[str, bool]:
    stripped = PERCENT.sub("", text)
    return stripped.strip(), stripped != text


def plain_number(text: str) -> Fraction | None:
    """The exact value of a plain number (`-12`, `0.5`, `1e-7`, `3/4`, `\\frac{3}{4}`, `2\\frac{1}{2}`), else None.

    Bounded in length and exponent so that it is safe to run outside a deadline.
    """
    text = text.replace(" ", "")
    if not text or len(text) > MAX_FAST_NUMBER_CHARS:
        return None
    if NUMBER_TEXT.fullmatch(text):
        exponent = re.search(r"[eE]([+-]?\d+)$", text)
        if exponent and abs(int(exponent.group(1))) > MAX_FAST_EXPONENT:
            return None
        return Fraction(text)
    match = INT_FRACTION.fullmatch(text)
    if match is None:
        return None
    if match.group(5) is not None:
        num, den, whole, sign = int(match.group(5)), int(match.group(6)), 0, 1
    else:
        sign = -1 if match.group(1) == "-" else 1
        whole, num, den = int(match.group(2) or 0), int(match.group(3)), int(match.group(4))
    if den == 0:
        return None
    return sign * (whole + Fraction(num, den))


def as_word(text: str) -> str | None:
    """The answer as plain words ("odd", "Evelyn", "E") when it is nothing but letters and spaces, else None."""
    stripped = text.strip()
    if re.fullmatch(r"[A-Za-z]+(?: [A-Za-z]+)*", stripped):
        return stripped
    return None
