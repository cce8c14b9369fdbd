"""Adapter from any registered verifier to a TRL reward function.

TRL's GRPOTrainer calls `reward(prompts=..., completions=..., completion_ids=..., **columns)` where `columns` holds the
dataset columns, `trainer_state`, and two loggers: `log_metric(name, value)` (a scalar averaged per logging step) and
`log_extra(column, values)` (a column of the completions table). This module stays free of torch and trl imports.

Failures are loud, never silent zeros: the first failure of each kind is logged at ERROR with its traceback, once per
process; a verifier's own failure is a None reward (TRL turns it into NaN, which keeps
the completion out of its group's statistics), logged once per batch and counted in `<name>/internal_error_rate`; a
verifier that fails on every item for `max_failed_batches` batches in a row stops training with a RuntimeError. An
exception while checking one answer scores 0 (`comparison_error: <type>`, `judge_error: ...`), counted in
`<name>/comparison_error_rate` and `<name>/judge_error_rate` and logged once per batch with the answer and the
reference, so that a verifier bug shows within the first steps instead of reading as wrong answers.
"""

from __future__ import annotations

import asyncio
import atexit
import dataclasses
import logging
import math
import numbers
import threading
import time
import weakref
from collections import Counter
from collections.abc import Sequence
from typing import Any

from .audit import VerifierAudit
from .cache import batch_metrics
from .completions import completion_text
from .contract import QUOTED_CHARS, VerificationResult, internal_error, is_missing
from .failures import FailureWatch, log_first_of_each_kind, warn_check_errors, warn_internal_errors
from .registry import get_verifier

logger = logging.getLogger("trl_grpo_ext.verifiers.reward")

# Reasons counted as shares in `log_metric`, by the prefix of VerificationResult.reason.
TRACKED_REASONS = {
    "timeout": "timeout",
    "unparseable": "unparseable",
    "no_answer": "no_answer",
    "bad_completion": "bad_completion",
    "internal_error": "internal_error",
    "comparison_error": "comparison_error",
    "judge_error": "judge_error",
}


def _reason_shares(results: list[VerificationResult]) -> dict[str, float]:
    counts = Counter()
    for result in results:
        for prefix, metric in TRACKED_REASONS.items():
            if result.reason.startswith(prefix):
                counts[metric] += 1
    n = max(len(results), 1)
    shares = {f"{metric}_rate": counts[metric] / n for metric in TRACKED_REASONS.values()}
    shares["unusable_reference_rate"] = sum(r.score is None and not r.is_internal_error for r in results) / n
    scored = [r.score for r in results if r.score is not None]
    if scored:  # no score is no mean: a 0 here would read as "all wrong"
        shares["mean_score"] = sum(scored) / len(scored)
    return shares


