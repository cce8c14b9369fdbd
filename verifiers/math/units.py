"""Words after a number: a unit to compare, or text that makes the answer unparseable. Pure string work, no sympy.

Normalisation never deletes a word that can change the value. A trailing word is either a unit it knows (`cm`,
`miles`, `square feet`, `\\text{ km}^2`, `km/h`), kept as the answer's canonical unit and compared with the
reference's, or it makes the answer unparseable: `10 \\text{ or more}`, `5 \\text{ at least}`, `12 \\text{ apples}`.
A single run of letters written in math right after a number (`2xy`, `3 ab`) stays math: a product of variables.
"""

from __future__ import annotations

import re

# Canonical unit -> its spellings (singular; plurals are derived).
_UNIT_SPELLINGS: dict[str, tuple[str, ...]] = {
    "mm": ("mm", "millimeter", "millimetre"),
    "cm": ("cm", "centimeter", "centimetre"),
    "m": ("m", "meter", "metre"),
    "km": ("km", "kilometer", "kilometre"),
    "in": ("in", "inch", "inches"),
    "ft": ("ft", "foot", "feet"),
    "yd": ("yd", "yard"),
    "mi": ("mi", "mile"),
    "mg": ("mg", "milligram"),
    "g": ("g", "gram", "gramme"),
    "kg": ("kg", "kilogram"),
    "lb": ("lb", "lbs", "pound"),
    "oz": ("oz", "ounce"),
    "t": ("ton", "tonne"),
    "ml": ("ml", "mL", "milliliter", "millilitre"),
    "l": ("l", "L", "liter", "litre"),
    "gal": ("gal", "gallon"),
    "qt": ("qt", "quart"),
    "cup": ("cup",),
    "s": ("s", "sec", "second"),
    "min": ("min", "minute"),
    "h": ("h", "hr", "hrs", "hour"),
    "day": ("day",),
    "week": ("week", "wk"),
    "month": ("month",),
    "year": ("year", "yr", "yrs"),
    "dollar": ("dollar", "usd"),
    "cent": ("cent", "cents", "ct"),
    "euro": ("euro", "eur"),
    "yuan": ("yuan", "rmb", "renminbi"),
    "yen": ("yen",),
    "rupee": ("rupee", "rs"),
    "deg": ("degree", "deg"),
    "rad": ("radian", "rad"),
    "unit": ("unit",),
    "mph": ("mph", "mi/h"),
    "km/h": ("km/h", "kph", "kmh"),
    "m/s": ("m/s",),
}
_POWERS = {"square": "2", "sq": "2", "sq.": "2", "cubic": "3", "cu": "3"}
_SPELLING_TO_UNIT = {spelling.lower(): unit for unit, spellings in _UNIT_SPELLINGS.items() for spelling in spellings}

# Trailing words after a number, wrapped in \text{} and the like (`5\text{ cm}^2`, `10 \text{ or more}`).
WRAPPED_WORDS = re.compile(
    r"(?<=[\d}).])\s*\\(?:text|textrm|textnormal|textit|textbf|mbox|mathrm|rm)\s*\{([^{}]*)\}\s*(\^\s*\{?\d\}?)?$"
)
# Bare trailing words (`125 miles`, `10 or more`): at most six, each a run of letters, optionally `km/h`.
BARE_WORDS = re.compile(
    r"(?<=[\d}).])(\s*)([a-zA-Z]+\.?(?:/[a-zA-Z]+)?(?:\s+[a-zA-Z]+\.?(?:/[a-zA-Z]+)?){0,5})\s*(\^\s*\{?\d\}?)?$"
)


# Words that change a number's value or hedge it: a small closed class. Any other word after a number (`6 apples`,
# `72 clips`) names what was counted and is compared like a unit.
VALUE_WORDS = frozenset(
    """or and more less fewer than at least most about approximately approx around roughly nearly almost between not
    no nor over under above below up to maximum minimum max min plus minus times per each every only exactly total
    dozen dozens score hundred hundreds thousand thousands million millions billion billions trillion trillions half
    halves third thirds quarter quarters percent squared cubed square cubic fold ish something some odd""".split()
)
ORDINAL_FRACTION = re.compile(r"(?:th|ths|ieth|ieths)$")


def counted_noun(words: str) -> str | None:
    """`apples` -> `apple`, `red apples` -> `red apple`: the words after a number when they name what was counted
    (at most three plain words, none of `VALUE_WORDS`, no ordinal such as `sevenths`); None otherwise."""
    parts = words.lower().rstrip(".").split()
    if not 1 <= len(parts) <= 3 or not all(re.fullmatch(r"[a-z]{2,}", part) for part in parts):
        return None
    if any(part in VALUE_WORDS or ORDINAL_FRACTION.search(part) for part in parts):
        return None
    return " ".join([*parts[:-1], _singular(parts[-1])])


