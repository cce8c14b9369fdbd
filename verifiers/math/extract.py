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
        return Extraction(contents[0], "boxed")
    # Boxes in one run ("\boxed{1}, \boxed{2}") form a list; otherwise the last run counts only if it is alone.
    runs = [[contents[0]]]
    for (_, prev_end, _), (start, _, content) in zip(boxes, boxes[1:]):
        if _is_list_gap(text[prev_end:start]):
            runs[-1].append(content.strip())
        else:
            runs.append([content.strip()])
    if len(runs) > 1 and len({", ".join(run) for run in runs}) > 1 and not trusted:
        stated = anchored_answer(text[boxes[-1][1] :])
        return Extraction(stated, "anchor") if stated else Extraction(None, "hedge")
    return Extraction(", ".join(runs[-1]), "boxed")


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
    """Whichever comes last: the last math block, or a number in the prose after it."""
    blocks = list(MATH_BLOCK.finditer(text))
    tail = text[blocks[-1].end() :] if blocks else text
    number = last_number(BROKEN_INLINE_MATH.sub(" ", tail))
    if number is not None or not blocks:
        return number
    block = next(g for g in blocks[-1].groups() if g is not None)
    return last_number(block) if looks_like_prose(block, min_words=2) else block  # "$? just about 1$"


def looks_like_prose(text: str, min_words: int = 3) -> bool:
    """At least `min_words` plain words (3+ letters, not LaTeX commands, not in `\\text{}`): a sentence."""
    plain = re.sub(r"\\(?:text|begin|end|mathrm|operatorname)\{[^{}]*\}", "", text)
    return len(PROSE_WORD.findall(plain)) >= min_words


def _answer_in_sentence(sentence: str) -> str | None:
    """The answer in the sentence after an anchor: after its last " is ", a math block, a formula, or its first number."""
    if " is " in sentence:
        sentence = sentence[sentence.rindex(" is ") + 4 :]
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
    """A multiple-choice letter among `letters`: boxed, after an anchor, leading ("B."), "(B)", or the last one."""
    plain = re.sub(r"\\(?:text|textbf|mathrm|mathbf)\{([^{}]*)\}", r"\1", text).replace("$", "")
    boxes = find_boxes(plain)
    if boxes:
        return _letter_in(boxes[-1][2], letters)
    matches = list(ANCHORS.finditer(plain))
    if matches:
        found = _letter_in(plain[matches[-1].end() :], letters)
        if found:
            return found
    leading = re.match(r"\s*\(?([A-Z])\)?(?=$|[\s.:)。,]|[^\x00-\x7f])", plain)
    if leading and leading.group(1) in letters:
        return leading.group(1)
    parenthesised = [m for m in re.finditer(r"\(([A-Z])\)", plain) if m.group(1) in letters]
    if parenthesised:
        return parenthesised[-1].group(1)
    tokens = [m.group(1) for m in LETTER_TOKEN.finditer(plain) if m.group(1) in letters]
    return tokens[-1] if tokens else None


def _letter_in(text: str, letters: str) -> str | None:
    for match in LETTER_TOKEN.finditer(text):
        if match.group(1) in letters:
            return match.group(1)
    return None


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
        return Extraction(letter, "letter") if letter else Extraction(None, "no_answer")
    finders = (
        ("anchor", anchored_answer),
        ("bare", _bare),
        ("last_block_or_number", _last_block_or_number),
    )
    for how, finder in finders:
        answer = finder(visible)
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
