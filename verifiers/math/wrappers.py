"""What surrounds a value without changing it, and math written in plain text. Pure string work, no sympy.

- box-like wrappers (`\\boxed{\\boxed{5}}`, `\\fbox`, `\\framebox[2cm]{5}`), an `\\underbrace{5}_{\\text{total}}` or
  `\\overbrace` with its label, `\\hspace{1em}`, `\\textstyle`, and the invisible delimiters `\\left.` `\\right.`
  render the value alone;
- `sqrt(2)` and `pi/2` in plain text are `\\sqrt{2}` and `\\frac{\\pi}{2}`'s LaTeX (`\\sqrt{2}`, `\\pi/2`);
- an equation chain without variables that ends in a plain number (`4 \\times 5 - 2 = 18`, `\\binom{6}{2} = 15`)
  states that number, as `17 \\times 23 = 391` does.
"""

from __future__ import annotations

import re

from .structure import split_top

BOX_LIKE = re.compile(r"\\(?:boxed|fbox|framebox)\s*(?:\[[^\]]*\]\s*)*\{")
BRACED_LABEL = re.compile(r"\\(?:underbrace|overbrace)\s*\{")
LABEL_AFTER = re.compile(r"\s*[_^]\s*[^\s{]|\s*[_^]\s*\{")
NOTHING_RENDERED = re.compile(
    r"\\[hv]space\*?\s*\{[^{}]*\}|\\(?:text|script|scriptscript)style(?![a-zA-Z])|\\left\s*\.|\\right\s*\."
)
PLAIN_SQRT = re.compile(r"(?<![\\a-zA-Z])sqrt\s*\(")
PLAIN_PI = re.compile(r"(?<![\\a-zA-Z])pi(?![a-zA-Z])")
RELATION_SIGNS = re.compile(r"\\(?:le|ge|ne|approx|lt|gt)\b|[<>]")


def _group_end(text: str, open_at: int, opener: str = "{", closer: str = "}") -> int:
    """Index just past the bracket that closes the one at `open_at`; -1 if it never closes."""
    depth = 0
    for i in range(open_at, len(text)):
        if text[i] == opener and text[i - 1 : i] != "\\":
            depth += 1
        elif text[i] == closer and text[i - 1 : i] != "\\":
            depth -= 1
            if depth == 0:
                return i + 1
    return -1


def _unwrap(text: str, command: re.Pattern, drop_label: bool) -> str:
    """`text` with every `command{X}` (and the `_{label}` after it, with `drop_label`) replaced by X."""
    match = command.search(text)
    while match is not None:
        end = _group_end(text, match.end() - 1)
        if end < 0:
            return text
        inner, rest = text[match.end() : end - 1], text[end:]
        label = LABEL_AFTER.match(rest) if drop_label else None
        if label is not None:
            close = _group_end(rest, label.end() - 1) if rest[label.end() - 1] == "{" else label.end()
            rest = rest[max(close, label.end()) :]
        text = text[: match.start()] + inner + rest
        match = command.search(text, match.start())
    return text


def undecorated(text: str) -> str:
    """The value without box-like wrappers, labelled braces and what renders nothing."""
    if "\\" not in text:
        return text
    text = _unwrap(_unwrap(text, BOX_LIKE, drop_label=False), BRACED_LABEL, drop_label=True)
    return NOTHING_RENDERED.sub(" ", text)


def plain_text_math(text: str) -> str:
    """`sqrt(2)` as `\\sqrt{2}` and a standalone `pi` as `\\pi`."""
    if "sqrt" in text:
        match = PLAIN_SQRT.search(text)
        while match is not None:
            end = _group_end(text, match.end() - 1, "(", ")")
            if end < 0:
                break
            text = f"{text[: match.start()]}\\sqrt{{{text[match.end() : end - 1]}}}{text[end:]}"
            match = PLAIN_SQRT.search(text, match.start() + 1)
    return PLAIN_PI.sub(r"\\pi ", text) if "pi" in text else text


