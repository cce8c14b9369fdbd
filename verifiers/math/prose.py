"""The final answer of a completion's prose: what it commits to, never a number in passing. Pure string work.

A completion's final answer is the value it commits to after its reasoning (docs/verifiers.md, "the final-answer
model"):
- an anchor ("the answer is", "Final answer:", "####", also French and Chinese) states what follows it; an anchor in
  passing ("..., as the answer is only 2 coins away from 9") counts only where it states one value; two anchors that
  state different values with no retraction between them are a hedge;
- otherwise the last sentence that commits to a value: a stating verb or `=` right before the number ("Sam has 9
  coins now.", "So 3 + 4 = 7.", "The area is 3\\pi.") and nothing after it but what it counts ("coins", "ways to do
  it"); a clause that denies it ("0 is not a solution", "3 is incorrect") commits to nothing;
- a number is read with the formula it is written in (`2\\sqrt{3}`, `x^{-1}`), never out of it; a list ("1, 2, 3
  and 4") is the list; a qualifier ("at least 4") makes the answer unparseable;
- a text that stops in the middle of a sentence is read up to its last full sentence, and only when its last two
  statements agree (a loop "So x = 3. So x = 4. So x" never settles); a sentence that checks an earlier answer
  ("Checking: $2(5)+1=11$") is not the answer.

This runs in the trainer's process on untrusted text, outside any deadline, so its cost stays linear in the text's
length: a pattern that could backtrack (a list of numbers) is only run on a bounded window, and
`tests/verifiers/math/test_extract_bounds.py` feeds it pathological completions.
"""

from __future__ import annotations

import re

from .context import HEDGE, HEDGE_WORDS, MATH_BLOCK, NEGATED, NEGATION, SEVERAL, statement_head
from .units import VALUE_WORDS, canonical_unit, counted_noun

ANCHORS = re.compile(
    r"final answer is|final answer:|the answer is|answer is|answer to (?:the|this) (?:problem|question) is|answer:|réponse est|réponse ?:|答案是|答案[:：]|####|"
    # Portuguese, Italian, German, Indonesian, Vietnamese
    r"resposta (?:final )?é|resposta(?: final)?:|risposta (?:finale )?è|risposta(?: finale)?:|antwort ist|antwort:|"
    r"jawaban(?:nya)? (?:akhir(?:nya)? )?(?:adalah|ialah)|jawaban(?: akhir)?:|đáp án (?:là|cuối cùng là)|đáp án:|"
    r"câu trả lời (?:là|cuối cùng là)",
    re.IGNORECASE,
)
NUMBER = re.compile(
    r"\\frac\s*\{-?\d+\}\s*\{\d+\}|(?<![A-Za-z0-9_.^{])-?(?:\d{1,3}(?:,\d{3})+|\d+)?(?:\.\d+)?(?:/\d+)?(?![0-9])"
)
PROSE_WORD = re.compile(r"(?<![\\a-zA-Z])[a-zA-Z]{3,}")
SENTENCE_END = re.compile(r"\.(?=\s|$)|\n|。")
# Why prose gives no answer: its last sentence was cut off, or a qualifier changes its number ("at least 4").
TRUNCATED = "truncated"
QUALIFIED = "unparseable: qualified answer"
REASONS = {HEDGE: HEDGE, TRUNCATED: TRUNCATED, QUALIFIED: QUALIFIED, SEVERAL: SEVERAL}
# Words that take back what was just stated: the completion's answer is what it commits to after them.
RETRACTION = re.compile(
    r"\b(?:wait|oops|mistake|error|wrong|incorrect|correction|on\s+(?:second\s+thought|reflection)|"
    r"re-?(?:do|doing|calculate|calculating|compute|computing|check|checking|consider|considering)|"
    r"let\s+me\s+(?:re|fix|correct)|(?:but|however),?\s+the\s+(?:correct|right|actual|true|real)\b|"
    r"\bthe\s+(?:correct|right|actual|true)\s+(?:answer|value|count|result|number|total|sum)\s+(?:is|was)\b)",
    re.IGNORECASE,
)
# An explicit label of the final answer ("**Final Answer:**", "the answer is", "####") right before a box.
FINAL_LABEL = re.compile(r"final answer|the answer is|answer:|####", re.IGNORECASE)
# How far before the last box a final-answer label still settles a hedge of boxes ("**Final Answer:** \\boxed{B}").
FINAL_LABEL_WINDOW = 60
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
# Bounds that keep the reading of prose linear in its length (it runs in the trainer's process, outside any
# deadline): the last numbers examined for a statement, and how far a clause around one is read.
MAX_NUMBERS_EXAMINED = 40
MAX_UNIT_CHARS = 60
CLAUSE_WINDOW = 300
# Words in a clause that take back the number it states ("7 - 4 = 3 is incorrect").
DENIAL = re.compile(r"\b(?:wrong|incorrect|mistaken|impossible|undefined)\b", re.IGNORECASE)
# Verbs after which the rest of a sentence states a value: "The area is 3\\pi.", "We get x^2 + 1."
STATING_VERB = re.compile(r"\b(?:is|are|was|equals|gives|get|gets|becomes|obtain|find)\b\s*:?", re.IGNORECASE)
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


