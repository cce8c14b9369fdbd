"""Ratios and clock times: colon-separated answers that are not quotients. Pure string work, no sympy.

A colon never divides. Two readings are told apart by their shape:
- a clock time `h:mm` or `h:mm:ss` (minutes and seconds written with two digits, 00 - 59), with or without `AM`/`PM`,
  is a time of day, equal only to the same time (`4:30 PM` is `16:30`, never `2:15 PM`). A time without `AM`/`PM`
  whose hour is 1 - 12 is a clock reading that does not say which half of the day it is: it equals any time that
  reads the same on a 12-hour clock when it is the reference (`4:30` accepts `4:30 PM` and `16:30`), and it is not
  the answer to a reference that fixes the half (`4:30` for `4:30 PM` leaves open whether it is morning: a hedge);
- anything else with colons at bracket depth 0 (`2:3:4`, `x : y = 5 : 2`) is a ratio: an ordered tuple of terms,
  equal to another ratio with as many terms when one is a positive multiple of the other (`10:4` is `5:2`, `1:1.5`
  is `2:3`; `2:4:3`, `-2:-3`, `5:2:1` are not `2:3:4`, `2:3`, `5:2`). Rescaling is decided exactly where every term
  is a plain number; terms that are formulas are compared term by term, without rescaling. A ratio is never equal
  to a number or a fraction, in either direction (`\\frac{5}{2}` and `2.5` are not `5:2`, `\\frac16` is not
  `2:3:4`): the quotient is one number, the ratio a tuple, and reading one as the other pays permutations whose
  running quotient agrees. A shape that is both (`1:10` could be a ratio or ten past one) is read as a time, so
  `2:20` never pays for `1:10`: the strict reading, which can only refuse; against a ratio that is not one
  (`V_1 : V_2 = 7:32`) it is the ratio of the same terms, never rescaled.
"""

from __future__ import annotations

import re
from fractions import Fraction

from .structure import split_top

TIME = re.compile(
    r"(\d{1,2}):([0-5]\d)(?::([0-5]\d))?\s*(?:(a|p)\.?\s*m\b\.?)?",
    re.IGNORECASE,
)
# The canonical text of a time: a known time of day (24-hour) or a clock reading without its half of the day.
TIME_OF_DAY, CLOCK_READING = "\\mathrm{time}", "\\mathrm{clock}"
CANONICAL_TIME = re.compile(r"\\mathrm\{(time|clock)\}\((\d+),(\d+),(\d+)\)")


def canonical_time(text: str) -> str | None:
    """The canonical text of a clock time (`4:30 PM` -> `\\mathrm{time}(16,30,0)`, `4:30` ->
    `\\mathrm{clock}(4,30,0)`), or None when `text` is not one."""
    match = TIME.fullmatch(text.strip())
    if match is None:
        return None
    hour, minute, second = int(match.group(1)), int(match.group(2)), int(match.group(3) or 0)
    half = (match.group(4) or "").lower()
    if half:
        if not 1 <= hour <= 12:
            return None  # `15:00 PM` is no time
        return f"{TIME_OF_DAY}({hour % 12 + (12 if half == 'p' else 0)},{minute},{second})"
    if hour > 23:
        return None
    if hour == 0 or hour >= 13 or match.group(1).startswith("0"):  # `00:15`, `16:30`, `04:30`: 24-hour times
        return f"{TIME_OF_DAY}({hour},{minute},{second})"
    return f"{CLOCK_READING}({hour},{minute},{second})"


def times_equal(pred: re.Match, ref: re.Match) -> bool:
    (pred_kind, *pred_time), (ref_kind, *ref_time) = pred.groups(), ref.groups()
    pred_hms, ref_hms = tuple(map(int, pred_time)), tuple(map(int, ref_time))
    if pred_kind == ref_kind:
        return pred_hms == ref_hms
    if ref_kind == "time":
        return False  # the answer leaves open the half of the day that the reference fixes
    hour = pred_hms[0] % 12 or 12  # the reference is a clock reading: the answer must read the same
    return (hour, *pred_hms[1:]) == ref_hms


def clock_terms(time: re.Match) -> list[int] | None:
    """The terms of a clock reading as written (`\\mathrm{clock}(7,32,0)` -> [7, 32]); None for a time of day, which
    AM, PM or a 24-hour hour made a time and never a ratio."""
    kind, hour, minute, second = time.groups()
    if kind != "clock":
        return None
    return [int(hour), int(minute)] + ([int(second)] if int(second) else [])


def ratio_terms(text: str) -> list[str] | None:
    """The terms of a ratio (`2:3:4` -> ["2", "3", "4"]; `x : y = 5 : 2` -> ["5", "2"]), None when `text` has no
    colon at bracket depth 0. `\\colon` and `\\ratio` count as colons."""
    text = re.sub(r"\\(?:colon|ratio)(?![a-zA-Z])", ":", text)
    if ":" not in text:
        return None
    stated = split_top(text, "=")[-1]
    terms = split_top(stated, ":")
    return terms if len(terms) > 1 else None


def scaled_equal(pred: list[Fraction], ref: list[Fraction]) -> bool:
    """Whether the ratio `pred` is a positive multiple of `ref`, term by term (zero terms in the same places)."""
    if [p == 0 for p in pred] != [r == 0 for r in ref]:
        return False
    factors = {p / r for p, r in zip(pred, ref) if r != 0}
    return len(factors) <= 1 and all(factor > 0 for factor in factors)
