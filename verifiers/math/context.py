"""What the sentence around an answer says about it. Pure string work, no sympy.

A box is a committed answer only where its sentence commits to it (docs/verifiers.md, "the final-answer model"):
- a box in a question ("Is it $\\boxed{5}$?"), in a clause that denies it ("it cannot be $\\boxed{5}$"; "not 3 but
  $\\boxed{5}$" affirms 5), in a hypothesis ("Suppose $\\boxed{5}$; ...", "if x = $\\boxed{5}$, ...") or one that the
  next sentence refutes ("... a contradiction"), in an aside (inside parentheses, a footnote, "by the way") is no
  answer;
- judgement written inside the box (`\\boxed{5 \\text{ is wrong}}`, `\\boxed{\\text{not (C)}}`) is not a value;
- after an answer cue, the statement ends where a clause describing its value begins (`statement_head`: "$8$, which
  is more than $5$" states 8), a parenthesis that denies a value is a denial ("7 (not 12)"), and a quantity in
  several parts is no one of its numbers ("3 hours and 20 minutes");
- a completion cut off while its working goes on has not reached its answer (`working_goes_on`).
Each check reads a bounded window, so its cost stays linear in the text's length.
"""

from __future__ import annotations

import re

MATH_BLOCK = re.compile(r"\$\$(.+?)\$\$|\\\[(.+?)\\\]|\\\(([^\n]+?)\\\)|\$([^$\n]+?)\$", re.DOTALL)
NEGATION = re.compile(
    r"\b(?:not|never|cannot|isn't|aren't|non|pas|instead of|rather than|except)\b|n't\b|不是|不", re.IGNORECASE
)
# A negation within the last few words before a candidate denies it: "not 3", "it can't be A".
NEGATED = re.compile(f"(?:{NEGATION.pattern})" + r"\W*(?:\w+\W+){0,2}\W*$", re.IGNORECASE)
# Answers that name several candidates, or deny the one they name: extraction reports a hedge.
HEDGE = "hedge"
# A describing clause that restates the value ("6, which is 2 + 4 = 8"): what it restates must be the value.
RESTATED = re.compile(
    r"(?:which|that)\s+(?:is|equals|makes|gives)\s+(\$[^$]*\$|[^a-zA-Z$]*?)\s*[.!?]?$", re.IGNORECASE
)
# Why an anchored statement gives no answer: it states several values ("3 hours and 20 minutes").
SEVERAL = "unparseable: several values"
# Words that offer another candidate: "or", "could", "maybe".
HEDGE_WORDS = re.compile(
    r"\b(?:or|either|maybe|perhaps|possibly|probably|might|could|unless|otherwise|alternatively)\b", re.IGNORECASE
)
# A quantity in several parts: a number and its unit or noun, then another number ("3 hours and 20 minutes").
COMPOUND = re.compile(
    r"\d(?:[\d.,/]*\d)?\s*(?!(?:but|not|or|to|than|and|plus|minus|times|over|of)\b)[a-zA-Z]{1,12}"
    r"(?:\s+[a-zA-Z]{2,12})?\s*(?:,|\band\b|\bplus\b|&)?\s*\d(?:[\d.,/]*\d)?\s*[a-zA-Z]{1,12}\b",
    re.IGNORECASE,
)
# Where the statement after an answer cue ends: a clause that describes the value ("$8$, which is more than $5$",
# "42 because 6 x 7 = 42"), or a parenthesis ("7 (3 + 4)"; one that denies a value is kept as a denial: "(not 12)").
DESCRIBING_CLAUSE = re.compile(
    r",?\s+(?:which|who|whose|where|since|because|as|so\s+that|meaning|"
    r"i\.\s*e\.|e\.\s*g\.|that\s+is|obtained|found|given)\b|(?<=[\w$}])\s\(",
    re.IGNORECASE,
)

