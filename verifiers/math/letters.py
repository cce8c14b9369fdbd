"""Multiple-choice answers: the letter a completion chooses, and the letter a reference names. Pure string work.

A letter is read boxed, after an anchor, leading ("B."), parenthesised, or last; a capital A or I that opens a
sentence before a lower-case word is an article or a pronoun ("A quick check"), never a choice. The answer is a
hedge when it names several letters ("(A) or (C)", `\\boxed{A, C}`), or when the next sentences name another with
doubt or a retraction ("B, though it could also be D", "\\boxed{B} On reflection it might be D").
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from .boxes import find_boxes
from .prose import (
    ANCHORS,
    CLAUSE_BREAK,
    FINAL_LABEL,
    FINAL_LABEL_WINDOW,
    HEDGE,
    NEGATION,
    RETRACTION,
    affirmed,
    through_sentences,
)

# A choice letter standing alone: not part of a word, a command or a formula ("E*2", "x+B").
LETTER_TOKEN = re.compile(r"(?<![A-Za-z\\*^/+=_-])([A-Z])(?=$|[\s.,;:!?)]|[^\x00-\x7f])")
DOUBT_WORDS = re.compile(
    r"\b(?:either|maybe|perhaps|possibly|probably|might|could|also|alternatively)\b", re.IGNORECASE
)
LETTER_LIST_GAP = re.compile(r"[\s,;&/()]*(?:(?:and|or|und|et|ou|或|和)[\s,;&/()]*)?", re.IGNORECASE)


def letter_answer(text: str, letters: str) -> str | None:
    """A multiple-choice letter among `letters`: boxed, after an anchor, leading ("B."), "(B)", or the last one.
    `HEDGE` when the answer names several letters (`\\boxed{A, C}`, "(A) or (C)", "either B or D") or negates its
    letter ("not A but C")."""
    plain = re.sub(r"\\(?:text|textbf|mathrm|mathbf)\{([^{}]*)\}", r"\1", text).replace("$", "")
    boxes = find_boxes(plain)
    if boxes:
        boxed = {
            m.group(1) for _, _, content in boxes for m in LETTER_TOKEN.finditer(content) if m.group(1) in letters
        }
        last = _first_letter(boxes[-1][2], letters)
        last_box_letters = {m.group(1) for m in _letter_tokens(boxes[-1][2], letters)}
        if len(boxed) > 1:
            gap = plain[boxes[-2][1] : boxes[-1][0]] if len(boxes) > 1 else ""
            settled = FINAL_LABEL.search(gap[-FINAL_LABEL_WINDOW:]) or (
                RETRACTION.search(gap) and not DOUBT_WORDS.search(gap)
            )
            if not settled or len(last_box_letters) > 1:
                return HEDGE  # "**Final Answer:** \\boxed{B}" or a correction settles it; otherwise a hedge
        return _unless_doubted_after(plain, boxes[-1][1], letters, last.group(1)) if last else None
    matches = list(ANCHORS.finditer(plain))
    if matches:
        found = _first_letter(plain, letters, matches[-1].end())
        if found:
            return _chosen(plain, found.start(1), letters, found.group(1))
    leading = re.match(r"\s*\(?([A-Z])\)?(?=$|[\s.:)。,]|[^\x00-\x7f])", plain)
    if leading and leading.group(1) in letters and not _is_article(plain, leading.start(1)):
        return _chosen(plain, leading.start(1), letters, leading.group(1))
    parenthesised = [m for m in re.finditer(r"\(([A-Z])\)", plain) if m.group(1) in letters]
    if parenthesised:
        return _chosen(plain, parenthesised[-1].start(1), letters, parenthesised[-1].group(1))
    tokens = list(_letter_tokens(plain, letters))
    return _chosen(plain, tokens[-1].start(1), letters, tokens[-1].group(1)) if tokens else None


def _chosen(text: str, position: int, letters: str, letter: str) -> str:
    chosen = _unless_hedged(text, position, letters, letter)
    return chosen if chosen == HEDGE else _unless_doubted_after(text, position + 1, letters, chosen)


def _unless_doubted_after(text: str, position: int, letters: str, letter: str) -> str:
    """`HEDGE` when the next sentences name another letter with doubt ("B, though it could also be D", "C. But A
    might be right too", "\\boxed{B} On reflection it might be D"); the letter a retraction ends on ("\\boxed{B}. Wait,
    that's wrong: the correct value is A." chooses A)."""
    after = through_sentences(text[position:], 2)
    others = {m.group(1) for m in _letter_tokens(after, letters)} - {letter}
    if not others:
        return letter
    if DOUBT_WORDS.search(after):
        return HEDGE  # a plain "or" may join denied letters: "D, it can't be A or B"
    retraction = RETRACTION.search(after)
    if retraction:
        corrected = {m.group(1) for m in _letter_tokens(after, letters, retraction.end())}
        return corrected.pop() if len(corrected) == 1 else HEDGE
    return letter


def _is_article(text: str, position: int) -> bool:
    """ "A quick check", "I think": a capital A or I that starts a sentence and is followed by a lower-case word."""
    if text[position] not in "AI" or not re.match(r" [a-z]", text[position + 1 : position + 3]):
        return False
    return re.search(r"(?:^|[.!?:\n])\s*$", text[:position]) is not None


def _letter_tokens(text: str, letters: str, start: int = 0) -> Iterator[re.Match]:
    for match in LETTER_TOKEN.finditer(text, start):
        if match.group(1) in letters and not _is_article(text, match.start(1)):
            yield match


def _first_letter(text: str, letters: str, start: int = 0) -> re.Match | None:
    return next(_letter_tokens(text, letters, start), None)


def _clause(text: str, position: int) -> str:
    """The clause of `text` around `position`: between the nearest breaks (punctuation, "because", "but", "so")."""
    start = 0
    for match in CLAUSE_BREAK.finditer(text, 0, position):
        start = match.end()
    after = CLAUSE_BREAK.search(text, position + 1)
    return text[start : after.start() if after else len(text)]


def _unless_hedged(text: str, position: int, letters: str, letter: str) -> str:
    """The letter its clause affirms: `letter`, the other one in "not A but C", or `HEDGE` when the clause offers
    several ("A or C", "A and C") or denies every one."""
    if _listed_with_another(text, position, letters, letter):
        return HEDGE  # "(A), (C)": a list of letters, split into clauses by its commas
    clause = _clause(text, position)
    found = [(m.start(1), m.end(1), m.group(1)) for m in _letter_tokens(clause, letters)]
    if len({name for _, _, name in found}) < 2 and not NEGATION.search(clause):
        return letter
    chosen = affirmed(clause, found)
    if chosen is None and len({name for _, _, name in found}) > 1:
        return HEDGE  # "A and C": two letters for one answer
    return chosen if chosen is not None else letter


def _listed_with_another(text: str, position: int, letters: str, letter: str) -> bool:
    """Whether another letter stands right before or after this one, with only list punctuation between."""
    for match in LETTER_TOKEN.finditer(text):
        if match.group(1) in letters and match.group(1) != letter:
            low, high = sorted((match.start(1), position))
            if LETTER_LIST_GAP.fullmatch(text[low + 1 : high]):
                return True
    return False


def reference_letter(reference: str) -> str | None:
    """The choice letter when a reference names one: "B", "(B)", "B.", "(D) Alina", "C Cecile", `\\text{(C)}`."""
    plain = re.sub(r"\\(?:text|textbf|mathrm)\{([^{}]*)\}", r"\1", reference).replace("$", "").strip()
    match = re.fullmatch(r"\(?([A-Z])\)?(?:[.:)]?\s+\S.*|[.:)])?", plain, re.DOTALL)
    if match and re.match(r"\(?[A-Z]\)?\s+[^A-Z(]", plain) and not re.match(r"[A-Z][.:)]", plain):
        return None  # "A + B", "C = 5": a formula, not a choice
    return match.group(1) if match else None
