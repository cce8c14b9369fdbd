"""How a verifier reward function reports failures (see `reward.py`): the first failure of each kind in a process at
ERROR with its traceback, one warning per batch with the counts, and a stop after `max_failed_batches` batches in a
row in which the verifier failed on every item."""

from __future__ import annotations

import logging
import threading
from collections import Counter
from typing import Any

from .contract import VerificationResult

# How much of an answer, a reference or a reason the warnings show, and of an exception's message.
LOGGED_CHARS = 300
LOGGED_ERROR_CHARS = 500

logger = logging.getLogger("trl_grpo_ext.verifiers.reward")  # the reward adapter's logger: its warnings

# Reasons of a 0 that is not a verdict on the answer but an exception while checking it (a bug the answer triggers).
CHECK_ERRORS = ("comparison_error", "judge_error")


_logged_kinds: set[tuple[str, str]] = set()
_logged_lock = threading.Lock()


def failure_kind(reason: str) -> str:
    """What a failure's reason names before its message: `internal_error: crashed: the worker ...` ->
    `internal_error: crashed`, `comparison_error: TypeError` as is."""
    return ": ".join(reason.split(": ", 2)[:2])


def log_first_of_each_kind(name: str, results: list[VerificationResult], references: list[Any]) -> None:
    """The first failure of each kind (`failure_kind`) of verifier `name` in this process, at ERROR, with its
    traceback (or the exception's message where the failure happened in another process) and the answer and
    reference it happened on: a bug is reported in full once, and the per-batch warnings count the rest."""
    for result, reference in zip(results, references):
        if not (result.is_internal_error or result.reason.startswith(CHECK_ERRORS)):
            continue
        key = (name, failure_kind(result.reason))
        with _logged_lock:
            if key in _logged_kinds:
                continue
            _logged_kinds.add(key)
        details = result.details if isinstance(result.details, dict) else {}
        trace = details.get("traceback") or details.get("error") or result.reason
        logger.error(
            "verifier %r: %s (score %s; the first of this kind in this process, later ones are only counted), "
            "answer %s, reference %s:\n%s",
            name,
            key[1],
            result.score,
            f"{result.extracted!r:.{LOGGED_CHARS}}" if result.extracted is not None else "(none extracted)",
            f"{reference!r:.{LOGGED_CHARS}}",
            trace,
        )


def warn_internal_errors(name: str, results: list[VerificationResult]) -> None:
    """One warning per batch, however many items failed."""
    reasons = Counter(r.reason for r in results if r.is_internal_error)
    if reasons:
        logger.warning(
            "verifier %r failed on %d of %d items (reward None: left out of their group's statistics): %s",
            name,
            sum(reasons.values()),
            len(results),
            _summary(reasons),
        )


def warn_check_errors(name: str, results: list[VerificationResult], references: list[Any]) -> None:
    """One warning per batch for the answers whose check raised, with the first such answer and its reference."""
    failed = [(r, ref) for r, ref in zip(results, references) if r.reason.startswith(CHECK_ERRORS)]
    if not failed:
        return
    first, reference = failed[0]
    error = first.details.get("error") if isinstance(first.details, dict) else None
    logger.warning(
        "verifier %r raised while checking %d of %d answers (scored 0, not a verdict on them; a bug of the verifier "
        "or of a library it uses): %s. First: answer %s, reference %s%s",
        name,
        len(failed),
        len(results),
        _summary(Counter(r.reason for r, _ in failed)),
        f"{first.extracted!r:.{LOGGED_CHARS}}" if first.extracted is not None else "(none extracted)",
        f"{reference!r:.{LOGGED_CHARS}}",
        f", error {error!r:.{LOGGED_ERROR_CHARS}}" if error else "",
    )


def _summary(reasons: Counter, most: int = 3) -> str:
    shown = [f"{reason[:LOGGED_CHARS]!r} x{count}" for reason, count in reasons.most_common(most)]
    if len(reasons) > most:
        shown.append(f"and {len(reasons) - most} other reasons")
    return "; ".join(shown)


class FailureWatch:
    """Counts the batches in a row in which the verifier failed on every item it was asked about."""

    def __init__(self, name: str, limit: int):
        self.name, self.limit = name, limit
        self.streak = 0
        self.reasons: Counter = Counter()
        self.example: VerificationResult | None = None
        self._lock = threading.Lock()

    def record(self, results: list[VerificationResult]) -> None:
        """Raise RuntimeError once `limit` batches in a row failed; empty batches do not count. A check that raised
        (`comparison_error`, `judge_error`) counts as a failure here: a verifier that raises on every answer (a
        broken library, say) would otherwise train on zeros."""
        if not results:
            return
        with self._lock:
            if not all(r.is_internal_error or r.reason.startswith(CHECK_ERRORS) for r in results):
                self.streak, self.reasons, self.example = 0, Counter(), None
                return
            self.streak += 1
            self.reasons.update(r.reason for r in results)
            self.example = self.example or results[0]
            if self.streak < self.limit:
                return
            streak, reasons, example = self.streak, self.reasons, self.example
            self.streak, self.reasons, self.example = 0, Counter(), None
        trace = example.details.get("traceback") if example and isinstance(example.details, dict) else None
        raise RuntimeError(
            f"verifier {self.name!r} failed on every item of {streak} batches in a row (max_failed_batches="
            f"{self.limit}), so training would go on without a reward signal. Reasons: {_summary(reasons)}."
            + (f"\nThe first failure:\n{trace}" if trace else "")
        )