def as_reward_function(
    name: str,
    reference_column: str = "answer",
    max_failed_batches: int = 3,
    start_workers: bool = True,
    audit_canaries: int = 0,
    second_opinion: bool = False,
    audit_log: str | None = None,
    **verifier_options: Any,
) -> VerifierReward:
    """A TRL reward function `(prompts, completions, **columns) -> list[float | None]` backed by verifier `name`.

    The function is named `<name>_reward` (TRL names its metrics `rewards/<function name>/...`). It reads the
    reference of each completion from the dataset column `reference_column`, logs `<name>/timeout_rate`,
    `<name>/unparseable_rate`, `<name>/no_answer_rate`, `<name>/bad_completion_rate`, `<name>/internal_error_rate`,
    `<name>/comparison_error_rate`, `<name>/judge_error_rate`, ..., and per batch `<name>/verify_time_s`,
    `<name>/verify_time_s_p50` / `_p95` / `_max`, `<name>/dedup_rate` and `<name>/cache_hit_rate` (see
    `core/cache.py`, `batch_metrics`) through `log_metric`, and the columns `<name>_extracted` and `<name>_reason`
    through `log_extra`, when the trainer passes those loggers.

    It never raises for bad input: a completion that is not text or a conversation scores 0 (`bad_completion: ...`),
    a missing reference gives None (`unusable_reference: missing`). A failure of the verifier itself gives None
    (`internal_error: ...`) and one warning per batch; when the verifier fails on every item it is asked about for
    `max_failed_batches` non-empty batches in a row, the call raises a RuntimeError naming the reasons, rather than
    letting training go on without a signal. A batch with one real verdict resets the count.

    The verifier is built here (an unknown name, an option it does not accept or a bad value fails now, not
    mid-training) and kept as `reward.verifier`. With `start_workers` (the default) its worker processes start now, in
    the background (`verifier.start(wait=False)`: the math workers take 3-5 s to import sympy and warm up, while the
    trainer loads its model), so the first batch waits for them only if it comes first; with False they start on
    first use. `reward.verifier.close()` stops them; so does the end of the process, or the verifier being
    garbage-collected.

    `reward.submit(**call)` starts verifying a batch on a thread of its own and returns a `PendingReward` at once;
    `reward.collect(pending, **call)` waits for it and returns what `reward(**call)` returns, with the same logging
    and the same failure count (`reward(**call)` is `collect(submit(**call), **call)`, verified on the caller's
    thread). `GRPOExtTrainer` uses them to verify while its log-prob forwards run (`overlap_rewards`).

    The reward function is a `VerifierReward`: it pickles as its verifier's name and options (see there), so it can
    be handed to a spawned process, such as the rollout process of TRL's AsyncGRPOTrainer.

    The verifier can be audited while it trains (`core/audit.py`; never a reward): `audit_canaries=k` scores, each
    batch, canaries built from k of its references and logs `<name>/canary_false_positive`,
    `<name>/canary_false_negative` and `<name>/canary_time_s`; `second_opinion=True` asks another grader (math-verify,
    for `math`) about the batch and logs `<name>/second_opinion_disagreement` and `<name>/second_opinion_only_ours`;
    `audit_log` is a JSONL file where paid canaries and disagreements are appended.
    """
    return VerifierReward(
        name, reference_column, max_failed_batches, start_workers, audit_canaries, second_opinion, audit_log,
        **verifier_options,
    )  # fmt: skip


