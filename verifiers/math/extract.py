"""Stage 1 of the math verifier: find the final answer in a completion (or a reference). Pure string work, no sympy.

Order of precedence, first hit wins:
1. text inside `<think>...</think>` is dropped (an unclosed `<think>` means no answer was given);
2. the last `<answer>...</answer>` block narrows the search to its content;
3. `\\boxed{}` / `\\fbox{}` (brace-balanced): one box, or several boxes that form one list (`\\boxed{1}, \\boxed{2}`);
   boxes with different contents separated by prose are a hedge;
4. a multiple-choice letter when the reference is a letter: `(B)`, `\\boxed{B}`, `\\text{(B)}`, "answer is B";
5. "final answer is" / "the answer is" / "Answer:" anchors and GSM8K `####`;
6. the last math block (`$...$`, `\\(...\\)`, `\\[...\\]`);
7. only then the last number of the text.

Every regular expression here is linear-time (no nested quantifiers): this stage runs in the trainer's process on
untrusted text, outside any deadline.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .units import canonical_unit

BOX_COMMANDS = ("\\boxed", "\\fbox")
ANCHORS = re.compile(
    r"final answer is|final answer:|the answer is|answer is|answer:|réponse est|réponse ?:|答案是|答案[:：]|####",
    re.IGNORECASE,
)
NUMBER = re.compile(
    r"\\frac\{-?\d+\}\{\d+\}|(?<![A-Za-z0-9_.])-?(?:\d{1,3}(?:,\d{3})+|\d+)?(?:\.\d+)?(?:/\d+)?(?![0-9])"
)
MATH_BLOCK = re.compile(r"\$\$(.+?)\$\$|\\\[(.+?)\\\]|\\\(([^\n]+?)\\\)|\$([^$\n]+?)\$", re.DOTALL)
PROSE_WORD = re.compile(r"(?<![\\a-zA-Z])[a-zA-Z]{3,}")
SENTENCE_END = re.compile(r"\.(?=\s|$)|\n|。")
# A choice letter standing alone: not part of a word, a command or a formula ("E*2", "x+B").
LETTER_TOKEN = re.compile(r"(?<![A-Za-z\\*^/+=_-])([A-Z])(?=$|[\s.,;:!?)]|[^\x00-\x7f])")
# Answers that name several candidates, or deny the one they name: extraction reports a hedge.
HEDGE = "hedge"
HEDGE_WORDS = re.compile(
    r"\b(?:or|either|maybe|perhaps|possibly|probably|might|could|unless|otherwise|alternatively)\b", re.IGNORECASE
)
NEGATION = re.compile(
    r"\b(?:not|never|cannot|isn't|aren't|non|pas|instead of|rather than|except)\b|n't\b|不是|不", re.IGNORECASE
)
# A negation within the last few words before a candidate denies it: "not 3", "it can't be A".
NEGATED = re.compile(f"(?:{NEGATION.pattern})" + r"\W*(?:\w+\W+){0,2}\W*$", re.IGNORECASE)
LETTER_LIST_GAP = re.compile(r"[\s,;&/()]*(?:(?:and|or|und|et|ou|或|和)[\s,;&/()]*)?", re.IGNORECASE)
CLAUSE_BREAK = re.compile(r"[,;。!?\n]|\.(?=\s|$)|\b(?:because|since|so|as|which|that)\b", re.IGNORECASE)
# Words around a box that qualify its value: "at least \boxed{7}", "\boxed{12} or more", "\ge \boxed{3}".
QUALIFIER_BEFORE = re.compile(
    r"(?:\b(?:at\s+least|at\s+most|more\s+than|less\s+than|fewer\s+than|greater\s+than|no\s+more\s+than|"
    r"no\s+less\s+than|up\s+to|over|under|below|above|not|almost|nearly)|\\[lg]e(?:q|qslant)?|(?<![\w\"'/])[<>]=?|[≤≥])"
    r"[\s$\\(\[]*$",
    re.IGNORECASE,
)
QUALIFIER_AFTER = re.compile(
    r"[\s$]*(?:\\text\{\s*)?(?:or|and)\s+(?:more|less|fewer|greater|higher|lower|above|below|over|under|up|beyond)\b"
    r"|[\s$]*(?:\\text\{\s*)?(?:at\s+(?:least|most)|or\s+so|plus|minimum|maximum|at\s+minimum|at\s+maximum)\b"
    r"|[\s$]*\+(?![\s$]*[\d\\a-zA-Z(])",
    re.IGNORECASE,
)
# A unit written after the box (`\boxed{5}\text{ cm}`, `\boxed{5} miles`): compared like one inside it.
UNIT_AFTER_BOX = re.compile(
    r"[\s$]*(?:\\(?:text|mathrm|mbox)\s*\{([^{}]*)\}|([a-zA-Z]+(?:/[a-zA-Z]+)?(?:\s+[a-zA-Z]+)?)(?=\s*(?:[.,;!?$]|$)))"
)
PLAIN_NUMBER = re.compile(r"\d+(?:\.\d+)?(?:[eE][+-]?\d+)?(?:/\d+)?")
BOXED_ANYWHERE = re.compile(r"\\(?:boxed|fbox)\s*\{([^{}]*)\}")
# The longest text between two boxes that still reads as one list: "\boxed{1}, \boxed{2} and \boxed{3}".
MAX_BOX_GAP_CHARS = 80
MAX_BOX_GAP_WORDS = 4
MAX_BARE_CHARS = 200
# An inline formula cannot span lines: "$ \n 9 \n $" is broken markup, and its numbers are not an answer.
BROKEN_INLINE_MATH = re.compile(r"(?<![\\$])\$[^$]*\n[^$]*\$|\\\([^\n]*\n.*?\\\)", re.DOTALL)
MATH_DELIMITERS = re.compile(r"(?<!\\)\$|\\\(|\\\[")
NON_LATIN = re.compile(r"[^\x00-\x7f°€£²³]")


@dataclass(frozen=True)
class Extraction:
    """The answer found (None if none) and how it was found ("boxed", "anchor", ...) or why not ("hedge", ...)."""

    answer: str | None
    how: str
    candidates: tuple[str, ...] = ()  # a hedge of boxes: what each box (or run of boxes) says


def strip_think(text: str) -> str | None:
    """Text after the last `</think>`; None when a `<think>` block is never closed (the model ran out of tokens)."""
    if "</think>" in text:
        return text[text.rindex("</think>") + len("</think>") :]
    if "<think>" in text:
        return None
    return text


def answer_tag(text: str) -> str:
    end = text.rfind("</answer>")
    start = text.rfind("<answer>", 0, end if end >= 0 else len(text))
    if start < 0:
        return text
    return text[start + len("<answer>") : end if end >= 0 else len(text)]


def balanced_group(text: str, open_at: int) -> int:
    """Index just past the `}` that closes the `{` at `open_at`; -1 if it never closes."""
    depth = 0
    i = open_at
    while i < len(text):
        ch = text[i]
        if ch == "\\":
            i += 2  # an escaped brace \{ does not count
            continue
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return -1


def find_boxes(text: str) -> list[tuple[int, int, str]]:
    """All `\\boxed{...}` / `\\fbox{...}` (and `\\boxed 5`) as (start, end, content), in order."""
    boxes = []
    pos = 0
    while True:
        hits = [(text.find(cmd, pos), cmd) for cmd in BOX_COMMANDS]
        hits = [(i, cmd) for i, cmd in hits if i >= 0]
        if not hits:
            return boxes
        start, cmd = min(hits)
        i = start + len(cmd)
        while i < len(text) and text[i] == " ":
            i += 1
        if i < len(text) and text[i] == "{":
            end = balanced_group(text, i)
            if end < 0:
                return boxes
            boxes.append((start, end, text[i + 1 : end - 1]))
        elif i > start + len(cmd):  # "\boxed 5": up to the next space or dollar
            end = i
            while end < len(text) and text[end] not in " $\n":
                end += 1
            boxes.append((start, end, text[i:end]))
        else:
            end = i
        pos = max(end, start + 1)


def _is_list_gap(gap: str) -> bool:
    """Whether the text between two boxes only joins them into a list (commas, "and", `\\quad`, dollars)."""
    if len(gap) > MAX_BOX_GAP_CHARS or any(ch.isdigit() for ch in re.sub(r"_\{?\w+\}?", "", gap)):
        return False
    words = re.sub(r"\\[a-zA-Z]+|[{}$()\[\],;.:&=\\]|_\{?\w+\}?", " ", gap).split()
    return len(words) <= MAX_BOX_GAP_WORDS


def boxed_answer(text: str, trusted: bool = False) -> Extraction | None:
    """The boxed answer. Different boxes in separate places are a hedge, unless `trusted` (a reference solution,
    which states its final answer last) or followed by an explicit "final answer" statement."""
    boxes = find_boxes(text)
    if not boxes:
        return None
    contents = [content.strip() for _, _, content in boxes]
    if len(set(contents)) == 1:
        return _unless_qualified(text, boxes[-1][0], boxes[-1][1], contents[0], trusted)
    # Boxes in one run ("\boxed{1}, \boxed{2}") form a list; otherwise the last run counts only if it is alone.
    runs = [[contents[0]]]
    alternatives = [False]  # boxes joined by "or" are alternatives: a set, never an ordered pair
    for (_, prev_end, _), (start, _, content) in zip(boxes, boxes[1:]):
        gap = text[prev_end:start]
        if _is_list_gap(gap):
            runs[-1].append(content.strip())
            alternatives[-1] = alternatives[-1] or bool(HEDGE_WORDS.search(gap))
        else:
            runs.append([content.strip()])
            alternatives.append(False)
    if len(runs) > 1 and len({", ".join(run) for run in runs}) > 1 and not trusted:
        stated = anchored_answer(text[boxes[-1][1] :])
        if stated == HEDGE or not stated:  # paid only if every box says the reference: `\frac12` ... `0.5`
            return Extraction(None, "hedge", tuple(dict.fromkeys(", ".join(run) for run in runs)))
        return Extraction(stated, "anchor")
    joined = ", ".join(runs[-1])
    answer = f"\\{{{joined}\\}}" if alternatives[-1] else joined
    first_of_run = boxes[len(boxes) - len(runs[-1])][0]
    return _unless_qualified(text, first_of_run, boxes[-1][1], answer, trusted)


def _unless_qualified(text: str, start: int, end: int, answer: str, trusted: bool) -> Extraction:
    """The boxed `answer`, unless the words around its box qualify it ("at least \\boxed{7}", "\\boxed{12} or more":
    a qualifier outside the box changes the value as much as one inside) or the text after it offers another
    candidate ("\\boxed{3}. It could also be 5."): a hedge."""
    if trusted:
        return Extraction(answer, "boxed")
    before, after = text[max(0, start - 40) : start], text[end:]
    if QUALIFIER_BEFORE.search(before) or QUALIFIER_AFTER.match(after):
        return Extraction(None, "unparseable: qualified answer")
    unit = UNIT_AFTER_BOX.match(after)
    if (
        unit
        and canonical_unit(next(g for g in unit.groups() if g is not None))
        and not re.search(r"[a-zA-Z]}?$", answer)
    ):
        answer = f"{answer}\\text{{ {next(g for g in unit.groups() if g is not None).strip()}}}"  # compared as units
    rest = BOXED_ANYWHERE.sub(r" \1 ", after).replace("$", " ")
    ends = [m.end() for m in SENTENCE_END.finditer(rest)]
    rest = rest[: ends[2]] if len(ends) > 2 else rest  # the box's sentence and the next one
    others = set(PLAIN_NUMBER.findall(rest)) - set(PLAIN_NUMBER.findall(answer))
    if others and HEDGE_WORDS.search(rest):
        return Extraction(None, "hedge")
    return Extraction(answer, "boxed")


def _first_sentence(segment: str) -> str:
    """Up to the first sentence end outside math delimiters."""
    depth_dollar = False
    i = 0
    while i < len(segment):
        ch = segment[i]
        if ch == "$":
            depth_dollar = not depth_dollar
        elif not depth_dollar:
            match = SENTENCE_END.match(segment, i)
            if match and not (ch == "." and i + 1 < len(segment) and segment[i + 1].isdigit()):
                return segment[:i]
        i += 1
    return segment


def math_blocks(text: str) -> list[str]:
    return [next(g for g in m.groups() if g is not None) for m in MATH_BLOCK.finditer(text)]


def all_numbers(text: str) -> list[str]:
    return [m.group(0) for m in NUMBER.finditer(text) if any(c.isdigit() for c in m.group(0))]


def last_number(text: str) -> str | None:
    numbers = all_numbers(text)
    return numbers[-1] if numbers else None


def _last_block_or_number(text: str) -> str | None:
    """Whichever comes last: the last math block, or a number in the prose after it; `HEDGE` when its sentence
    offers another candidate ("it could be 3 or 5", "$x = 3$ or $x = 5$", "not 3 but 5")."""
    blocks = list(MATH_BLOCK.finditer(text))
    tail = text[blocks[-1].end() :] if blocks else text
    numbers = list(NUMBER.finditer(BROKEN_INLINE_MATH.sub(lambda m: " " * len(m.group(0)), tail)))
    numbers = [m for m in numbers if any(c.isdigit() for c in m.group(0))]
    if numbers or not blocks:
        if not numbers:
            return None
        sentence = _sentence_at(text, len(text) - len(tail) + numbers[-1].start())
        return _affirmed(sentence, _candidates(sentence)) or numbers[-1].group(0)
    sentence = _sentence_at(text, blocks[-1].start())
    settled = _affirmed(sentence, _candidates(sentence))
    if settled is not None:
        return settled
    block = next(g for g in blocks[-1].groups() if g is not None)
    return last_number(block) if looks_like_prose(block, min_words=2) else block  # "$? just about 1$"


def _sentence_at(text: str, position: int) -> str:
    """The sentence holding `position`: from the sentence end before it (outside math) to the one after it."""
    outside = MATH_BLOCK.sub(lambda m: "$" * len(m.group(0)), text)  # same length, sentence ends in math hidden
    start = 0
    for match in SENTENCE_END.finditer(outside, 0, position):
        start = match.end()
    after = SENTENCE_END.search(outside, position)
    return text[start : after.start() if after else len(text)]


def _candidates(sentence: str) -> list[tuple[int, int, str]]:
    """Math blocks and the numbers outside them, as (start, end, text), in order."""
    found = [(m.start(), m.end(), next(g for g in m.groups() if g is not None)) for m in MATH_BLOCK.finditer(sentence)]
    masked = MATH_BLOCK.sub(lambda m: " " * len(m.group(0)), sentence)
    found += [
        (m.start(), m.end(), m.group(0)) for m in NUMBER.finditer(masked) if any(c.isdigit() for c in m.group(0))
    ]
    return sorted(found)


def _affirmed(sentence: str, candidates: list[tuple[int, int, str]]) -> str | None:
    """`HEDGE` when the sentence offers different candidates with a hedge ("or", "maybe", "could") or denies every
    candidate ("it is not 5"); the last candidate it does not deny when it denies some ("not 10, which is 1000.99",
    "5, not 3"); None when it does neither (the usual rules pick the answer)."""
    masked = MATH_BLOCK.sub(lambda m: " " * len(m.group(0)), sentence)
    ends = [0] + [end for _, end, _ in candidates]
    gaps = [masked[previous_end:start] for previous_end, (start, _, _) in zip(ends, candidates)]
    several = len({text.replace(" ", "") for _, _, text in candidates}) > 1
    if several and any(HEDGE_WORDS.search(gap) for gap in gaps):
        return HEDGE
    denied = [NEGATED.search(gap) is not None for gap in gaps]
    if not any(denied):
        return None
    kept = [text for (_, _, text), no in zip(candidates, denied) if not no]
    return kept[-1] if kept else HEDGE


def looks_like_prose(text: str, min_words: int = 3) -> bool:
    """At least `min_words` plain words (3+ letters, not LaTeX commands, not in `\\text{}`): a sentence."""
    plain = re.sub(r"\\(?:text|begin|end|mathrm|operatorname)\{[^{}]*\}", "", text)
    return len(PROSE_WORD.findall(plain)) >= min_words


def _answer_in_sentence(sentence: str) -> str | None:
    """The answer in the sentence after an anchor: after its last " is ", a math block, a formula, or its first number."""
    if " is " in sentence:
        sentence = sentence[sentence.rindex(" is ") + 4 :]
    if looks_like_prose(sentence, min_words=1):
        settled = _affirmed(sentence, _candidates(sentence))
        if settled is not None:
            return settled
    blocks = math_blocks(sentence)
    if blocks:
        return " , ".join(blocks) if len(blocks) > 1 and not looks_like_prose(sentence) else blocks[-1]
    sentence = sentence.strip().strip("*").strip()
    if sentence and not looks_like_prose(sentence) and not NON_LATIN.search(sentence):
        return sentence
    numbers = all_numbers(sentence)
    return numbers[0] if numbers else None


def anchored_answer(text: str) -> str | None:
    matches = list(ANCHORS.finditer(text))
    if not matches:
        return None
    segment = text[matches[-1].end() :].lstrip(" :*\t\n")
    return _answer_in_sentence(_first_sentence(segment)) or None


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
        return HEDGE if len(boxed) > 1 else (last.group(1) if last else None)
    matches = list(ANCHORS.finditer(plain))
    if matches:
        found = _first_letter(plain, letters, matches[-1].end())
        if found:
            return _unless_hedged(plain, found.start(1), letters, found.group(1))
    leading = re.match(r"\s*\(?([A-Z])\)?(?=$|[\s.:)。,]|[^\x00-\x7f])", plain)
    if leading and leading.group(1) in letters:
        return _unless_hedged(plain, leading.start(1), letters, leading.group(1))
    parenthesised = [m for m in re.finditer(r"\(([A-Z])\)", plain) if m.group(1) in letters]
    if parenthesised:
        return _unless_hedged(plain, parenthesised[-1].start(1), letters, parenthesised[-1].group(1))
    tokens = [m for m in LETTER_TOKEN.finditer(plain) if m.group(1) in letters]
    return _unless_hedged(plain, tokens[-1].start(1), letters, tokens[-1].group(1)) if tokens else None


def _first_letter(text: str, letters: str, start: int = 0) -> re.Match | None:
    return next((m for m in LETTER_TOKEN.finditer(text, start) if m.group(1) in letters), None)


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
    found = [(m.start(1), m.end(1), m.group(1)) for m in LETTER_TOKEN.finditer(clause) if m.group(1) in letters]
    if len({name for _, _, name in found}) < 2 and not NEGATION.search(clause):
        return letter
    chosen = _affirmed(clause, found)
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


def extract_answer(text: str, letters: str | None = None, trusted: bool = False) -> Extraction:
    """The final answer of a completion. `letters` (e.g. "ABCDE") switches on multiple-choice extraction;
    `trusted` (for references) reads several boxes as the last one instead of a hedge."""
    visible = strip_think(text)
    if visible is None:
        return Extraction(None, "unclosed_think")
    visible = answer_tag(visible)
    boxed = boxed_answer(visible, trusted)
    if boxed is not None and (boxed.answer is None or not letters):
        return boxed
    if letters:
        letter = letter_answer(visible, letters)
        if letter == HEDGE:
            return Extraction(None, "hedge")
        return Extraction(letter, "letter") if letter else Extraction(None, "no_answer")
    finders = (
        ("anchor", anchored_answer),
        ("bare", _bare),
        ("last_block_or_number", _last_block_or_number),
    )
    for how, finder in finders:
        answer = finder(visible)
        if answer == HEDGE:
            return Extraction(None, "hedge")
        if answer and answer.strip():
            return Extraction(answer.strip(), how)
    return Extraction(None, "no_answer")


def _bare(text: str) -> str | None:
    """A short completion that is only a formula (`\\frac{1}{2}`, `(2,4)`) is its own answer."""
    text = text.strip()
    if len(text) > MAX_BARE_CHARS or "\n" in text or NON_LATIN.search(text) or MATH_DELIMITERS.search(text):
        return None
    if len(re.findall(r"(?<![\\a-zA-Z])[a-zA-Z]{2,}", re.sub(r"\\text\{[^{}]*\}", "", text))) > 2:
        return None  # prose
    return text


def extract_reference(reference: str) -> Extraction:
    """The answer inside a reference: a bare answer as is; a worked solution through its box or anchor."""
    text = reference.strip()
    for marker in ("<answer>", "\\boxed", "\\fbox", "####"):
        if marker in text:
            return extract_answer(text, trusted=True)
    if looks_like_prose(text) and ANCHORS.search(text):
        return extract_answer(text, trusted=True)
    return Extraction(text, "bare") if text else Extraction(None, "empty_reference")