# How far around a box its sentence is read.
CONTEXT_CHARS = 300
SENTENCE_BOUNDARY = re.compile(r"[.!?](?=\s|$)|\n|。|？|！")
# Words of a clause that put a value as a supposition: the value is tried, not stated.
HYPOTHESIS = re.compile(
    r"^\W*(?:suppose|supposing|assume|assuming|if|let'?s\s+say|say|what\s+if|imagine|hypothetically|guess|try|"
    r"trying|for\s+(?:example|instance)|e\.\s*g\.)\b",
    re.IGNORECASE,
)
CLAUSE_START = re.compile(r"[,;:]|\b(?:then|so|thus|hence|therefore|and|but|because|since)\b", re.IGNORECASE)
# A clause right after the box that takes it back: "$\boxed{5}$, which is impossible", "This leads to a
# contradiction".
REFUTED_AFTER = re.compile(
    r"^[\s$.,;:]*(?:which|that|but\s+(?:this|that)|this|it)\s+(?:(?:is|would\s+be|was)\s+(?:not\s+possible|"
    r"impossible|absurd|wrong|incorrect|invalid|not\s+(?:the\s+)?(?:answer|correct|right))|contradicts|"
    r"(?:gives|leads\s+to|yields)\s+(?:a\s+)?contradiction|does\s*n[o']?t\s+work)",
    re.IGNORECASE,
)
# Words after a negation that affirm what follows it: "not 3 but 5", "nothing other than 5".
CONTRAST = re.compile(r"\b(?:but|rather|instead|other\s+than|only|except)\b", re.IGNORECASE)
ASIDE_OPENER = re.compile(
    r"^\W*(?:\[\^\w+\]|(?:footnote|aside|as\s+an\s+aside|side\s+note|p\.\s*s\.|by\s+the\s+way|incidentally|"
    r"for\s+comparison)\b)",
    re.IGNORECASE,
)
# A sentence that opens a step of the working ("First, 6 x 7 = 42."), and words of a sentence that goes on working
# ("Then we subtract"): a completion cut off there had not reached its answer.
STEP_OPENER = re.compile(
    r"^\W*(?:first(?:ly)?|then|next|now|after\s+that|afterwards|second(?:ly)?|third(?:ly)?|step\s*\d+|"
    r"to\s+(?:start|begin)|we\s+(?:start|begin)|let'?s\s+(?:start|begin|first))\b",
    re.IGNORECASE,
)
WORKING_VERBS = re.compile(
    r"\b(?:add|adding|subtract|subtracting|multiply|multiplying|divide|dividing|plus|minus|times|compute|computing|"
    r"calculate|calculating|solve|solving|simplify|simplifying|substitute|substituting|plug|plugging|"
    r"carry|carrying|remainder)\b",
    re.IGNORECASE,
)
WORKING_SIGNS = re.compile(r"\s[-+*/×=]\s|\d\s*[-+*/×=^]|[-+*/×=^]\s*\d|\\(?:times|div|cdot|frac)|\d")
# Judgement written inside a box: it judges a value, it does not give one.
JUDGEMENT = re.compile(
    r"\b(?:not|never|cannot|can't|isn't|aren't|wasn't|doesn't|wrong|incorrect|mistaken|invalid)\b|n't\b",
    re.IGNORECASE,
)
TEXT_IN_MATH = re.compile(r"\\(?:text|textbf|textit|textrm|mathrm|mbox)\s*\{([^{}]*)\}")


def judged_in_box(content: str) -> bool:
    """Whether the box holds judgement rather than a value: `5 \\text{ is wrong}`, `\\text{not (C)}`."""
    words = " ".join(TEXT_IN_MATH.findall(content)) + " " + TEXT_IN_MATH.sub(" ", content)
    return JUDGEMENT.search(re.sub(r"\\[a-zA-Z]+", " ", words)) is not None


def box_context(text: str, start: int, end: int) -> str | None:
    """Why the box at `text[start:end]` is not a committed answer ("question", "denied", "hypothesis", "aside"), or
    None when its sentence commits to it."""
    before = text[max(0, start - CONTEXT_CHARS) : start]
    if before.count("$") % 2:  # the delimiter that opens the box's own math block
        at = before.rindex("$")
        before = before[:at] + " " + before[at + 1 :]
    before = _outside_math(before)
    sentence_start = max((m.end() for m in SENTENCE_BOUNDARY.finditer(before)), default=0)
    head = before[sentence_start:].replace("$", " ")
    after = _outside_math(re.sub(r"^[^$\n.?!]*?(?:\$\$?|\\\)|\\\])", " ", text[end : end + CONTEXT_CHARS], count=1))
    sentence_end = SENTENCE_BOUNDARY.search(after.replace("$", " "))
    tail = after[: sentence_end.start()] if sentence_end else after
    if sentence_end and sentence_end.group(0) in "?？" and not CONTRAST.search(tail):
        return "question"
    clause = head[max((m.end() for m in CLAUSE_START.finditer(head)), default=0) :]
    denial = NEGATED.search(clause)  # "it cannot be", "is not"; "not hard: $\boxed{5}$" denies nothing
    if denial and not CONTRAST.search(clause[denial.start() :]):
        return "denied"
    if HYPOTHESIS.search(clause):
        return "hypothesis"
    if REFUTED_AFTER.search(after):
        return "refuted"
    if ASIDE_OPENER.search(head) or head.count("(") > head.count(")") and ")" in tail:
        return "aside"
    return None


