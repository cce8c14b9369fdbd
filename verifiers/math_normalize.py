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

from .math_units import has_wrapped_words, split_unit

# Longest number the in-process fast path reads; longer ones go to a worker under the deadline.
MAX_FAST_NUMBER_CHARS = 60
MAX_FAST_EXPONENT = 300

SPACING = re.compile(r"(?<!\\)\\[,;:! ]|\\q?quad\b|\\displaystyle|\\left\b|\\right\b|\\middle\b|~")
TEXT_WRAPPERS = re.compile(
    r"\\(?:text|textbf|textit|textrm|textnormal|mathrm|mathbf|mathit|mbox|operatorname|boldsymbol|bm)\s*\{([^{}]*)\}"
)
FRAC_ALIASES = re.compile(r"\\[dtc]frac(?![a-zA-Z])")
FRAC_SHORT = re.compile(r"\\frac\s*(\d)\s*(\d)")
FRAC_SHORT_NUM = re.compile(r"\\frac\s*(\d)\s*\{")
FRAC_SHORT_DEN = re.compile(r"\\frac\s*(\{[^{}]*\})\s*(\d)")
SQRT_SHORT = re.compile(r"\\sqrt\s*(\[[^\[\]]*\])?\s*(\d+|[a-zA-Z])")
DEGREES = re.compile(r"\^\s*\{?\s*\\circ\s*\}?|°|\\degree\b|\\circ\b")
PERCENT = re.compile(r"(?<=[\d\s}])\s*(?:\\%|%|percentage|percent|pct)\s*$")
CURRENCY = re.compile(r"\\\$|\$|€|£|\\euro\b|\\pounds\b|\brs\.?(?=\s*\d)")
# "10,455" but not the pair "(12,102)": a comma right inside brackets separates items.
THOUSANDS = re.compile(r"(?<![\d.,(\[{])(\d{1,3})((?:,\d{3})+)(?![\d,)\]])")
SPACE_THOUSANDS = re.compile(r"-?\d{1,3}(?: \d{3})+(?:\.\d+)?")
MIXED_NUMBER = re.compile(r"(-?)(\d+)\s+(\d+)\s*/\s*(\d+)")
# `!` after a digit, a bracket, another `!` or a lone letter is a factorial; after a word (`yes!`) it is punctuation.
FACTORIAL_END = re.compile(r"(?:[\d)}\]|]|(?<![a-zA-Z\\])[a-zA-Z])!!?$")
BOLD = re.compile(r"\*\*(.+?)\*\*")
RELATION_WORDS = {"<=": r" \le ", ">=": r" \ge ", "!=": r" \ne "}
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


def _unwrap_text(text: str) -> str:
    previous = None
    while previous != text:  # nested wrappers: \text{\textbf{A}}
        previous = text
        text = TEXT_WRAPPERS.sub(r"\1", text)
    return text


def _relations(text: str) -> str:
    for plain, latex in RELATION_WORDS.items():
        text = text.replace(plain, latex)

    def command(match: re.Match) -> str:
        name = match.group(0)
        for prefix, canonical in (("\\l", "\\le"), ("\\g", "\\ge"), ("\\n", "\\ne")):
            if name.startswith(prefix):
                return {"\\lt": "<", "\\gt": ">"}.get(name, canonical) + " "
        return name

    return RELATION_COMMANDS.sub(command, text)


def _fracs_and_roots(text: str) -> str:
    text = FRAC_ALIASES.sub(r"\\frac", text)
    text = FRAC_SHORT.sub(r"\\frac{\1}{\2}", text)
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
    text = text.replace("{,}", ",").replace("\\dots", "\\ldots").replace("\\cdots", "\\ldots")
    text = re.sub(r"(\d),\\!\s*(?=\d)", r"\1,", text)
    text = SPACING.sub(" ", text)
    text = text.replace("\\(", " ").replace("\\)", " ").replace("\\[", " ").replace("\\]", " ")
    text = CURRENCY.sub(" ", text)
    text = DEGREES.sub("", text)
    wrapped_words = has_wrapped_words(_strip_punctuation(text))
    text = _unwrap_text(text)
    text = _strip_punctuation(text)
    text, percent = _strip_percent(text)
    unit = None
    if strip_units and not percent:
        stripped, unit, invalid = split_unit(text, wrapped_words)
        if invalid and not reference:
            return Normalized(text, percent, invalid)
        text = stripped  # a reference's trailing words act as its unit: a bare answer or the same words match it
        text, percent = _strip_percent(text)
    text = _relations(_fracs_and_roots(text))
    if re.search(r"\d|\\", text) and LIST_WORDS.search(text):
        alternatives = ALTERNATIVE_WORD.search(text) is not None
        text = LIST_WORDS.sub(", ", text)
        if alternatives:  # "3 or 5" names alternatives: a set, which never equals the ordered pair (3, 5)
            text = f"\\{{{_strip_punctuation(text)}\\}}"
    if re.fullmatch(r"-?0,\d+", text.strip()):  # 0,111 can only be a decimal comma
        text = text.replace(",", ".")
    text = THOUSANDS.sub(lambda m: m.group(1) + m.group(2).replace(",", ""), text)
    text = re.sub(r"\s+", " ", _strip_punctuation(text)).strip()
    if SPACE_THOUSANDS.fullmatch(text):
        text = text.replace(" ", "")
    if text.startswith("{") and balanced_close(text, 0) == len(text):  # LaTeX grouping braces: {1,3}
        text = text[1:-1].strip()
    mixed = _mixed_number(text)
    if mixed is not None:
        return Normalized(mixed.text, percent, mixed.invalid, unit)
    return Normalized(text, percent, unit=unit, text_answer=text_answer)


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


def is_integer_text(text: str) -> bool:
    return re.fullmatch(r"[+-]?\d+", text.replace(" ", "")) is not None


def as_word(text: str) -> str | None:
    """The answer as plain words ("odd", "Evelyn", "E") when it is nothing but letters and spaces, else None."""
    stripped = text.strip()
    if re.fullmatch(r"[A-Za-z]+(?: [A-Za-z]+)*", stripped):
        return stripped
    return None
