"""What a completion shows on the page, before its answer is looked for. Pure string work, no sympy.

Text after an end-of-turn token is not the completion's; Unicode math becomes LaTeX (`−7` keeps its sign, `2√3` its
root: `normalize.unicode_to_latex`); LaTeX comments, `\\phantom`, colours, underlines, sizing commands and markdown
bold render nothing of their own and are removed; `\\$` is a currency sign, never a math delimiter.
"""

from __future__ import annotations

import re

from .normalize import unicode_to_latex

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