def _outside_math(text: str) -> str:
    """`text` with the math blocks it holds whole replaced by spaces (same length): their punctuation ends nothing."""
    return MATH_BLOCK.sub(lambda m: " " * len(m.group(0)), text)


def statement_head(sentence: str) -> str:
    """The statement of an anchored sentence without the clause that describes its value: "$8$, which is more than
    $5$" -> "$8$"; "7 (not 12)" -> "7, not 12" (a parenthesis that denies a value stays a denial); "x = 3 + 4 = 7
    apples" states its last part."""
    masked = MATH_BLOCK.sub(lambda m: "x" * len(m.group(0)), sentence)  # a formula reads as one word here
    cut = next((m for m in DESCRIBING_CLAUSE.finditer(masked) if re.search(r"[\d\\$]", sentence[: m.start()])), None)
    if cut is None or HEDGE_WORDS.search(masked[cut.start() :]):
        head = sentence  # "..., which could also be 6": the hedge is read with the statement
    else:
        head = sentence[: cut.start()]
        restated = RESTATED.match(sentence, cut.end() - len(cut.group(0).split()[-1]))
        if restated and _value(restated.group(1)) and _value(restated.group(1)) != _value(head):
            return HEDGE  # "The answer is 6, which is 2 + 4 = 8": it restates another value
        if cut.group(0).endswith("("):
            close = masked.find(")", cut.end())
            aside = sentence[cut.end() : close if close >= 0 else len(sentence)]
            if NEGATION.search(aside):
                head = f"{head}, {aside}"
    masked_head = MATH_BLOCK.sub(lambda m: " " * len(m.group(0)), head)
    words = re.search(r"(?<![\\a-zA-Z])[a-zA-Z]{3,}", masked_head)
    if "=" in masked_head and words and "$" not in masked_head and not re.search(r"[<>]|\\[lg]e", masked_head):
        head = head[masked_head.rindex("=") + 1 :]  # "3 + 4 = 7 apples" states "7 apples"
    if COMPOUND.search(MATH_BLOCK.sub(" ", head)):
        return SEVERAL  # "3 hours and 20 minutes", "5 apples and 3 pears": no one number is the answer
    return head


def working_goes_on(text: str, ends_on_number: bool = False) -> bool:
    """Whether a text that stops without a full stop stopped inside its working, so that a number before its last
    sentence is an intermediate result, not an answer. Cut in mid-sentence: its last sentence goes on computing
    ("... = 42. Then we subtract") or the sentence before it is a step ("First, 6 x 7 = 42."). Ending on a number
    (`ends_on_number`): its unfinished last sentence is a step or names an operation ("Then we subtract 5"); the
    caller checks that this sentence does not state the value itself ("Then we subtract 5 to get 37")."""
    last, previous = last_sentences(text)
    if last is None:
        return False  # one sentence: nothing before it was a step
    if ends_on_number:
        return bool(STEP_OPENER.search(last) or WORKING_VERBS.search(last))
    working = WORKING_VERBS.search(last) or WORKING_SIGNS.search(last)
    return bool(STEP_OPENER.search(last) or working or STEP_OPENER.search(previous))


def last_sentences(text: str) -> tuple[str | None, str]:
    """The last sentence of `text` and the one before it (read within a bounded window); (None, "") for one sentence."""
    text = text.rstrip()[-2 * CONTEXT_CHARS :]
    outside = _outside_math(text)
    ends = [m.end() for m in SENTENCE_BOUNDARY.finditer(outside) if m.end() < len(outside)]
    if not ends:
        return None, ""
    return text[ends[-1] :], text[ends[-2] if len(ends) > 1 else 0 : ends[-1]]


def _value(formula: str) -> str:
    """The value a formula without words states, spaces and dollars removed: its last part after `=`."""
    return re.sub(r"[\s$]", "", formula.split("=")[-1])
