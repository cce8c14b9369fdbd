"""What a completion shows on the page, before its answer is looked for. Pure string work, no sympy.

Text after an end-of-turn token, or after a line that starts a new turn or a next problem ("Human:", "User:",
"Problem:", "Question 2:"), is not the completion's; Unicode math becomes LaTeX (`−7` keeps its sign, `2√3` its
root: `normalize.unicode_to_latex`); LaTeX comments, `\\phantom`, colours, underlines, sizing commands and markdown
bold render nothing of their own and are removed; `\\$` is a currency sign, never a math delimiter.
"""

from __future__ import annotations

import re

from .normalize import unicode_to_latex

END_OF_TURN = re.compile(
    r"<\|im_end\|>|<\|im_start\|>|<\|endoftext\|>|<\|eot_id\|>|<\|end\|>|</s>|<\|user\|>|<\|assistant\|>|\[INST\]"
)
# A line that starts a new turn or an invented next problem: "Human:", "User:", "Problem:", "Question 2:",
# "### Problem 3". What follows is not the completion's answer (a label at the very start is the model's own
# restatement of the question, not a run-on).
RUN_ON = re.compile(
    r"\n[ \t]*(?:#{1,6}[ \t]*)?(?:\*\*)?(?:(?:Human|User|Assistant|System)\s*:|"
    r"(?:Problem|Question|Exercise|Example)(?:\s+\d+)?\s*:|(?:Problem|Question|Exercise)\s+\d+\b)"
)
# What renders nothing, or only decorates: a LaTeX comment (an unescaped `%` not after a number, to the end of its
# line), `\phantom{...}`, a colour, an underline, sizing commands, markdown bold.
LATEX_COMMENT = re.compile(r"(?<![\\\d)}])(?<![\d)}] )%[^\n]*")
PHANTOM = re.compile(r"\\[hv]?phantom\s*\{[^{}]*\}")
COLOR = re.compile(r"\\color\s*\{[^{}]*\}")
DECORATION = re.compile(r"\\(?:textcolor|colorbox)\s*\{[^{}]*\}\s*\{([^{}]*)\}|\\(?:underline|uline)\s*\{([^{}]*)\}")
SIZING = re.compile(r"\\(?:[Bb]igg?|[Bb]igg?[lrm])(?![a-zA-Z])\s*")
MARKDOWN_BOLD = re.compile(r"\*\*([^*\n]+?)\*\*|__([^_\n]+?)__")
# Characters that render as nothing, inside a number too ("1\u200b2" is 12): zero-width spaces and joiners, bidi marks,
# the soft hyphen, the byte-order mark; and equation labels (`\tag{1}`), which render beside the formula.
INVISIBLE = re.compile("[\u00ad\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")
EQUATION_TAG = re.compile(r"\\tag\*?\s*\{[^{}]*\}")
BRACKET_WORDS = {"\\lbrack": "[", "\\rbrack": "]", "\\lbrace": "\\{", "\\rbrace": "\\}", "\\nicefrac": "\\frac"}


def rendered(text: str) -> str:
    """The text as it reads on the page, up to an end-of-turn token (`<|im_end|>`, `<|im_start|>`, `</s>`...): Unicode math as LaTeX (`−7` keeps its sign, `2√3` its root), without
    comments, phantoms, colours, underlines, sizing commands and markdown bold; `\\$` as `\\textdollar` so that a
    currency sign is never read as a math delimiter."""
    end_of_turn = END_OF_TURN.search(text)
    if end_of_turn:  # a model that runs on into a new turn: what follows is not its answer
        text = text[: end_of_turn.start()]
    run_on = next((m for m in RUN_ON.finditer(text) if text[: m.start()].strip()), None)
    if run_on:  # a new turn or a next problem of its own invention
        text = text[: run_on.start()]
    text = INVISIBLE.sub("", unicode_to_latex(text))
    if "%" in text:
        text = LATEX_COMMENT.sub("", text)
    if "\\" in text:
        text = EQUATION_TAG.sub("", PHANTOM.sub("", text))
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
