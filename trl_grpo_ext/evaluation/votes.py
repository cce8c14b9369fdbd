"""What each sample of one prompt votes with in maj@k, so that maj@k is computed or reported unavailable, never 0 by
accident.

- **Extracted answers.** When the first verifier returned an extracted answer (`VerificationResult.extracted`) for
  some sample of the prompt, those answers are the votes; a sample without one abstains, and answers the verifier
  judges equivalent are one vote (`equivalence.answer_classes`).
- **Normalised completions.** When it returned none for any sample of the prompt (a plain function returning a
  float extracts nothing), each sample votes with its completion normalised by `normalise_completion`: Unicode NFKC,
  every run of whitespace as one space, both ends stripped; case and punctuation are kept. Equal normalised texts are
  one vote; the verifier is not asked to merge them (its references are answers, not completions). An empty
  completion abstains. A verifier that extracts an answer from every completion it judges correct never reaches this
  case with a correct sample, so its figures do not change.
- **Unavailable.** When the verifier returned answers for some samples but none for a sample it judged correct, that
  sample would abstain and lower the vote: the prompt's maj@k is unavailable (None), with `UNAVAILABLE_REASON`.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from typing import Any

from .equivalence import answer_classes

EXTRACTED = "extracted_answer"
COMPLETION = "normalised_completion"
UNAVAILABLE = "unavailable"
VOTE_SOURCES = (EXTRACTED, COMPLETION, UNAVAILABLE)
UNAVAILABLE_REASON = (
    "the first verifier returned an extracted answer for some samples of a prompt but none for a sample it judged "
    "correct, which would abstain; return VerificationResult(score, reason, extracted=answer) for every scored sample"
)
_WHITESPACE = re.compile(r"\s+")


def normalise_completion(completion: str) -> str:
    """A completion as a vote: Unicode NFKC, every run of whitespace as one space, both ends stripped."""
    return _WHITESPACE.sub(" ", unicodedata.normalize("NFKC", completion)).strip()


def has_answer(answer: str | None) -> bool:
    return answer is not None and bool(answer.strip())


def vote_classes(
    completions: Sequence[str], extracted: Sequence[str | None], correct: Sequence[bool], verifier: Any
) -> tuple[str, list[int | None], int]:
    """(vote source, each sample's answer class or None, answer pairs left ungrouped) of one prompt's samples; the
    classes are [] when the source is `UNAVAILABLE` (see the module)."""
    if not any(has_answer(a) for a in extracted):
        votes = [normalise_completion(c) or None for c in completions]
        first: dict[str, int] = {}
        return COMPLETION, [None if v is None else first.setdefault(v, len(first)) for v in votes], 0
    if any(ok and not has_answer(a) for ok, a in zip(correct, extracted)):
        return UNAVAILABLE, [], 0
    classes, ungrouped = answer_classes(completions, extracted, verifier)
    return EXTRACTED, classes, ungrouped
