"""`\\boxed{}`, `\\fbox{}` and `\\framebox{}` in a text, brace-balanced. Pure string work."""

from __future__ import annotations

BOX_COMMANDS = ("\\boxed", "\\fbox", "\\framebox")


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
        while text.startswith("[", i) and text.find("]", i, i + 40) > 0:  # `\framebox[2cm][c]{5}`: width, position
            i = text.find("]", i, i + 40) + 1
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