class VerifierReward:
    """The reward function `as_reward_function` returns: a callable object rather than a closure, so that it pickles.

    It pickles as what it was built from (the verifier's name and options, `reference_column`, `max_failed_batches`,
    `start_workers`), never as live worker pools, threads or locks: unpickled in another process, it builds the same
    verifier there, whose workers start in that process (in the background as it is unpickled with `start_workers`,
    else on first use). Whatever process holds it, its verifier is closed when that
    process exits (an `atexit` hook that holds it weakly), so no worker outlives the process that started it.
    The count of failed batches starts again from zero in each process.

    Calls may come from many threads at once (each call verifies its own batch; the failure count is shared).
    """

    def __init__(
        self,
        name: str,
        reference_column: str = "answer",
        max_failed_batches: int = 3,
        start_workers: bool = True,
        audit_canaries: int = 0,
        second_opinion: bool = False,
        audit_log: str | None = None,
        **verifier_options: Any,
    ):
        if not isinstance(reference_column, str) or not reference_column:
            raise ValueError(f"reference_column must be a non-empty column name, got {reference_column!r}.")
        if isinstance(max_failed_batches, bool) or not isinstance(max_failed_batches, int) or max_failed_batches < 1:
            raise ValueError(
                f"max_failed_batches={max_failed_batches!r} must be an integer >= 1: the number of batches in a row in "
                "which the verifier may fail on every item before the reward function raises."
            )
        if not isinstance(start_workers, bool):
            raise ValueError(
                f"start_workers={start_workers!r} must be True (start the verifier's workers in the background now) or "
                "False (on the first batch)."
            )
        self.name, self.reference_column = name, reference_column
        self.max_failed_batches, self.start_workers = max_failed_batches, start_workers
        self.verifier_options = dict(verifier_options)
        # TRL names a callable object by its `__name__` (trl.trainer.utils.get_callable_name).
        self.__name__ = self.__qualname__ = f"{name}_reward"
        self.verifier = get_verifier(name, **verifier_options)
        self._watch = FailureWatch(name, max_failed_batches)
        self.audit_canaries, self.second_opinion, self.audit_log = audit_canaries, second_opinion, audit_log
        audit = VerifierAudit(name, self.verifier, audit_canaries, second_opinion, audit_log)
        self._audit = audit if audit_canaries or second_opinion else None
        atexit.register(_close_if_alive, weakref.ref(self.verifier))
        if start_workers:
            _start_in_background(name, self.verifier)

    def __getstate__(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "reference_column": self.reference_column,
            "max_failed_batches": self.max_failed_batches,
            "start_workers": self.start_workers,
            "audit_canaries": self.audit_canaries,
            "second_opinion": self.second_opinion,
            "audit_log": self.audit_log,
            "verifier_options": self.verifier_options,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(
            state["name"],
            state["reference_column"],
            state["max_failed_batches"],
            state["start_workers"],
            state.get("audit_canaries", 0),
            state.get("second_opinion", False),
            state.get("audit_log"),
            **state["verifier_options"],
        )

    def __repr__(self) -> str:
        options = "".join(f", {key}={value!r}" for key, value in self.verifier_options.items())
        return (
            f"{type(self).__name__}({self.name!r}, reference_column={self.reference_column!r}, "
            f"max_failed_batches={self.max_failed_batches}, start_workers={self.start_workers}, "
            f"audit_canaries={self.audit_canaries}, second_opinion={self.second_opinion}, "
            f"audit_log={self.audit_log!r}{options})"
        )

    def __call__(self, prompts: Sequence[Any] | None = None, completions: Sequence[Any] = (), **columns: Any):
        # collect(submit(...)) without the thread: a serial call verifies on the caller's thread.
        return self.collect(self._prepare(prompts, completions, **columns), **columns)

    async def acall(self, prompts: Sequence[Any] | None = None, completions: Sequence[Any] = (), **columns: Any):
        """`reward(...)` for asyncio code: verifies on a thread, so the event loop keeps running meanwhile.

        TRL's loops (AsyncGRPOTrainer's rollout process, GRPOTrainer) call the reward function itself, on a thread
        of theirs (`asyncio.to_thread`), which is the same; this is for loops of one's own."""
        return await asyncio.to_thread(self, prompts, completions, **columns)

    def submit(self, prompts: Sequence[Any] | None = None, completions: Sequence[Any] = (), **columns: Any):
        """Start verifying the batch on a thread of its own and return at once; `collect` gives the rewards."""
        pending = self._prepare(prompts, completions, **columns)
        pending.start()
        return pending

    def collect(self, pending: PendingReward, **call: Any) -> list[float | None]:
        """The rewards of a submitted batch, logged through the call's `log_metric` / `log_extra`.

        `call` is what the trainer passes to the reward function; when its completions or references are not those
        submitted, the submitted work is dropped and the call's batch is verified now, so the rewards are always
        those of the call.
        """
        name = self.name
        log_metric = call.pop("log_metric", None)
        log_extra = call.pop("log_extra", None)
        if "completions" in call and not pending.made_from(call["completions"], call.get(self.reference_column)):
            pending.cancel()
            pending = self._prepare(**call)
        results, asked = pending.wait()
        log_first_of_each_kind(name, results, pending.references)
        warn_internal_errors(name, results)
        warn_check_errors(name, results, pending.references)
        if log_metric is not None:
            for metric, value in {**_reason_shares(results), **pending.metrics}.items():
                log_metric(f"{name}/{metric}", value)
        if log_extra is not None:
            log_extra(f"{name}_extracted", [r.extracted if r.extracted is not None else "" for r in results])
            log_extra(f"{name}_reason", [r.reason for r in results])
        self._watch.record(asked)
        return [r.score for r in results]

    def _prepare(self, prompts: Sequence[Any] | None = None, completions: Sequence[Any] = (), **columns: Any):
        """The batch's completions and references, checked, as a `PendingReward` that has not started."""
        reference_column = self.reference_column
        if reference_column not in columns:
            ignored = ("trainer_state", "completion_ids", "environments", "log_metric", "log_extra")
            available = sorted(k for k in columns if k not in ignored)
            raise KeyError(
                f"reward function {self.__name__!r} needs the dataset column {reference_column!r} "
                f"(reference_column); the batch has columns {available}."
            )
        completions, references = list(completions), list(columns[reference_column])
        if len(completions) != len(references):
            raise ValueError(
                f"reward function {self.__name__!r} got {len(completions)} completions and {len(references)} "
                f"values in column {reference_column!r}; pass one reference per completion."
            )
        return PendingReward(self.verifier, completions, references, self._audit)


def _close_if_alive(verifier_ref: weakref.ref) -> None:
    """At exit: stop the worker processes of a reward function's verifier, if it is still alive."""
    verifier = verifier_ref()
    if verifier is not None:
        try:
            verifier.close()
        except Exception:  # the process is ending: a failure to close must not hide its exit status
            logger.debug("closing verifier %r at exit failed", getattr(verifier, "name", "?"), exc_info=True)


def _start_in_background(name: str, verifier: Any) -> None:
    """`verifier.start(wait=False)`; a failure to start is logged, not raised: the first batch tries again and reports
    what fails as the verifier's own failure."""
    try:
        verifier.start(wait=False)
    except Exception as exc:  # e.g. no process could be spawned: the batches will say so, item by item
        logger.warning(
            "verifier %r: could not start its workers in the background: %s: %s", name, type(exc).__name__, exc
        )


class PendingReward:
    """A batch handed to a verifier reward function's `submit`: its verification runs on a thread of its own from
    `start()` (or on the thread that waits, if never started) and `wait()` returns its results.

    `cancel()` waits for a started verification to end (a batch inside the verifier cannot be interrupted), so no
    thread outlives the code that dropped the batch.
    """

    def __init__(
        self, verifier: Any, completions: list[Any], references: list[Any], audit: VerifierAudit | None = None
    ):
        self.completions, self.references = completions, references
        self._verifier, self._audit = verifier, audit
        self._thread: threading.Thread | None = None
        self._outcome: tuple[list[VerificationResult], list[VerificationResult]] | None = None
        self.metrics: dict[str, float] = {}  # this batch's verification metrics (see `batch_metrics`), once done
        self._error: BaseException | None = None

    def start(self) -> None:
        if self._thread is None and self._outcome is None:
            self._thread = threading.Thread(target=self._run, name="verifier-reward", daemon=True)
            self._thread.start()

    def wait(self) -> tuple[list[VerificationResult], list[VerificationResult]]:
        """Every item's result, and the results of the items the verifier was asked about (see `_score`)."""
        if self._thread is None:
            if self._outcome is None:
                self._run()
        else:
            self._thread.join()
        if self._error is not None:
            raise self._error
        return self._outcome  # type: ignore[return-value]

    def cancel(self) -> None:
        if self._thread is not None:
            self._thread.join()

    def made_from(self, completions: Any, references: Any) -> bool:
        """Whether a call's completions and references are those this batch verifies."""
        try:
            return _same_items(self.completions, completions) and _same_items(self.references, references)
        except Exception:  # items whose == is not a bool (arrays): verify the call's batch instead
            return False

    def _run(self) -> None:
        try:
            self._outcome = _score(self._verifier, self.completions, self.references, self.metrics)
        except BaseException as exc:  # _score does not raise; anything else reaches the collecting thread
            self._error = exc
            return
        if self._audit is not None:
            try:
                self.metrics.update(self._audit.run(_texts(self.completions), self.references, self._outcome[0]))
            except Exception:  # the audit is a measurement: its failure is reported, and the rewards stand
                logger.error("verifier audit failed on a batch; its canary metrics are missing", exc_info=True)


def _texts(completions: list[Any]) -> list[str | None]:
    """Each completion's text as the verifier reads it; None for one that is not text or a conversation."""
    texts = []
    for completion in completions:
        try:
            texts.append(completion_text(completion))
        except TypeError:
            texts.append(None)
    return texts


def _same_items(kept: list[Any], given: Any) -> bool:
    if given is None:
        return False
    given = list(given)
    return len(kept) == len(given) and all(a is b or bool(a == b) for a, b in zip(kept, given))


def _score(
    verifier: Any, completions: list[Any], references: list[Any], metrics: dict[str, float] | None = None
) -> tuple[list[VerificationResult], list[VerificationResult]]:
    """Verify a batch without raising; returns every item's result and the results of the items the verifier saw,
    and puts the batch's verification metrics (`batch_metrics`) in `metrics`.

    A missing reference gives None and a completion that is not text or a conversation scores 0, without asking the
    verifier; a verify_batch that raises or breaks the contract gives `internal_error` for every item it was asked.
    """
    results: list[VerificationResult | None] = [None] * len(completions)
    asked: list[tuple[int, str]] = []
    for i, (completion, reference) in enumerate(zip(completions, references)):
        if is_missing(reference):
            results[i] = VerificationResult(None, "unusable_reference: missing")
            continue
        try:
            asked.append((i, completion_text(completion)))
        except TypeError as exc:
            results[i] = VerificationResult(0.0, f"bad_completion: {exc}")
    scored: list[Any] = []
    if asked:
        try:
            scored = _verify_measured(
                verifier, [text for _, text in asked], [references[i] for i, _ in asked], metrics
            )
            if not isinstance(scored, Sequence) or len(scored) != len(asked):
                raise TypeError(
                    f"verify_batch returned {type(scored).__name__} {scored!r:.{QUOTED_CHARS}}, not {len(asked)} results"
                )
        except Exception as exc:  # a verifier never raises into the trainer
            scored = [internal_error(exc)] * len(asked)
    for (i, _), result in zip(asked, scored):
        results[i] = _checked(result)
    return results, [results[i] for i, _ in asked]  # type: ignore[return-value]


def _verify_measured(
    verifier: Any, completions: list[str], references: list[Any], metrics: dict[str, float] | None
) -> Sequence[Any]:
    """`verify_batch_with_stats` where the verifier has it (math, code), else `verify_batch`; timed either way."""
    with_stats = getattr(verifier, "verify_batch_with_stats", None)
    start = time.perf_counter()
    if callable(with_stats):
        scored, stats = with_stats(completions, references)
    else:
        scored, stats = verifier.verify_batch(completions, references), None
    if metrics is not None:
        metrics.update(batch_metrics(time.perf_counter() - start, stats))
    return scored


def _checked(result: Any) -> VerificationResult:
    """The result as the contract says: a VerificationResult, score None or finite, None on an internal error."""
    if not isinstance(result, VerificationResult):
        return internal_error(
            f"verify_batch returned {type(result).__name__} {result!r:.{QUOTED_CHARS}}, not a VerificationResult"
        )
    if not isinstance(result.reason, str) or not result.reason:
        result = dataclasses.replace(result, reason=f"unlabelled: {result.reason!r:.{QUOTED_CHARS}}")
    if result.is_internal_error:
        return result if result.score is None else dataclasses.replace(result, score=None)
    if result.score is not None and not (isinstance(result.score, numbers.Real) and math.isfinite(result.score)):
        return internal_error(
            f"score {result.score!r:.{QUOTED_CHARS}} is not a finite number (reason {result.reason!r:.{QUOTED_CHARS}})"
        )
    return result if result.score is None else dataclasses.replace(result, score=float(result.score))