def _singular(word: str) -> str:
    if word.endswith("ies"):
        return word[:-3] + "y"
    if word.endswith(("ches", "shes", "xes", "sses")):
        return word[:-2]
    return word[:-1] if word.endswith("s") and not word.endswith("ss") else word


def _plural_free(word: str) -> str | None:
    lower = word.lower().rstrip(".")
    for candidate in (
        lower,
        lower[:-1] if lower.endswith("s") else None,
        lower[:-2] if lower.endswith("es") else None,
    ):
        if candidate and candidate in _SPELLING_TO_UNIT:
            return _SPELLING_TO_UNIT[candidate]
    return None


def _one_unit(words: list[str]) -> str | None:
    """`["square", "feet"]` -> `ft^2`, `["miles"]` -> `mi`; None unless the words are one unit with an optional power."""
    exponent = None
    if len(words) == 2 and words[0].lower() in _POWERS:
        exponent, words = _POWERS[words[0].lower()], words[1:]
    if len(words) != 1:
        return None
    unit = _plural_free(words[0])
    return f"{unit}^{exponent}" if unit and exponent else unit


def canonical_unit(words: str, power: str | None = None) -> str | None:
    """`square feet` -> `ft^2`, `cm` + `^2` -> `cm^2`, `miles per hour` -> `mi/h`; None when a word is not a unit."""
    parts = re.split(r"\s*/\s*|\s+per\s+", words.strip())
    units = [_one_unit(part.split()) for part in parts]
    if not parts or None in units or len(units) > 2:
        return None
    joined = "/".join(units)  # type: ignore[arg-type]
    exponent = re.sub(r"[^\d]", "", power or "")
    if exponent and exponent != "1":  # the power binds to the last unit: `m/s^2` is metres per second squared
        return f"{joined}^{exponent}" if "^" not in units[-1] else None  # type: ignore[operator]
    return _SPELLING_TO_UNIT.get(joined, joined)


def has_wrapped_words(text: str) -> bool:
    """Whether the answer ends in words written as text (`5\\text{ cm}`, `10 \\text{ or more}`), before unwrapping."""
    wrapped = WRAPPED_WORDS.search(text)
    return wrapped is not None and bool(re.search(r"[a-zA-Z]", wrapped.group(1)))


def split_unit(text: str, wrapped: bool = False) -> tuple[str, str | None, str | None]:
    """(text without its unit, canonical unit or None, None), or (text without its trailing words, the words, why the
    answer is unparseable) when they are no unit. `wrapped`: the trailing words were written as text (`\\text{...}`),
    so even one short unknown word is text, not a variable."""
    bare = BARE_WORDS.search(text)
    if bare is None:
        return text, None, None
    words = bare.group(2).strip()
    single_letter = len(words.rstrip(".")) == 1 and not wrapped  # `5 m`: 5 times m
    unit = None if single_letter else canonical_unit(words, bare.group(3))
    if unit is not None:
        return text[: bare.start()].strip(), unit, None
    if wrapped or len(words.split()) > 1 or (bare.group(1) and len(words) >= 3):
        noun = counted_noun(words) if bare.group(3) is None else None
        if noun is not None:  # `6 apples`: compared like a unit, so `6 pears` is not `6 apples`
            return text[: bare.start()].strip(), f"noun:{noun}", None
        return text[: bare.start()].strip(), words.lower(), f"unparseable: trailing words {words!r}"
    return text, None, None  # `2xy`, `3 ab`: a product of variables


# A unit written as text, with braces inside it (`\\mathrm{km\\,h^{-1}}`, `\\text{m s^{-2}}`), at the end of an answer.
UNIT_WITH_POWERS = re.compile(
    r"\\(?:text|textrm|mathrm|mbox|rm)\s*\{((?:[^{}]|\{[^{}]*\})*\^(?:[^{}]|\{[^{}]*\})*)\}\s*$"
)


def unit_as_quotient(text: str) -> str:
    """A trailing unit with a negative power written as a quotient: `60 \\mathrm{km h^{-1}}` -> `60 \\text{km/h}`,
    `9.8 \\text{m s^{-2}}` -> `9.8 \\text{m/s^2}`; `\\text{m/s^{2}}` -> `\\text{m/s^2}`; anything else unchanged."""
    wrapped = UNIT_WITH_POWERS.search(text)
    if wrapped is None:
        return text
    content = re.sub(r"\^\s*\{\s*(-?)\s*(\d)\s*\}", r"^\1\2", wrapped.group(1)).strip()
    per = re.fullmatch(r"([A-Za-z]+)\s*(?:\\cdot\s*|\s+)([A-Za-z]+)\s*\^-(\d)", content)
    if per is not None:
        unit, denominator, power = per.groups()
        content = f"{unit}/{denominator}" + (f"^{power}" if power != "1" else "")
    if "{" in content or "^-" in content:
        return text
    return f"{text[: wrapped.start()]}\\text{{{content}}}"
