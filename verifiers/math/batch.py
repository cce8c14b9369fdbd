"""What one batch of the `math` verifier computes once: the reading of each reference, the normalisation of each
answer, the judgement of each question; and how many items repeated a question of the batch."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

from .extract import extract_reference
from .letters import reference_letter
from .normalize import Normalized, normalize_answer

CHOICE_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


@dataclass(frozen=True)
class Reference:
    """A reference as the verifier reads it: its answer (None: unusable, `how` says why), its choice letter and the
    letters a completion may answer with."""

    answer: str | None
    how: str
    letter: str | None = None
    letters: str | None = None


class BatchMemo:
    """What one batch computes once: each reference's reading, each answer's normalisation, each question's judgement
    (a question: the normalised candidate answers and the normalised reference), and how many items asked a question
    that an earlier item of the batch had asked (`duplicates`)."""

    def __init__(self) -> None:
        self._references: dict[str, Reference] = {}
        self._normalized: dict[tuple[str, bool], Normalized] = {}
        self._judgements: dict[tuple, Any] = {}
        self._questions: set[Hashable] = set()
        self.duplicates = 0
        self.last_question: Hashable | None = None  # the question `seen` last (the caller resets it per item)

    def reference(self, reference: str) -> Reference:
        if reference not in self._references:
            self._references[reference] = read_reference(reference)
        return self._references[reference]

    def normalized(self, answer: str, strip_units: bool, reference: bool = False) -> Normalized:
        """`normalize_answer`, once per text and side (an exception is not kept: each item that asks raises)."""
        key = (answer, reference)
        if key not in self._normalized:
            self._normalized[key] = normalize_answer(answer, strip_units, reference=reference)
        return self._normalized[key]

    def seen(self, question: Hashable) -> None:
        self.last_question = question
        if question in self._questions:
            self.duplicates += 1
        self._questions.add(question)

    def judgement(self, question: tuple, judge: Callable[[tuple], Any]) -> Any:
        if question not in self._judgements:
            self._judgements[question] = judge(question)
        return self._judgements[question]


def read_reference(reference: str) -> Reference:
    extraction = extract_reference(reference)
    if extraction.answer is None:
        return Reference(None, extraction.how)
    letter = reference_letter(extraction.answer)
    letters = CHOICE_LETTERS[: max(5, CHOICE_LETTERS.index(letter) + 1)] if letter else None
    return Reference(extraction.answer, extraction.how, letter, letters)