def plain_text(answer: str) -> str:
    return re.sub(r"[\s$]", "", answer)


def through_sentences(text: str, count: int) -> str:
    """`text` up to the end of its `count`-th sentence that says something: a paragraph break, or the full stop
    right after a formula, ends no sentence of its own ("$\\boxed{42}$.\\n\\nThough it could be 43." is two)."""
    ends, previous = [], 0
    for match in SENTENCE_END.finditer(text.replace("$", " ")):
        if text[previous : match.start()].strip(" $"):
            ends.append(match.end())
            if len(ends) == count:
                return text[: match.end()]
        previous = match.end()
    return text


def first_sentence(segment: str) -> str:
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


def committed_value(text: str) -> str | None:
    """What the prose commits to last: the last math block, or a number (with the formula it belongs to: `2\\sqrt{3}`,
    `3\\pi`) in the prose after it, or the formula a final sentence states ("The area is 3\\pi."). `HEDGE` when
    its sentence offers another candidate ("it could be 3 or 5", "$x = 3$ or $x = 5$", "not 3 but 5");
    `TRUNCATED` when the text stops mid-sentence (nothing cut off is read); `QUALIFIED` for "at least 4"; a list for
    "1, 2, 3 and 4". A final sentence that only checks the answer ("Checking: $2(5)+1=11$") is not read."""
    if not any(ch.isdigit() for ch in text) and not MATH_BLOCK.search(text):
        return None  # nothing that could state a value: no answer, cut off or not
    if cut_off(text):
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
        settled = affirmed(sentence, candidates(sentence))
        if settled == HEDGE:
            return settled
        if settled is not None:  # "5, not 3" states 5; "1 is not divisible by 1" states nothing
            at = text.rfind(settled, 0, end)
            return settled if at >= 0 and _commits(text, at, at + len(settled), settled, denials=False) else None
        if QUALIFIER_BEFORE.search(text[max(0, start - 40) : start]) or QUALIFIER_AFTER.match(text[end:]):
            return QUALIFIED
        window = max(0, start - CLAUSE_WINDOW)
        listed = LIST_BEFORE.search(text[window:start])
        if listed and listed.group(0).strip():
            return text[window + listed.start() : end]  # "1, 2, 3 and 4": the list, not its last item
        committed = _commitments(text, [(offset + m.start(), offset + m.end()) for m in numbers])
        if not committed:
            return None
        (last, at), earlier = committed[0], committed[1:]
        if earlier and text.rstrip()[-1:].isdigit() and plain_text(earlier[0][0]) != plain_text(last):
            if "\n\n" in text[earlier[0][1] : at]:
                return HEDGE  # it stops, without a full stop, on a paragraph that states a new value: unsettled
        return last
    sentence = _sentence_at(text, blocks[-1].start())
    settled = affirmed(sentence, candidates(sentence))
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
    last = committed_value(head)
    earlier_head = _before_last_sentence(head.rstrip())
    earlier = committed_value(earlier_head) if any(ch.isdigit() for ch in earlier_head) else None
    if last in REASONS or not last:
        return last or TRUNCATED
    if earlier and earlier not in REASONS and plain_text(earlier) != plain_text(last):
        return HEDGE
    return last


def _before_last_sentence(text: str) -> str:
    """The text up to the end of its second-to-last sentence (sentence ends inside math do not count)."""
    outside = MATH_BLOCK.sub(lambda m: "$" * len(m.group(0)), text)
    ends = [m.end() for m in SENTENCE_END.finditer(outside) if m.end() < len(text.rstrip())]
    return text[: ends[-1]] if ends else ""


def cut_off(text: str) -> bool:
    """Whether the text stops in the middle of a sentence: it ends in a letter, a comma, an operator or an open
    bracket, other than a unit or a counted noun right after its last number ("$28$ percent", "12 apples")."""
    if not CUT_OFF_END.search(text):
        return False
    tail = re.split(r"[\d$]", text[-MAX_UNIT_CHARS:])[-1].strip()
    if len(tail) >= MAX_UNIT_CHARS - 1:
        return True  # far too long for a unit or a counted noun
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
    for start, end in reversed(spans[-MAX_NUMBERS_EXAMINED:]):
        if LIST_MARKER.match(text, start) and re.search(
            r"(?:^|[\n.!?。:：]|\*\*)\s*$", text[max(0, start - 8) : start]
        ):
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
    sentence_start = max(text.rfind("\n", 0, start) + 1, start - CLAUSE_WINDOW)
    for match in SENTENCE_END.finditer(text, sentence_start, start):
        if not (match.group(0) == "." and text[match.start() - 1 : match.start()].isdigit()):
            sentence_start = match.end()
    clause_start = sentence_start
    for match in CLAUSE_BREAK.finditer(text, sentence_start, start):
        clause_start = match.end()
    after_match = CLAUSE_BREAK.search(text, end, end + CLAUSE_WINDOW)
    clause_end = after_match.start() if after_match else min(len(text), end + CLAUSE_WINDOW)
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


