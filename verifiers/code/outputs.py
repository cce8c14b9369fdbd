"""How a program's stdout is compared with a stdin/stdout case's expected output, in the trainer's process.

Two rules. Lines (APPS-style rows): the lines of the output without trailing whitespace, trailing blank lines
dropped. Tokens (testlib's default checker `wcmp`, which Codeforces and Polygon use; C++ programs and rows of the
Codeforces shapes): the tokens of the whole output, separated by space, tab, CR and LF only, as testlib reads them
(a vertical tab, 0x1C or U+3000 is part of a token). Either may accept real-number tokens within a tolerance.

The candidate's output is read in the trainer's process, so every step is linear in its length and the memory is
bounded: both texts are cut into chunks of about `CHUNK_CHARS` characters at a separator and compared chunk by chunk,
so the lists of lines or tokens in memory at once hold one chunk's (an 8 MiB output of two-character tokens is 4
million of them, 200 MB as one list).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from decimal import Decimal, InvalidOperation
from itertools import compress
from operator import ne

CHUNK_CHARS = 1 << 16
# testlib's blanks (`isBlanks`): space, tab, CR and LF; each becomes a space, and tokens are what spaces separate.


def normalize_output(text: str) -> list[str]:
    """Lines without trailing spaces, trailing blank lines dropped: what competitive-programming judges compare."""
    return [line for chunk in _line_chunks(text) for line in chunk]


def wcmp_tokens(text: str) -> list[str]:
    """The tokens testlib's `wcmp` reads: separated by space, tab, CR and LF only."""
    return [token for chunk in _token_chunks(text) for token in chunk]


def outputs_match(actual: str, expected: str, float_tolerance: float | None = None, tokens: bool = False) -> bool:
    """Whether a program's stdout answers a case: the lines of `normalize_output` are equal.

    With `float_tolerance`, lines are compared token by token (whitespace-separated), and a token written as a
    decimal number (with a point or an exponent) equals an expected decimal token when both are finite numbers with
    |got - want| <= float_tolerance * max(1, |want|): the absolute-or-relative error check of judges for problems
    whose answers are real numbers. An expected integer token stays exact: only the same number, however written
    (`1000000.0`, `1e6`), equals `1000000`; `1000001`, `1.234568e11` for `123456789012` and `1e-7` for `0` do not.

    With `tokens`, the tokens of the whole output (`wcmp_tokens`) are compared and line breaks do not count, as
    testlib's default checker (`wcmp`) compares: `1 2 3` answers `1\\n2\\n3`.

    Only the tokens that differ from the expected ones as text are read as numbers (number_kind, no regular
    expression).
    """
    if tokens:
        same = _tokens_equal if float_tolerance is None else lambda a, b: _tokens_close(a, b, float_tolerance)
        return _streams_match(_token_chunks(actual), _token_chunks(expected), same)
    same = _lines_equal if float_tolerance is None else lambda a, b: _lines_close(a, b, float_tolerance)
    return _streams_match(_line_chunks(actual), _line_chunks(expected), same)


def _chunks(text: str, separator: str, split: Callable[[str], list[str]]) -> Iterator[list[str]]:
    """`split` of `text` a chunk at a time, each chunk cut just after a `separator` (a chunk without one grows)."""
    start, size = 0, CHUNK_CHARS
    while start < len(text):
        end = start + size
        if end >= len(text):
            yield split(text[start:])
            return
        cut = text.rfind(separator, start, end)
        if cut < 0:  # one unit longer than a chunk: the next try reads twice as much
            size *= 2
            continue
        yield split(text[start:cut])
        start, size = cut + 1, CHUNK_CHARS


def _line_chunks(text: str) -> Iterator[list[str]]:
    """The lines of `normalize_output`, a chunk at a time. (The text's trailing whitespace is its trailing blank lines
    and the last line's spaces.)"""
    text = text.rstrip()
    return _chunks(text, "\n", lambda part: list(map(str.rstrip, part.split("\n")))) if text else iter(())


def _token_chunks(text: str) -> Iterator[list[str]]:
    """`wcmp_tokens`, a chunk at a time (replace() is a C-level pass per blank, quick whatever the characters)."""
    spaced = text.replace("\t", " ").replace("\r", " ").replace("\n", " ")
    return _chunks(spaced, " ", lambda part: list(filter(None, part.split(" "))))