def stated_number(text: str, is_number) -> str:
    """The plain number an equation chain without variables ends in (`4 \\times 5 - 2 = 18` -> `18`); `text`
    otherwise. `is_number(part)` says whether a part is a plain number."""
    if "=" not in text or RELATION_SIGNS.search(text):
        return text
    parts = split_top(text, "=")
    if len(parts) < 2 or not all(parts) or not is_number(parts[-1]):
        return text
    if re.search(r"[a-zA-Z]", re.sub(r"\\[a-zA-Z]+", " ", " ".join(parts[:-1]))):
        return text  # `x = 5`, `f(2) = 5`: a name and its value, which the comparison reads
    return parts[-1]


UNITS = "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen".split()
TENS = {word: 10 * (i + 2) for i, word in enumerate("twenty thirty forty fifty sixty seventy eighty ninety".split())}
SCALES = {"hundred": 100, "thousand": 1000, "million": 10**6, "billion": 10**9}
FRACTION_WORDS = {"half": 2, "halves": 2, "third": 3, "thirds": 3, "quarter": 4, "quarters": 4, "fourth": 4,
                  "fourths": 4, "fifth": 5, "fifths": 5}  # fmt: skip


def number_from_words(text: str) -> str | None:
    """The number a whole answer spells ("twenty-four" -> "24", "a million" -> "1000000", "one half" -> "1/2",
    "three quarters" -> "3/4"), or None when `text` is anything but number words."""
    words = re.sub(r"[\s-]+", " ", text.strip().lower().rstrip(".")).split()
    if not words or len(words) > 8:
        return None
    if len(words) == 2 and words[1] in FRACTION_WORDS:  # "one half", "a third", "three quarters"
        numerator = 1 if words[0] in ("a", "an") else _whole_number(words[:1])
        plural = words[1].endswith("s")
        if numerator is None or plural == (numerator == 1):
            return None  # "one halves", "three quarter": not a fraction as written
        return f"{numerator}/{FRACTION_WORDS[words[1]]}"
    value = _whole_number(words)
    return None if value is None else str(value)


ORDINAL_WORDS = {word: i + 1 for i, word in enumerate(
    "first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth".split()
)}  # fmt: skip
ORDINAL_NUMERAL = re.compile(r"(?:the\s+)?(\d+)(st|nd|rd|th)\.?", re.IGNORECASE)


def ordinal_number(text: str) -> str | None:
    """The position an ordinal answer names ("the 3rd", "21st", "the third" -> "3"), or None. A word needs "the":
    "a third" and "third" alone may be the fraction 1/3; a numeral needs its own suffix ("3th" is not 3rd)."""
    numeral = ORDINAL_NUMERAL.fullmatch(text.strip())
    if numeral is not None:
        value, suffix = int(numeral.group(1)), numeral.group(2).lower()
        expected = "th" if 10 <= value % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(value % 10, "th")
        return str(value) if suffix == expected else None
    words = text.strip().lower().rstrip(".").split()
    if len(words) == 2 and words[0] == "the" and words[1] in ORDINAL_WORDS:
        return str(ORDINAL_WORDS[words[1]])
    return None


def _whole_number(words: list[str]) -> int | None:
    """ "twenty four", "a hundred and five", "two million": the whole number, or None."""
    if words[:1] in (["a"], ["an"]) and len(words) > 1 and words[1] in SCALES:
        words = ["one", *words[1:]]
    total, current, seen = 0, 0, False
    for word in words:
        if word in UNITS:
            current, seen = current + UNITS.index(word), True
        elif word in TENS:
            current, seen = current + TENS[word], True
        elif word == "hundred" and seen:
            current *= 100
        elif word in SCALES and seen:
            total, current = total + current * SCALES[word], 0
        elif word != "and" or not seen:
            return None
    return total + current if seen else None
