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
from collections.abc import Iterator
from dataclasses import dataclass

from .normalize import unicode_to_latex
from .units import VALUE_WORDS, canonical_unit, counted_noun

BOX_COMMANDS = ("\\boxed", "\\fbox")
ANCHORS = re.compile(
    r"final answer is|final answer:|the answer is|answer is|answer to (?:the|this) (?:problem|question) is|answer:|réponse est|réponse ?:|答案是|答案[:：]|####",
    re.IGNORECASE,
)
NUMBER = re.compile(
    r"\\frac\{-?\d+\}\{\d+\}|(?<![A-Za-z0-9_.^{])-?(?:\d{1,3}(?:,\d{3})+|\d+)?(?:\.\d+)?(?:/\d+)?(?![0-9])"
)
MATH_BLOCK = re.compile(r"\$\$(.+?)\$\$|\\\[(.+?)\\\]|\\\(([^\n]+?)\\\)|\$([^$\n]+?)\$", re.DOTALL)
PROSE_WORD = re.compile(r"(?<![\\a-zA-Z])[a-zA-Z]{3,}")
SENTENCE_END = re.compile(r"\.(?=\s|$)|\n|。")
# A choice letter standing alone: not part of a word, a command or a formula ("E*2", "x+B").
LETTER_TOKEN = re.compile(r"(?<![A-Za-z\\*^/+=_-])([A-Z])(?=$|[\s.,;:!?)]|[^\x00-\x7f])")
# Answers that name several candidates, or deny the one they name: extraction reports a hedge.
HEDGE = "hedge"
# Why prose gives no answer: its last sentence was cut off, or a qualifier changes its number ("at least 4").
TRUNCATED = "truncated"
QUALIFIED = "unparseable: qualified answer"
REASONS = {HEDGE: HEDGE, TRUNCATED: TRUNCATED, QUALIFIED: QUALIFIED}
# Words that take back what was just stated: the completion's answer is what it commits to after them.
RETRACTION = re.compile(
    r"\b(?:wait|oops|mistake|error|wrong|incorrect|correction|on\s+(?:second\s+thought|reflection)|"
    r"re-?(?:do|doing|calculate|calculating|compute|computing|check|checking|consider|considering)|"
    r"let\s+me\s+(?:re|fix|correct))",
    re.IGNORECASE,
)
# An explicit label of the final answer ("**Final Answer:**", "the answer is", "####") right before a box.
FINAL_LABEL = re.compile(r"final answer|the answer is|answer:|####", re.IGNORECASE)
# Text that ends in the middle of a sentence: a letter, a comma, an operator or an opening bracket.
CUT_OFF_END = re.compile(r"[A-Za-z,;:(\[{+\-*/=^_\\]\s*$")
# Numbers that come before the last one as items of one list: "1, 2, 3 and 4", "1, 2, ..., 57".
LIST_BEFORE = re.compile(r"(?:-?\d+(?:\.\d+)?\s*(?:,\s*(?:and\s+)?|\s+and\s+)(?:(?:\.\.\.|\\ldots|\\dots)\s*,\s*)?)+$")
LEADING_ANSWER = re.compile(r"[-+]?\d+(?:\.\d+)?(?:\s*[-+*/×x]\s*\d+(?:\.\d+)?)*(?:\s*=\s*[-+]?\d+(?:\.\d+)?)?")
# Words that may open a sentence before its anchor ("So the final answer is"); any other makes it an anchor in
# passing ("as the answer is only 2 coins away from 9"), read only when it states one value.
ANCHOR_OPENERS = frozenset("so thus therefore hence then and the final my our correct this that".split())
# A sentence that checks an answer already given: its numbers are not the answer.
CHECK_SENTENCE = re.compile(
    r"^\W*(?:check|checking|verify|verifying|verification|to\s+(?:check|verify|confirm)|sanity\s+check|"
    r"let'?s\s+(?:check|verify)|double[- ]check)",
    re.IGNORECASE,
)
# What may come right before a number a sentence commits to: a stating verb or `=`, or nothing but a connective.
COMMITTING_BEFORE = re.compile(
    r"(?:(?:\b|')(?:is|s|are|was|were|equals?|gives(?:\s+us)?|get|gets|got|becomes|has|have|had|makes|costs?|totals?|"
    r"remains?|obtain|find|left\s+with|(?:increase|decrease|rise|fall|grow|drop)s?\s+by|"
    # the same in French, Spanish and German: "il a déjà 79 g", "est de 25%", "es 7", "ist 7"
    r"est(?:\s+de)?|sont|(?:il|elle|on|qui)\s+a|ont|vaut|font|fait|reste|égale?|tiene|quedan?|ist|sind|hat|beträgt|"
    r"bleiben)"
    r"\s*:?\s*(?:(?:exactly|just|only|still|now|equal\s+to|a\s+total\s+of|donc|déjà|encore|alors|ainsi|"
    r"también|noch|also)\s+(?:de\s+)?)*"
    r"|=\s*)[$(]*$",
    re.IGNORECASE,
)
CONNECTIVES_ONLY = re.compile(r"\W*(?:(?:so|thus|hence|therefore|then|answer|result)\W*)*[$(]*", re.IGNORECASE)
LIST_MARKER = re.compile(r"\d{1,2}[.)]\s+\S")
# Words in a clause that take back the number it states ("7 - 4 = 3 is incorrect").
DENIAL = re.compile(r"\b(?:wrong|incorrect|mistaken|impossible|undefined)\b", re.IGNORECASE)
# Verbs after which the rest of a sentence states a value: "The area is 3\\pi.", "We get x^2 + 1."
STATING_VERB = re.compile(r"\b(?:is|are|was|equals|gives|get|gets|becomes|obtain|find)\b\s*:?", re.IGNORECASE)
HEDGE_WORDS = re.compile(
    r"\b(?:or|either|maybe|perhaps|possibly|probably|might|could|unless|otherwise|alternatively)\b", re.IGNORECASE
)
DOUBT_WORDS = re.compile(
    r"\b(?:either|maybe|perhaps|possibly|probably|might|could|also|alternatively)\b", re.IGNORECASE
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
# Words a bare answer may hold: function names, per-cent words (`28 percent`), joining words.
BARE_WORDS = frozenset(
    "sqrt frac sin cos tan cot sec csc log exp arcsin arccos arctan sinh cosh tanh percent percentage".split()
)
# An inline formula cannot span lines: "$ \n 9 \n $" is broken markup, and its numbers are not an answer.
BROKEN_INLINE_MATH = re.compile(r"(?<![\\$])\$[^$]*\n[^$]*\$|\\\([^\n]*\n.*?\\\)", re.DOTALL)
MATH_DELIMITERS = re.compile(r"(?<!\\)\$|\\\(|\\\[")
NON_LATIN = re.compile(r"[^\x00-\x7f°€£²³]")
NON_LATIN_LETTER = re.compile(r"[^\W\d_a-zA-Z\u00c0-\u024f]")  # a letter of a script other than Latin
END_OF_TURN = re.compile(r"<\|im_end\|>|<\|im_start\|>|<\|endoftext\|>|<\|eot_id\|>|<\|end\|>|</s>")
# What renders nothing, or only decorates: a LaTeX comment (an unescaped `%` not after a number, to the end of its
# line), `\phantom{...}`, a colour, an underline, sizing commands, markdown bold.
LATEX_COMMENT = re.compile(r"(?<![\\\d)}])(?<![\d)}] )%[^\n]*")
PHANTOM = re.compile(r"\\[hv]?phantom\s*\{[^{}]*\}")
COLOR = re.compile(r"\\color\s*\{[^{}]*\}")
DECORATION = re.compile(r"\\(?:textcolor|colorbox)\s*\{[^{}]*\}\s*\{([^{}]*)\}|\\(?:underline|uline)\s*\{([^{}]*)\}")
SIZING = re.compile(r"\\(?:[Bb]igg?|[Bb]igg?[lrm])(?![a-zA-Z])\s*")
MARKDOWN_BOLD = re.compile(r"\*\*([^*\n]+?)\*\*|__([^_\n]+?)__")
BRACKET_WORDS = {"\\lbrack": "[", "\\rbrack": "]", "\\lbrace": "\\{", "\\rbrace": "\\}", "\\nicefrac": "\\frac"}


@dataclass(frozen=True)
class Extraction:
    """The answer found (None if none) and how it was found ("boxed", "anchor", ...) or why not ("hedge", ...)."""

    answer: str | None
    how: str
    candidates: tuple[str, ...] = ()  # a hedge of boxes: what each box (or run of boxes) says


def rendered(text: str) -> str:
    """The text as it reads on the page, up to an end-of-turn token (`<|im_end|>`, `<|im_start|>`, `</s>`...): Unicode math as LaTeX (`−7` keeps its sign, `2√3` its root), without
    comments, phantoms, colours, underlines, sizing commands and markdown bold; `\\$` as `\\textdollar` so that a
    currency sign is never read as a math delimiter."""
    end_of_turn = END_OF_TURN.search(text)
    if end_of_turn:  # a model that runs on into a new turn: what follows is not its answer
        text = text[: end_of_turn.start()]
    text = unicode_to_latex(text)
    if "%" in text:
        text = LATEX_COMMENT.sub("", text)
    if "\\" in text:
        text = PHANTOM.sub("", text)
        text = COLOR.sub("", text)
        previous = None
        while previous != text:
            previous = text
            text = DECORATION.sub(lambda m: m.group(1) if m.group(1) is not None else m.group(2), text)
        text = SIZING.sub("", text)
        for command, replacement in BRACKET_WORDS.items():
            text = re.sub(re.escape(command) + "(?![a-zA-Z])", lambda _, r=replacement: r, text)
        text = text.replace("\\$", "\\textdollar ")
    if "**" in text or "__" in text:
        text = MARKDOWN_BOLD.sub(lambda m: m.group(1) if m.group(1) is not None else m.group(2), text)
    return text


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
        settled = FINAL_LABEL.search(gap[-60:]) or (RETRACTION.search(gap) and not HEDGE_WORDS.search(gap))
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
    retraction = RETRACTION.search(after)
    if retraction:  # "\\boxed{5}. Wait, that's wrong: the correct value is $7$."
        return _corrected(after[retraction.end() :])
    stated = anchored_answer(after)
    if stated and stated != HEDGE and _plain_text(stated) != _plain_text(answer):
        return Extraction(stated, "anchor")  # "\\boxed{5} ... Final answer: 7": the label decides
    unit = UNIT_AFTER_BOX.match(after)
    if (
        unit
        and canonical_unit(next(g for g in unit.groups() if g is not None))
        and not re.search(r"[a-zA-Z]}?$", answer)
    ):
        answer = f"{answer}\\text{{ {next(g for g in unit.groups() if g is not None).strip()}}}"  # compared as units
    rest = BOXED_ANYWHERE.sub(
        r" \1 ", re.sub(r"^\s*(?:\$\$?|\\\)|\\\])", " ", after)
    )  # the box's own closing delimiter
    ends = [m.end() for m in SENTENCE_END.finditer(rest.replace("$", " "))]
    rest = rest[: ends[2]] if len(ends) > 2 else rest  # the box's sentence and the next one
    others = set(PLAIN_NUMBER.findall(rest.replace("$", " "))) - set(PLAIN_NUMBER.findall(answer))
    if others and HEDGE_WORDS.search(rest):
        # Alternatives: paid only when every one is the reference ("\\boxed{1000} (or $10^3$)"), else a hedge.
        alternatives = [text for _, _, text in _candidates(rest) if not CHECK_SENTENCE.match(text)]
        return Extraction(None, "hedge", tuple(dict.fromkeys([answer, *alternatives])))
    return Extraction(answer, "boxed")


def _plain_text(answer: str) -> str:
    return re.sub(r"[\s$]", "", answer)


def _corrected(after: str) -> Extraction:
    """The answer a completion ends on after it takes back its box: a later box, an anchored statement, or the last
    value of its text; none (`retracted`) when it commits to nothing, and a hedge when it hedges."""
    if HEDGE_WORDS.search(after):
        return Extraction(None, "hedge")
    later = find_boxes(after)
    if later:
        return boxed_answer(after) or Extraction(None, "retracted")
    for finder in (anchored_answer, _last_block_or_number):
        found = finder(after)
        if found in REASONS:
            return Extraction(None, REASONS[found])
        if found and found.strip():
            return Extraction(found.strip(), "correction")
    return Extraction(None, "retracted")


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
    """What the prose commits to last: the last math block, or a number (with the formula it belongs to: `2\\sqrt{3}`,
    `3\\pi`) in the prose after it, or the formula a final sentence states ("The area is 3\\pi."). `HEDGE` when
    its sentence offers another candidate ("it could be 3 or 5", "$x = 3$ or $x = 5$", "not 3 but 5");
    `TRUNCATED` when the text stops mid-sentence (nothing cut off is read); `QUALIFIED` for "at least 4"; a list for
    "1, 2, 3 and 4". A final sentence that only checks the answer ("Checking: $2(5)+1=11$") is not read."""
    if _cut_off(text):
        return _before_cut(text)
    text = _without_final_checks(text)
    stated = _stated_formula(text)
    if stated is not None:
        return stated
    blocks = list(MATH_BLOCK.finditer(text))
    tail = text[blocks[-1].end() :] if blocks else text
    numbers = list(NUMBER.finditer(BROKEN_INLINE_MATH.sub(lambda m: " " * len(m.group(0)), tail)))
    numbers = [m for m in numbers if any(c.isdigit() for c in m.group(0))]
    if numbers or not blocks:
        if not numbers:
            return None
        offset = len(text) - len(tail)
        start, end = offset + numbers[-1].start(), offset + numbers[-1].end()
        sentence = _sentence_at(text, start)
        settled = _affirmed(sentence, _candidates(sentence))
        if settled == HEDGE:
            return settled
        if settled is not None:  # "5, not 3" states 5; "1 is not divisible by 1" states nothing
            at = text.rfind(settled, 0, end)
            return settled if at >= 0 and _commits(text, at, at + len(settled), settled, denials=False) else None
        if QUALIFIER_BEFORE.search(text[max(0, start - 40) : start]) or QUALIFIER_AFTER.match(text[end:]):
            return QUALIFIED
        listed = LIST_BEFORE.search(text[:start])
        if listed and listed.group(0).strip():
            return text[listed.start() : end]  # "1, 2, 3 and 4": the list, not its last item
        committed = _commitments(text, [(offset + m.start(), offset + m.end()) for m in numbers])
        if not committed:
            return None
        (last, at), earlier = committed[0], committed[1:]
        if earlier and text.rstrip()[-1:].isdigit() and _plain_text(earlier[0][0]) != _plain_text(last):
            if "\n\n" in text[earlier[0][1] : at]:
                return HEDGE  # it stops, without a full stop, on a paragraph that states a new value: unsettled
        return last
    sentence = _sentence_at(text, blocks[-1].start())
    settled = _affirmed(sentence, _candidates(sentence))
    if settled is not None:
        return settled
    block = next(g for g in blocks[-1].groups() if g is not None)
    return last_number(block) if looks_like_prose(block, min_words=2) else block  # "$? just about 1$"


def _before_cut(text: str) -> str:
    """What a cut-off text committed to before the sentence it was cut in: its last statement, when the statement
    before it does not state a different value (a loop "So x = 3. So x = 4. So x" never settles); `TRUNCATED` when
    nothing before the cut states a value."""
    head = _before_last_sentence(text)
    if not any(ch.isdigit() for ch in head):
        return TRUNCATED
    last = _last_block_or_number(head)
    earlier_head = _before_last_sentence(head.rstrip())
    earlier = _last_block_or_number(earlier_head) if any(ch.isdigit() for ch in earlier_head) else None
    if last in REASONS or not last:
        return last or TRUNCATED
    if earlier and earlier not in REASONS and _plain_text(earlier) != _plain_text(last):
        return HEDGE
    return last


def _before_last_sentence(text: str) -> str:
    """The text up to the end of its second-to-last sentence (sentence ends inside math do not count)."""
    outside = MATH_BLOCK.sub(lambda m: "$" * len(m.group(0)), text)
    ends = [m.end() for m in SENTENCE_END.finditer(outside) if m.end() < len(text.rstrip())]
    return text[: ends[-1]] if ends else ""


def _cut_off(text: str) -> bool:
    """Whether the text stops in the middle of a sentence: it ends in a letter, a comma, an operator or an open
    bracket, other than a unit or a counted noun right after its last number ("$28$ percent", "12 apples")."""
    if not CUT_OFF_END.search(text):
        return False
    tail = re.split(r"[\d$]", text)[-1].strip()
    return not (
        tail and (tail.lower() in ("percent", "percentage", "pct") or canonical_unit(tail) or counted_noun(tail))
    )


def _what_was_counted(after: str) -> bool:
    """Whether the words after a number only say what it counts ("apples", "ways to do it", "marbles left over",
    "cm long"): they start with a word that is not a value word ("6 more coins", "3 or so") and hold no number."""
    unit = re.fullmatch(r"([a-zA-Z]+(?:/[a-zA-Z]+)?)\s*(\^\s*\{?\d\}?)?", after)
    if unit and canonical_unit(unit.group(1), unit.group(2)):
        return True  # "m^{2}"
    first = re.match(r"[A-Za-z%\\]+", after)
    if first is None or any(ch.isdigit() for ch in after):
        return False
    words = {word.lower() for word in re.findall(r"[A-Za-z]+", after)}
    return first.group(0).lower() not in VALUE_WORDS and not words & {
        "or",
        "more",
        "less",
        "fewer",
        "than",
        "least",
        "most",
    }


def _commitments(text: str, spans: list[tuple[int, int]]) -> list[tuple[str, int]]:
    """The last two values the text commits to, last first, with their positions, among the numbers at `spans`
    (see `_commits`)."""
    found: list[tuple[str, int]] = []
    for start, end in reversed(spans):
        if LIST_MARKER.match(text, start) and re.search(r"(?:^|[\n.!?。:：]|\*\*)\s*$", text[:start]):
            continue  # "2. **Conclusion**": the number of a step
        token = _token_around(text, start, end)
        if _commits(text, start, end, token):
            found.append((token, start))
            if len(found) == 2:
                break
    return found


def _commits(text: str, start: int, end: int, token: str, denials: bool = True) -> bool:
    """Whether the text commits to the number at `text[start:end]` (written as `token`): its clause states it
    ("Sam has 9 coins now.", "So 3 + 4 = 7.", "It's 5, not zero.", the number alone) and neither denies nor takes it
    back ("0 is not a solution to 0", "7 - 4 = 3 is incorrect"); a number in passing ("add 3 to itself", "the
    additive inverse of 5", "Lena has 0 coins and 6 more") is no statement of it."""
    sentence_start = text.rfind("\n", 0, start) + 1
    for match in SENTENCE_END.finditer(text, sentence_start, start):
        if not (match.group(0) == "." and text[match.start() - 1 : match.start()].isdigit()):
            sentence_start = match.end()
    clause_start = sentence_start
    for match in CLAUSE_BREAK.finditer(text, sentence_start, start):
        clause_start = match.end()
    after_match = CLAUSE_BREAK.search(text, end)
    clause_end = after_match.start() if after_match else len(text)
    clause = text[clause_start:clause_end]
    if denials and (NEGATION.search(clause) or DENIAL.search(clause)):
        return False
    if len(NON_LATIN_LETTER.findall(clause)) > len(re.findall(r"[a-zA-Z]", clause)):
        return True  # prose in another script: its verbs are not read here, its last number is its statement
    token_start = next(
        (i for i in range(start, max(clause_start, start - len(token)) - 1, -1) if text.startswith(token, i)), start
    )
    before = text[clause_start:token_start]
    after = text[token_start + len(token) : clause_end].strip().strip(".!\"'*$€£").strip()
    if not after:
        return bool(COMMITTING_BEFORE.search(before) or CONNECTIVES_ONLY.fullmatch(before))
    if CONNECTIVES_ONLY.fullmatch(before):  # a number opening its clause states it only with what it counts
        return bool(counted_noun(after) or canonical_unit(after))
    return bool(COMMITTING_BEFORE.search(before)) and _what_was_counted(after)


def _without_final_checks(text: str) -> str:
    """The text without the sentences at its end that check an answer given before them."""
    outside = MATH_BLOCK.sub(lambda m: "$" * len(m.group(0)), text)
    ends = [m.end() for m in SENTENCE_END.finditer(outside) if m.end() < len(text.rstrip())]
    for end in reversed(ends):
        if not CHECK_SENTENCE.match(text[end:]):
            break
        if any(ch.isdigit() for ch in text[:end]):
            text = text[:end]
    return text


def _stated_formula(text: str) -> str | None:
    """The formula a final sentence states after its verb, outside math delimiters: "The area is 3\\pi.", "We get
    x^{2} + 1." (None when that rest is prose or holds a math block)."""
    stripped = text.rstrip().rstrip(".!")
    sentence = stripped[max((m.end() for m in SENTENCE_END.finditer(stripped)), default=0) :]
    verbs = list(STATING_VERB.finditer(sentence))
    if not verbs or "$" in sentence or NON_LATIN.search(sentence) or NEGATION.search(sentence):
        return None
    rest = sentence[verbs[-1].end() :].strip()
    if _number_of_unit(rest):
        return _number_of_unit(rest)
    words = re.sub(r"\\[a-zA-Z]+|\b(?:and|or)\b", " ", rest)
    if not rest or re.search(r"[a-zA-Z]{2,}", words) or not re.search(r"[\d\\]", rest):
        return None
    return rest


def _number_of_unit(token: str) -> str | None:
    """The number of `1,000.99m^{2}` or `5cm`: a number written against a unit; None for anything else."""
    with_unit = re.fullmatch(r"(-?\d[\d,]*(?:\.\d+)?)([a-zA-Z]{1,6})(\^\{?\d\}?)?", token)
    if with_unit and canonical_unit(with_unit.group(2), with_unit.group(3)):
        return with_unit.group(1)
    return None


def _token_around(text: str, start: int, end: int) -> str:
    """The number at `text[start:end]`, or the formula it is written in without spaces (`2\\sqrt{3}`, `3\\pi`,
    `x^{-1}`, `\\pi/4`): a number is never read out of a formula."""
    left, right = start, end
    while left > 0 and not text[left - 1].isspace() and text[left - 1] not in "$(":
        left -= 1
    while right < len(text) and not text[right].isspace() and text[right] not in "$)":
        right += 1
    token = text[left:right].rstrip(".,;:!?")
    if _number_of_unit(token):
        return _number_of_unit(token)  # "1,000.99m²": the number of a unit
    if re.search(r"\\[a-zA-Z]|[\^_]", token) and not re.search(r"[a-zA-Z]{3,}", re.sub(r"\\[a-zA-Z]+", "", token)):
        return token
    return text[start:end]


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


def _answer_in_sentence(sentence: str, single_value: bool = False) -> str | None:
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
    if single_value and len(set(numbers)) > 1:
        return None  # "..., as the answer is only 2 coins away from 9": no statement of one value
    return numbers[0] if numbers else None


def anchored_answer(text: str) -> str | None:
    """What the last anchor ("the answer is", "Final answer:", "####") that states a value states; an anchor followed
    by prose that states no single value ("the answer is only 2 coins away from 9") is passed over. `HEDGE` when
    the anchor before it stated a different value and nothing in between took that back ("The answer is 4. ... The
    answer is 8."); `TRUNCATED` when the text was cut off in the sentence of its last anchor."""
    matches = list(ANCHORS.finditer(text))
    if not matches:
        return None
    stated: list[tuple[re.Match, str]] = []
    for match in reversed(matches):
        statement = _anchor_statement(text, match)
        if statement:
            stated.append((match, statement))
            if len(stated) == 2:
                break
    if not stated:
        after = text[matches[-1].end() :]
        return TRUNCATED if _cut_off(text) and not SENTENCE_END.search(after.rstrip()) else None
    (last_match, answer), earlier = stated[0], stated[1:]
    if answer != HEDGE and earlier and earlier[0][1] != HEDGE:
        between = text[earlier[0][0].end() : last_match.start()]
        if _plain_text(earlier[0][1]) != _plain_text(answer) and not RETRACTION.search(between):
            return HEDGE
    return answer


def _anchor_statement(text: str, match: re.Match) -> str | None:
    segment = text[match.end() :].lstrip(" :*\t\n")
    opening = text[: match.start()]
    opening = opening[max(opening.rfind("\n"), *(m.end() for m in SENTENCE_END.finditer(opening)), 0) :]
    mid_sentence = any(word.lower() not in ANCHOR_OPENERS for word in re.findall(r"[A-Za-z]+", opening))
    return _answer_in_sentence(_first_sentence(segment), single_value=mid_sentence)


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
        if len(boxed) > 1:
            return HEDGE
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
    """`HEDGE` when the next sentences name another letter with a hedge or a retraction ("B, though it could also be
    D", "C. But A might be right too", "\\boxed{B} On reflection it might be D")."""
    after = text[position:]
    ends = [m.end() for m in SENTENCE_END.finditer(after)]
    after = after[: ends[1]] if len(ends) > 1 else after
    others = {m.group(1) for m in _letter_tokens(after, letters)} - {letter}
    if others and (DOUBT_WORDS.search(after) or RETRACTION.search(after)):
        return HEDGE  # a plain "or" may join denied letters: "D, it can't be A or B"
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
    if answer is None and ANCHORS.search(visible):
        # An anchor that states no value: what the text commits to is read after it, never before it.
        visible = visible[list(ANCHORS.finditer(visible))[-1].end() :]
    finders = (
        ("anchor", lambda _: answer),
        ("bare", _bare),
        ("leading_line", _leading_line),
        ("last_block_or_number", _last_block_or_number),
    )
    for how, finder in finders:
        found = finder(visible)
        if found in REASONS:
            return Extraction(None, REASONS[found])
        if found and found.strip():
            return Extraction(found.strip(), how)
    return Extraction(None, "no_answer")


def _leading_line(text: str) -> str | None:
    """A first line that is only a number or a sum ending in one ("7", "3 + 4 = 7"), followed by more text that
    takes nothing back: the answer the completion opens with (the format "answer with the number only" asks for)."""
    first, _, rest = text.strip().partition("\n")
    first = first.strip().rstrip(".")
    if not rest.strip() or not LEADING_ANSWER.fullmatch(first) or RETRACTION.search(rest):
        return None
    return first


def _bare(text: str) -> str | None:
    """A short completion that is only a formula (`\\frac{1}{2}`, `(2,4)`) is its own answer."""
    text = text.strip()
    if len(text) > MAX_BARE_CHARS or "\n" in text or NON_LATIN.search(text) or MATH_DELIMITERS.search(text):
        return None
    words = re.findall(r"(?<![\\a-zA-Z])[a-zA-Z]{2,}", re.sub(r"\\(?:text|begin|end)\{[^{}]*\}", "", text))
    if len(words) > 2 or any(len(word) > 3 and word.lower() not in BARE_WORDS for word in words):
        return None  # prose: "To confirm, 68 - 34 = 34."
    if STATING_VERB.search(text):
        return None  # "We get x^2 + 1.": a sentence, read for what it states
    return text


def extract_reference(reference: str) -> Extraction:
    """The answer inside a reference: a bare answer as is; a worked solution through its box or anchor."""
    text = rendered(reference).strip()
    for marker in ("<answer>", "\\boxed", "\\fbox", "####"):
        if marker in text:
            return extract_answer(text, trusted=True)
    if looks_like_prose(text) and ANCHORS.search(text):
        return extract_answer(text, trusted=True)
    return Extraction(text, "bare") if text else Extraction(None, "empty_reference")