def _streams_match(got: Iterator[list[str]], want: Iterator[list[str]], same) -> bool:
    """Whether two streams of chunks hold the same units, `same(got_units, want_units)` deciding on equal-length runs
    of them (the two sides' chunks are cut at different places)."""
    a: list[str] | None = []
    b: list[str] | None = []
    i = j = 0
    while True:
        while a is not None and i == len(a):  # the next chunk that holds a unit (a chunk of blanks holds none)
            a, i = next(got, None), 0
        while b is not None and j == len(b):
            b, j = next(want, None), 0
        if a is None or b is None:
            return a is None and b is None
        n = min(len(a) - i, len(b) - j)
        if not same(a[i : i + n], b[j : j + n]):
            return False
        i, j = i + n, j + n


def _lines_equal(got: list[str], want: list[str]) -> bool:
    return got == want


def _lines_close(got: list[str], want: list[str], tolerance: float) -> bool:
    if got == want:
        return True
    if list(map(len, map(str.split, got))) != list(map(len, map(str.split, want))):  # tokens per line
        return False
    return _tokens_close(" ".join(got).split(), " ".join(want).split(), tolerance)


def _tokens_equal(got: list[str], want: list[str]) -> bool:
    return got == want


def _tokens_close(got: list[str], want: list[str], tolerance: float) -> bool:
    if got == want:
        return True
    differing = compress(zip(got, want), map(ne, got, want))
    return all(_numbers_match(a, b, tolerance) for a, b in differing)


# A number as a checker reads one: optional sign, digits with at most one point, optional exponent (digits: Unicode
# decimal digits, as the `\d` of a regular expression). Not `nan`, `inf`, `1_000` or `0x10`, which Python's float()
# accepts and a judge's checker does not. Read with str methods, in time linear in the token: the candidate's tokens
# are read in the trainer's process, where a backtracking regular expression took time quadratic in a token's length
# (`[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?` spent 3.4 s on 16,000 digits and an `x`).
INTEGER, DECIMAL = "integer", "decimal"


def number_kind(token: str) -> str | None:
    """INTEGER (`-12`), DECIMAL (`1.5`, `1.`, `.5`, `1e6`, `-2.5E-3`) or None (not a number a checker reads)."""
    body = token[1:] if token[:1] in ("+", "-") else token
    if body.isdecimal():
        return INTEGER
    cut = body.find("e")
    if cut < 0:
        cut = body.find("E")  # a token with both letters fails either way: the other one is left in a part
    if cut >= 0:
        exponent = body[cut + 1 :]
        if not (exponent[1:] if exponent[:1] in ("+", "-") else exponent).isdecimal():  # also an empty exponent
            return None
        body = body[:cut]
    whole, point, fraction = body.partition(".")
    if not point:
        return DECIMAL if cut >= 0 and whole.isdecimal() else None
    if (whole.isdecimal() or not whole) and (fraction.isdecimal() or not fraction) and (whole or fraction):
        return DECIMAL
    return None


_NUMBER_CHARS = "0123456789.eE+-"


def _numbers_match(got: str, want: str, tolerance: float) -> bool:
    """Two different tokens that are both numbers: an integer expected token needs the same number exactly, written
    as a decimal (`1e6` and `1000000.0` are 1000000; `1.234568e11` is not 123456789012, nor `1e-7` 0); an expected
    decimal token accepts a number within the tolerance. Linear in the tokens' length (str methods, Decimal, float).
    A token of ASCII number characters only is read by float() alone, which accepts exactly the ones number_kind
    accepts (`test_output_match.py` checks it): the common case costs no more than the two conversions."""
    if got.lstrip(_NUMBER_CHARS) or want.lstrip(_NUMBER_CHARS):  # another character: `nan`, `1_0`, a Unicode digit
        if number_kind(got) is None or number_kind(want) is None:
            return False
    try:
        x, y = float(got), float(want)
    except ValueError:  # `1e`, `+`, `1.2.3`
        return False
    if "." not in want and "e" not in want and "E" not in want:  # an integer: two of them that differ as text differ
        if "." not in got and "e" not in got and "E" not in got:  # (`05`, `+5`, `-0`)
            return False
        try:
            return Decimal(got) == Decimal(want)  # exact, whatever the exponent: no float rounding
        except InvalidOperation:  # an exponent beyond what a Decimal holds: no integer
            return False
    return math.isfinite(x) and math.isfinite(y) and abs(x - y) <= tolerance * max(1.0, abs(y))
