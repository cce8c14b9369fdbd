"""The in-process fast path of the `math` verifier: decisions that need no sympy (identical strings, two plain numbers,
two words, a word against a number, times and ratios), and the pairs of texts that a per-cent sign or degrees call
for."""

from __future__ import annotations

from .normalize import Normalized, as_word, plain_number
from .numbers import Tolerance, plain_numbers_equal
from .ratios import CANONICAL_TIME, clock_terms, ratio_terms, scaled_equal, times_equal

# Two-letter English words an answer may be: never a product of two variables (`no` is not `on`).
TWO_LETTER_WORDS = frozenset("no on or of is it if in an as at to up us we so do go be by he me my".split())


def degree_pairs(pred: Normalized, ref: Normalized) -> list[tuple[str, str]]:
    """An angle in degrees against one in radians written with pi: `30^\\circ` is `\\frac{\\pi}{6}`."""
    if pred.degrees and not ref.degrees and "\\pi" in ref.text:
        return [(f"\\frac{{\\pi}}{{180}} \\cdot ({pred.text})", ref.text)]
    if ref.degrees and not pred.degrees and "\\pi" in pred.text:
        return [(pred.text, f"\\frac{{\\pi}}{{180}} \\cdot ({ref.text})")]
    return []


def percent_pairs(pred: Normalized, ref: Normalized, percent: str) -> list[tuple[str, str]]:
    """The (prediction, reference) texts to compare under option `percent` when a side carried a per-cent sign."""

    def hundredth(text: str) -> str:
        value = plain_number(text)
        return f"{value / 100}" if value is not None else f"\\frac{{{text}}}{{100}}"

    if percent == "strip" or pred.percent == ref.percent:
        return [(pred.text, ref.text)]
    if percent == "fraction":
        return [
            (hundredth(pred.text) if pred.percent else pred.text, hundredth(ref.text) if ref.percent else ref.text)
        ]
    scaled = (hundredth(pred.text), ref.text) if pred.percent else (pred.text, hundredth(ref.text))
    return [(pred.text, ref.text), scaled]


def fast_compare(pred: str, ref: str, tolerance: Tolerance, text: bool = False) -> bool | None:
    """True/False when decidable in microseconds without sympy; None when a worker must decide. `text`: one side
    was written as text (`\\text{no}`), so its letters are a word, not a product of variables."""
    if pred.replace(" ", "") == ref.replace(" ", ""):
        return True
    a, b = plain_number(pred), plain_number(ref)
    if a is not None and b is not None:
        return plain_numbers_equal(a, b, pred, ref, tolerance)
    word_a, word_b = as_word(pred), as_word(ref)
    if word_a is not None and word_b is not None:
        if len(word_a) == 1 or len(word_b) == 1:  # single letters: E (a choice) is not e (Euler's number)
            return word_a == word_b
        text = text or bool({word_a.lower(), word_b.lower()} & TWO_LETTER_WORDS)
        if word_a != word_b and sorted(word_a) == sorted(word_b) and len(word_a) <= 2 and not text:
            return None  # `ab` and `ba`, written in math, are products of variables: sympy decides
        return word_a.lower() == word_b.lower()  # words (3+ letters, or written as text) are compared as text
    if (word_a is not None) != (word_b is not None) and (a is not None or b is not None):
        return None if "e" in (word_a, word_b) else False  # a word against a number; Euler's e: sympy decides
    return None


def shape_verdict(pred: str, ref: str) -> bool | tuple[str, str] | None:
    """The verdict on two normalised answers when either is a clock time or a ratio (`ratios`): True or False, or
    the pair of texts (ordered tuples of the terms) that a worker compares term by term; None when neither is one."""
    times = CANONICAL_TIME.fullmatch(pred.strip()), CANONICAL_TIME.fullmatch(ref.strip())
    if times[0] is not None and times[1] is not None:
        return times_equal(times[0], times[1])
    pred_terms, ref_terms = ratio_terms(pred), ratio_terms(ref)
    if times[0] is not None or times[1] is not None:
        # A clock reading (`7:32`, no AM/PM) against a ratio (`V_1 : V_2 = 7:32`): the same terms, never rescaled.
        reading = clock_terms(times[0] or times[1])  # type: ignore[arg-type]
        other = ref_terms if times[0] is not None else pred_terms
        return reading is not None and other is not None and [plain_number(t) for t in other] == reading
    if pred_terms is None and ref_terms is None:
        return None
    if pred_terms is None or ref_terms is None or len(pred_terms) != len(ref_terms):
        return False  # a ratio is never a number, a fraction or a ratio of another length
    if not all(pred_terms) or not all(ref_terms):
        return False  # an empty term (`2::3`): malformed
    pred_values, ref_values = [plain_number(t) for t in pred_terms], [plain_number(t) for t in ref_terms]
    if None not in pred_values and None not in ref_values:
        return scaled_equal(pred_values, ref_values)  # type: ignore[arg-type]
    return f"({', '.join(pred_terms)})", f"({', '.join(ref_terms)})"
