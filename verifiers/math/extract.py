"""Stage 1 of the math verifier: find the final answer in a completion (or a reference). Pure string work, no sympy.

The text is first read as rendered (`rendering`). Then, first hit wins:
1. text inside `<think>...</think>` is dropped (an unclosed `<think>` means no answer was given);
2. the last `<answer>...</answer>` block narrows the search to its content; a JSON object's "answer" or
   "final_answer" field is the answer (`json_answer`);
3. `\\boxed{}` / `\\fbox{}` (`boxes`): one box, or several boxes that form one list (`\\boxed{1}, \\boxed{2}`);
   boxes with different contents separated by prose are a hedge, unless a final-answer label or a retraction comes
   before the last one; after the box, a retraction reads the value the text ends on, a final-answer label that
   states another value decides, and alternatives ("(or $10^3$)") must all be right; a box whose sentence does not
   commit to it (a question, a denial, a hypothesis, an aside: `context.box_context`) or that holds a judgement
   (`\\boxed{5 \\text{ is wrong}}`) is no answer;
4. a multiple-choice letter when the reference is a letter (`letters`);
5. the prose (`prose`): anchors, a bare formula, a first line that is only the answer, what the last sentence
   commits to; a completion cut off while its working goes on has none (`context.working_goes_on`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from .boxes import find_boxes
from .context import box_context, judged_in_box, last_sentences, working_goes_on
from .letters import letter_answer, reference_letter
from .prose import (
    ANCHORS,
    CHECK_SENTENCE,
    FINAL_LABEL,
    FINAL_LABEL_WINDOW,
    HEDGE,
    HEDGE_WORDS,
    QUALIFIER_AFTER,
    QUALIFIER_BEFORE,
    REASONS,
    RETRACTION,
    anchored_answer,
    bare_answer,
    candidates,
    committed_value,
    cut_off,
    leading_line,
    looks_like_prose,
    plain_text,
    through_sentences,
)
from .rendering import rendered
from .units import canonical_unit

# The stage's API; `find_boxes`, `letter_answer` and `reference_letter` live in `boxes` and `letters`.
__all__ = ["Extraction", "extract_answer", "extract_reference", "find_boxes", "letter_answer", "reference_letter"]

# A unit written after the box (`\boxed{5}\text{ cm}`, `\boxed{5} miles`): compared like one inside it.
UNIT_AFTER_BOX = re.compile(
    r"[\s$]*(?:\\(?:text|mathrm|mbox)\s*\{([^{}]*)\}|([a-zA-Z]+(?:/[a-zA-Z]+)?(?:\s+[a-zA-Z]+)?)(?=\s*(?:[.,;!?$]|$)))"
)
PLAIN_NUMBER = re.compile(r"\d+(?:\.\d+)?(?:[eE][+-]?\d+)?(?:/\d+)?")
BOXED_ANYWHERE = re.compile(r"\\(?:boxed|fbox|framebox)\s*\{([^{}]*)\}")
# The longest text between two boxes that still reads as one list: "\boxed{1}, \boxed{2} and \boxed{3}".
MAX_BOX_GAP_CHARS = 80
MAX_BOX_GAP_WORDS = 4
# The fields of a JSON answer that hold the answer ("answer", "final_answer"); its other fields ("reasoning") do not.
ANSWER_FIELDS = frozenset({"answer", "final_answer", "finalanswer"})
JSON_FENCE = re.compile(r"```(?:json)?\s*(\{.*?\})\s*```", re.DOTALL)


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


def _is_list_gap(gap: str) -> bool:
    """Whether the text between two boxes only joins them into a list (commas, "and", `\\quad`, dollars)."""
    if len(gap) > MAX_BOX_GAP_CHARS or any(ch.isdigit() for ch in re.sub(r"_\{?\w+\}?", "", gap)):
        return False
    if FINAL_LABEL.search(gap) or RETRACTION.search(gap) or re.search(r"\n\s*\n|[.!?]\s", gap):
        return False  # a sentence, a paragraph or a label between two boxes: separate statements
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
    first_of_run = boxes[len(boxes) - len(runs[-1])][0]
    if len(runs) > 1 and len({", ".join(run) for run in runs}) > 1 and not trusted:
        previous_end = boxes[len(boxes) - len(runs[-1]) - 1][1]
        gap = text[previous_end:first_of_run]
        settled = FINAL_LABEL.search(gap[-FINAL_LABEL_WINDOW:]) or (
            RETRACTION.search(gap) and not HEDGE_WORDS.search(gap)
        )
        if settled:  # "**Final Answer:** \\boxed{94}", "Wait, I made an error ... \\boxed{7}"
            joined = ", ".join(runs[-1])
            return _unless_qualified(text, first_of_run, boxes[-1][1], joined, trusted)
        stated = anchored_answer(text[boxes[-1][1] :])
        if stated == HEDGE or not stated:  # paid only if every box says the reference: `\frac12` ... `0.5`
            return Extraction(None, "hedge", tuple(dict.fromkeys(", ".join(run) for run in runs)))
        return Extraction(stated, "anchor")
    joined = ", ".join(runs[-1])
    answer = f"\\{{{joined}\\}}" if alternatives[-1] else joined
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
    if judged_in_box(answer):
        return Extraction(None, "unparseable: judgement in the box")
    uncommitted = box_context(text, start, end)
    if uncommitted is not None:  # "Is it \boxed{5}?", "it cannot be \boxed{5}", "Suppose \boxed{5}; ..."
        return Extraction(None, f"uncommitted: {uncommitted}")
    retraction = RETRACTION.search(after)
    if retraction:  # "\\boxed{5}. Wait, that's wrong: the correct value is $7$."
        return _corrected(after[retraction.end() :])
    stated = anchored_answer(after)
    if stated and stated != HEDGE and plain_text(stated) != plain_text(answer):
        return Extraction(stated, "anchor")  # "\\boxed{5} ... Final answer: 7": the label decides
    unit = UNIT_AFTER_BOX.match(after)
    if (
        unit
        and canonical_unit(next(g for g in unit.groups() if g is not None))
        and not re.search(r"[a-zA-Z]}?$", answer)
    ):
        answer = f"{answer}\\text{{ {next(g for g in unit.groups() if g is not None).strip()}}}"  # compared as units
    # The box's sentence and the next one that says something (a paragraph break is one end, not two).
    rest = BOXED_ANYWHERE.sub(r" \1 ", re.sub(r"^\s*(?:\$\$?|\\\)|\\\])", " ", after))  # its closing delimiter
    rest = through_sentences(rest, 2)
    if HEDGE_WORDS.search(rest):
        # Alternatives: paid only when every one is the reference ("\\boxed{1000} (or $10^3$)"), else a hedge.
        alternatives = [
            alternative
            for _, _, alternative in candidates(rest)
            if plain_text(alternative) != plain_text(answer) and not CHECK_SENTENCE.match(alternative)
        ]
        if alternatives:
            return Extraction(None, "hedge", tuple(dict.fromkeys([answer, *alternatives])))
        if set(PLAIN_NUMBER.findall(rest.replace("$", " "))) - set(PLAIN_NUMBER.findall(answer)):
            return Extraction(None, "hedge")  # another number offered that cannot be read as an answer
    return Extraction(answer, "boxed")


def _corrected(after: str) -> Extraction:
    """The answer a completion ends on after it takes back its box: a later box, an anchored statement, or the last
    value of its text; none (`retracted`) when it commits to nothing, and a hedge when it hedges."""
    if HEDGE_WORDS.search(after):
        return Extraction(None, "hedge")
    later = find_boxes(after)
    if later:
        return boxed_answer(after) or Extraction(None, "retracted")
    for finder in (anchored_answer, committed_value):
        found = finder(after)
        if found in REASONS:
            return Extraction(None, REASONS[found])
        if found and found.strip():
            return Extraction(found.strip(), "correction")
    return Extraction(None, "retracted")


def json_answer(text: str, letters: str | None = None) -> Extraction | None:
    """The answer of a completion written as a JSON object with an "answer" or "final_answer" field (the whole text, a
    fenced block, or the span from its first `{` to its last `}`): that field's value, read as a completion of its
    own; None when there is no such object."""
    if '"' not in text or "{" not in text:
        return None
    fences = JSON_FENCE.findall(text)
    spans = [text.strip(), *fences[-1:], text[text.find("{") : text.rfind("}") + 1]]
    for span in dict.fromkeys(spans):
        try:
            found = json.loads(span)
        except ValueError:
            continue
        if not isinstance(found, dict):
            continue
        value = next((v for k, v in found.items() if re.sub(r"[\s_-]", "", str(k)).lower() in ANSWER_FIELDS), None)
        if value is None:
            continue
        if isinstance(value, str):
            inner = extract_answer(value, letters)
            return Extraction(inner.answer, "json" if inner.answer else inner.how, inner.candidates)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return Extraction(str(value), "json")
        return Extraction(None, "unparseable: json answer field")
    return None


def extract_answer(text: str, letters: str | None = None, trusted: bool = False) -> Extraction:
    """The final answer of a completion. `letters` (e.g. "ABCDE") switches on multiple-choice extraction;
    `trusted` (for references) reads several boxes as the last one instead of a hedge."""
    visible = strip_think(text)
    if visible is None:
        return Extraction(None, "unclosed_think")
    structured = None if trusted else json_answer(answer_tag(visible), letters)
    if structured is not None:
        return structured
    visible = rendered(answer_tag(visible))
    boxed = boxed_answer(visible, trusted)
    if boxed is not None and boxed.answer is not None and not boxed.answer.strip():
        return Extraction(None, "empty_box")  # `\\boxed{}`, `\\boxed{\\phantom{12}}`
    if boxed is not None and (boxed.answer is None or not letters):
        return boxed
    if letters:
        letter = letter_answer(visible, letters)
        if letter == HEDGE:
            return Extraction(None, "hedge")
        return Extraction(letter, "letter") if letter else Extraction(None, "no_answer")
    answer = anchored_answer(visible)
    if answer is None and cut_off(visible) and working_goes_on(visible):
        return Extraction(None, "truncated")  # "First, 6 x 7 = 42. Then we subtract": an intermediate result
    unfinished = answer is None and not re.search(r"[.!?。)\]}$*][^\w.!?。)\]}$*]*$", visible[-MAX_BOX_GAP_CHARS:])
    if answer is None and ANCHORS.search(visible):
        # An anchor that states no value: what the text commits to is read after it, never before it.
        visible = visible[list(ANCHORS.finditer(visible))[-1].end() :]
    finders = (
        ("anchor", lambda _: answer),
        ("bare", bare_answer),
        ("leading_line", leading_line),
        ("last_block_or_number", committed_value),
    )
    for how, finder in finders:
        found = finder(visible)
        if found in REASONS:
            return Extraction(None, REASONS[found])
        if found and found.strip():
            if unfinished and how != "bare" and working_goes_on(visible, ends_on_number=True):
                last = last_sentences(visible)[0] or ""
                if plain_text(committed_value(last) or "") != plain_text(found):
                    return Extraction(None, "truncated")  # "First, 6 x 7 = 42. Then we subtract 5"
            return Extraction(found.strip(), how)
    return Extraction(None, "no_answer")


def extract_reference(reference: str) -> Extraction:
    """The answer inside a reference: a bare answer as is; a worked solution through its box or anchor."""
    text = rendered(reference).strip()
    for marker in ("<answer>", "\\boxed", "\\fbox", "\\framebox", "####"):
        if marker in text:
            return extract_answer(text, trusted=True)
    if looks_like_prose(text) and ANCHORS.search(text):
        return extract_answer(text, trusted=True)
    return Extraction(text, "bare") if text else Extraction(None, "empty_reference")
