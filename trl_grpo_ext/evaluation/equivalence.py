"""Answer classes for majority votes: answers the verifier itself judges equivalent share a class.

Equal strings are one class without asking the verifier. Otherwise a sample joins the first class whose
representative answer (the first extracted answer of the class), taken as the reference, gives the sample's
completion full marks from the verifier: `\\frac{1}{2}` joins `0.5` under the `math` verifier, as it would be paid
against that reference. Only the verifiers' public API is used (`verify_batch`), so any registered verifier works.

A pair the verifier gives no verdict on (its `verify_batch` raised, or the pair's result is an internal error) is not
merged: its answers vote apart, as different strings do. Such pairs are counted (`answer_classes`, the `ungrouped`
figure of each prompt and `maj_ungrouped` in training) and logged, so that a broken verifier never changes maj@k
silently.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

logger = logging.getLogger(__name__)

FULL_MARKS = 1.0


def is_full_marks(score: float | None) -> bool:
    """Correct: a verdict exists and it is full marks (partial credit is not a pass)."""
    return score is not None and score >= FULL_MARKS


def group_answers(completions: Sequence[str], extracted: Sequence[str | None], verifier: Any) -> list[int | None]:
    """Each sample's answer class (`answer_classes` without the count of pairs left unjudged)."""
    return answer_classes(completions, extracted, verifier)[0]


def answer_classes(
    completions: Sequence[str], extracted: Sequence[str | None], verifier: Any
) -> tuple[list[int | None], int]:
    """Each sample's answer class (0, 1, ... in order of first appearance), None for a sample with no answer; and how
    many pairs of distinct answers the verifier gave no verdict on (see the module).

    Every distinct answer is checked against each distinct answer seen before it in one `verify_batch` call (the
    verifier's workers run the pairs in parallel); then, in order, an answer joins the class of the first earlier
    answer that accepts it, unless that answer itself joined a class (it is then no representative).
    """
    first_sample: dict[str, int] = {}
    for i, answer in enumerate(extracted):
        if answer is not None and answer.strip() and answer not in first_sample:
            first_sample[answer] = i
    distinct = list(first_sample)
    pairs = [(a, r) for a in range(len(distinct)) for r in range(a)]
    completions_asked = [completions[first_sample[distinct[a]]] for a, _ in pairs]
    verdicts: list[Any] = [None] * len(pairs)  # None: no verdict
    reason = ""
    if pairs:
        try:
            returned = list(verifier.verify_batch(completions_asked, [distinct[r] for _, r in pairs]))
            if len(returned) != len(pairs):
                raise TypeError(f"verify_batch returned {len(returned)} results for {len(pairs)} pairs")
            verdicts = returned
        except Exception as exc:  # any verifier's own failure (its contract says internal errors, not exceptions)
            reason = f"verify_batch raised {type(exc).__name__}: {exc}"
            logger.debug("maj@k: %s", reason, exc_info=True)
    unjudged = [i for i, result in enumerate(verdicts) if result is None or result.is_internal_error]
    if unjudged:
        logger.warning(
            "maj@k: %s gave no verdict on %d of %d answer pairs (%s); their answers vote apart, counted as ungrouped.",
            type(verifier).__name__,
            len(unjudged),
            len(pairs),
            reason or verdicts[unjudged[0]].reason,
        )
    accepted = {pair for pair, result in zip(pairs, verdicts) if result is not None and is_full_marks(result.score)}
    class_of: list[int] = []  # per distinct answer
    representatives: list[int] = []  # distinct-answer index of each class's first answer
    for a in range(len(distinct)):
        match = next((c for c, r in enumerate(representatives) if (a, r) in accepted), None)
        if match is None:
            match = len(representatives)
            representatives.append(a)
        class_of.append(match)
    index = {answer: class_of[i] for i, answer in enumerate(distinct)}
    return [index.get(answer) if answer is not None else None for answer in extracted], len(unjudged)