def candidates(sentence: str) -> list[tuple[int, int, str]]:
    """Math blocks and the numbers outside them, as (start, end, text), in order."""
    found = [(m.start(), m.end(), next(g for g in m.groups() if g is not None)) for m in MATH_BLOCK.finditer(sentence)]
    masked = MATH_BLOCK.sub(lambda m: " " * len(m.group(0)), sentence)
    found += [
        (m.start(), m.end(), m.group(0)) for m in NUMBER.finditer(masked) if any(c.isdigit() for c in m.group(0))
    ]
    return sorted(found)


def affirmed(sentence: str, candidates: list[tuple[int, int, str]]) -> str | None:
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
    rejected = {plain_text(text) for (_, _, text), no in zip(candidates, denied) if no}
    if not kept or rejected & {plain_text(text) for text in kept}:
        return HEDGE  # nothing affirmed, or the value affirmed is also denied: "12 (not 12)"
    return kept[-1]


def looks_like_prose(text: str, min_words: int = 3) -> bool:
    """At least `min_words` plain words (3+ letters, not LaTeX commands, not in `\\text{}`): a sentence."""
    plain = re.sub(r"\\(?:text|begin|end|mathrm|operatorname)\{[^{}]*\}", "", text)
    return sum(word.lower() not in BARE_WORDS for word in PROSE_WORD.findall(plain)) >= min_words


def _answer_in_sentence(sentence: str, single_value: bool = False) -> str | None:
    """The answer in the sentence after an anchor (up to the clause that describes it: `statement_head`): after its
    last " is ", a math block, a formula, or its first number (`SEVERAL` for "3 hours and 20 minutes")."""
    sentence = statement_head(sentence)
    if sentence in (HEDGE, SEVERAL):
        return sentence
    if " is " in sentence:
        sentence = sentence[sentence.rindex(" is ") + 4 :]
    if looks_like_prose(sentence, min_words=1):
        settled = affirmed(sentence, candidates(sentence))
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
        return TRUNCATED if cut_off(text) and not SENTENCE_END.search(after.rstrip()) else None
    (last_match, answer), earlier = stated[0], stated[1:]
    if answer != HEDGE and earlier and earlier[0][1] != HEDGE:
        between = text[earlier[0][0].end() : last_match.start()]
        if plain_text(earlier[0][1]) != plain_text(answer) and not RETRACTION.search(between):
            return HEDGE
    return answer


def _anchor_statement(text: str, match: re.Match) -> str | None:
    segment = text[match.end() :].lstrip(" :*\t\n")
    opening = text[: match.start()]
    opening = opening[max(opening.rfind("\n"), *(m.end() for m in SENTENCE_END.finditer(opening)), 0) :]
    mid_sentence = any(word.lower() not in ANCHOR_OPENERS for word in re.findall(r"[A-Za-z]+", opening))
    return _answer_in_sentence(first_sentence(segment), single_value=mid_sentence)


def leading_line(text: str) -> str | None:
    """A first line that is only a number or a sum ending in one ("7", "3 + 4 = 7"), followed by more text that
    takes nothing back: the answer the completion opens with (the format "answer with the number only" asks for)."""
    first, _, rest = text.strip().partition("\n")
    first = first.strip().rstrip(".")
    if not rest.strip() or not LEADING_ANSWER.fullmatch(first) or RETRACTION.search(rest):
        return None
    return first


def bare_answer(text: str) -> str | None:
    """A short completion that is only a formula (`\\frac{1}{2}`, `(2,4)`) is its own answer."""
    text = text.strip()
    if len(text) > MAX_BARE_CHARS or "\n" in text or NON_LATIN.search(text) or MATH_DELIMITERS.search(text):
        return None
    if re.fullmatch(r"[A-Za-z]+", text):
        return text  # one word alone: a name or a word answer ("Nave", "odd")
    words = re.findall(r"(?<![\\a-zA-Z])[a-zA-Z]{2,}", re.sub(r"\\(?:text|begin|end)\{[^{}]*\}", "", text))
    if len(words) > 2 or any(len(word) > 3 and word.lower() not in BARE_WORDS for word in words):
        return None  # prose: "To confirm, 68 - 34 = 34."
    if STATING_VERB.search(text):
        return None  # "We get x^2 + 1.": a sentence, read for what it states
    return text
