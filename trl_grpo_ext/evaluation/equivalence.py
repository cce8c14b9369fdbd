"""Answer classes for majority votes: answers the verifier itself judges equivalent share a class.

Equal strings are one class without asking the verifier. Otherwise a sample joins the first class whose
representative answer (the first extracted answer of the class), taken as the reference, gives the sample's
completion full marks from the verifier: `\\frac{1}{2}` joins `0.5` under the `math` verifier, as it would be paid
against that reference. Only the verifiers' public API is used (`verify_batch`), so any registered verifier works.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

FULL_MARKS = 1.0


def is_full_marks(score: float | None) -> bool:
    """Correct: a verdict exists and it is full marks (partial credit is not a pass)."""
    return score is not None and score >= FULL_MARKS


def group_answers(completions: Sequence[str], extracted: Sequence[str | None], verifier: Any) -> list[int | None]:
    """Each sample's answer class (0, 1, ... in order of first appearance), None for a sample with no answer."""
    representatives: list[str] = []
    by_text: dict[str, int] = {}
    classes: list[int | None] = []
    for completion, answer in zip(completions, extracted):
        if answer is None or not answer.strip():
            classes.append(None)
            continue
        if answer not in by_text:
            by_text[answer] = _matching_class(completion, representatives, verifier)
            if by_text[answer] == len(representatives):
                representatives.append(answer)
        classes.append(by_text[answer])
    return classes


def _matching_class(completion: str, representatives: list[str], verifier: Any) -> int:
    """Index of the first representative the verifier accepts as this completion's reference; a new index if none."""
    if not representatives:
        return 0
    results = verifier.verify_batch([completion] * len(representatives), representatives)
    for index, result in enumerate(results):
        if is_full_marks(result.score):
            return index
    return len(representatives)
