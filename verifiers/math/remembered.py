"""Whole results of the `math` verifier, remembered across batches by the completion's text and the reference.

A training run asks the same pair again and again: the G completions of a prompt repeat whole answers within a step
(`verify_batch_with_stats` decides those once), and across steps when a prompt comes back or the answers are short
(the 6144 completions of the demo's first 24 steps hold 253 distinct pairs). Extraction, normalisation and judgement
are functions of the two texts and of the options, so a result decided once is the result of every later call with
the same texts: it skips extraction and normalisation too, which the verdict cache of worker decisions cannot.

Entries live in the verifier's `VerdictCache` (one bound, `cache_mb`, for both kinds of entry), under a namespace
naming every option that can change a result. Only decisions are remembered: never a failure of the machinery, a
timeout or a `comparison_error` (the caller decides which results qualify). Each entry also keeps the question the
item asked and the worker question it needed, so that a batch's `dedup_rate` and `cache_hit_rate` are the same as
without it.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from sys import getsizeof
from typing import Any

from ..core.cache import ENTRY_OVERHEAD_BYTES, VerdictCache
from ..core.contract import VerificationResult
from .normalize import Normalized

# Counted per entry besides its strings: the key tuple, the entry, the result's details dict (about 700 bytes by
# `estimate_bytes` on the public pairs), each `Normalized` of the question (180) and each tuple (64); rounded up.
ENTRY_FIXED_BYTES = 1024
NORMALIZED_BYTES = 200
TUPLE_BYTES = 64


@dataclass(frozen=True)
class Remembered:
    """A result, the question its item asked (None: it asked none, e.g. a missing reference) and the pairs it sent to
    a worker (None: decided in-process)."""

    score: float | None
    reason: str
    extracted: str | None
    details: dict[str, Any]
    question: Hashable | None
    pairs: tuple | None

    def result(self) -> VerificationResult:
        return VerificationResult(self.score, self.reason, self.extracted, dict(self.details))


class ResultMemory:
    """Results by (completion, reference) text in `cache`, under `namespace`."""

    def __init__(self, cache: VerdictCache, namespace: str):
        self._cache, self._namespace = cache, namespace

    def get(self, completion: str, reference: str) -> Remembered | None:
        if not self._cache.max_bytes:
            return None
        return self._cache.get((self._namespace, completion, reference))

    def put(
        self,
        completion: str,
        reference: str,
        result: VerificationResult,
        question: Hashable | None,
        pairs: tuple | None,
    ) -> None:
        if not self._cache.max_bytes:
            return
        entry = Remembered(result.score, result.reason, result.extracted, dict(result.details), question, pairs)
        self._cache.put((self._namespace, completion, reference), entry, entry_bytes(completion, reference, entry))


def entry_bytes(completion: str, reference: str, entry: Remembered) -> int:
    """An entry's bytes, counted cheaply (this runs once per distinct item; `estimate_bytes` of the whole entry costs
    more than a lookup saves on a cold batch) and on the high side of `estimate_bytes` (tested on the public pairs).
    The shapes are those `MathVerifier` stores: details of strings and string pairs, a question of `Normalized`
    answers or of strings, pairs grouped per candidate answer."""
    size = ENTRY_FIXED_BYTES + ENTRY_OVERHEAD_BYTES + getsizeof(completion) + getsizeof(reference)
    size += getsizeof(entry.reason) + getsizeof(entry.extracted)
    for value in entry.details.values():
        size += getsizeof(value) if isinstance(value, str) else TUPLE_BYTES + sum(map(getsizeof, value))
    question = entry.question
    if isinstance(question, tuple) and len(question) == 2 and isinstance(question[1], Normalized):
        size += 2 * TUPLE_BYTES + sum(_normalized_bytes(answer) for answer in (*question[0], question[1]))
    elif question is not None:
        size += TUPLE_BYTES + sum(getsizeof(part if isinstance(part, str) else str(part)) for part in question)
    for group in entry.pairs or ():
        size += TUPLE_BYTES + sum(2 * TUPLE_BYTES + getsizeof(pred) + getsizeof(ref) for pred, ref in group)
    return size


def _normalized_bytes(answer: Normalized) -> int:
    return NORMALIZED_BYTES + getsizeof(answer.text) + getsizeof(answer.unit or "") + getsizeof(answer.invalid or "")
