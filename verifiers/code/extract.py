"""Which program a completion holds, and in which language: fenced blocks, Python or C++, prose.

Read in the trainer's process on every completion, so each step is linear in the text.
"""

from __future__ import annotations

import ast
import re

from .native import CPP_LANGUAGES

_LANGUAGE = re.compile(r"[ \t]*([\w+-]*)")
PYTHON_LANGUAGES = ("python", "py", "python3")


def fenced_blocks(completion: str, first_only: bool = False) -> list[tuple[str, str]]:
    """(language, body) of each Markdown fenced block: a ``` opening, its info line up to the next newline, then the
    body up to the next ```. One left-to-right pass, in time linear in the text (a regular expression with a lazy
    body backtracks quadratically on a completion full of unclosed fences: 10-20 s for 128 kB)."""
    blocks, position = [], 0
    while (start := completion.find("```", position)) >= 0:
        newline = completion.find("\n", start + 3)
        end = completion.find("```", newline + 1) if newline >= 0 else -1
        if end < 0:  # no later opening can have a body with a closing fence either
            break
        blocks.append((_LANGUAGE.match(completion, start + 3, newline).group(1), completion[newline + 1 : end]))
        if first_only:
            break
        position = end + 3
    return blocks


def extract_code(completion: str) -> str:
    """The last ```python block (or, if no block is labelled Python, the last fenced block); else the whole text."""
    blocks = fenced_blocks(completion)
    python_blocks = [body for lang, body in blocks if lang.lower() in PYTHON_LANGUAGES]
    if python_blocks or blocks:
        return (python_blocks or [body for _, body in blocks])[-1]
    return completion


_CPP_MAIN = re.compile(r"\bmain\s*\(")
_CPP_LINES = ("#include", "using namespace", "template <", "template<")


def looks_like_cpp(code: str) -> bool:
    """Untagged code that is a C++ program: a line that starts with `#include`, `using namespace` or `template`, and a
    `main` followed by `(` (whitespace and line breaks between them allowed: `int\nmain (void)`). In Python
    `#include` is a comment, and the other lines with a call of `main` do not parse."""
    return _CPP_MAIN.search(code) is not None and any(
        line.lstrip().startswith(_CPP_LINES) for line in code.splitlines()
    )


def extract_program(completion: str, language: str = "auto") -> tuple[str, str]:
    """("python" or "cpp", the code). `auto`: the last fenced block tagged with a language of either (`python`,
    `py`, `python3`; `cpp`, `c++`, `cc`, `cxx`) decides; without one, the Python rule of `extract_code`, and the code
    is C++ when it reads as a C++ program (`looks_like_cpp`). `python`: `extract_code`. `cpp`: the last block tagged
    C++, else the last fenced block, else the whole text."""
    if language == "python":
        return "python", extract_code(completion)
    blocks = fenced_blocks(completion)
    if language == "cpp":
        tagged = [body for lang, body in blocks if lang.lower() in CPP_LANGUAGES]
        return "cpp", (tagged or [body for _, body in blocks] or [completion])[-1]
    known = [(lang.lower(), body) for lang, body in blocks if lang.lower() in (*PYTHON_LANGUAGES, *CPP_LANGUAGES)]
    if known:
        return ("cpp" if known[-1][0] in CPP_LANGUAGES else "python"), known[-1][1]
    code = extract_code(completion)
    return ("cpp" if looks_like_cpp(code) else "python"), code


def is_prose(completion: str) -> bool:
    """Text that holds no code: no fenced block, and not a Python program either (the parser rejects it).

    Asked only of a completion that already scored 0, so that it names the reason and never changes a score: a
    candidate interpreter newer than the trainer's may run what this parser rejects.
    """
    if fenced_blocks(completion, first_only=True):
        return False
    try:
        compile(completion, "<completion>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):  # ValueError: a null byte
        return True
    return False
