"""The `math` verifier: is the final answer of a completion equal to the reference?

Pipeline: `extract` (find the answer) -> `normalize` (canonical LaTeX) -> fast in-process decisions
(identical strings, two plain numbers, two words, choice letters) -> `compare` (sympy) in a `DeadlinePool`
worker, killed when it passes `timeout_s`. Only the last stage touches sympy, and it never runs in the caller's process.
"""

from __future__ import annotations

import asyncio
import logging
import random
import threading
import time
import traceback
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from ..core.cache import DEFAULT_CACHE_MB, BatchStats, VerdictCache, check_cache_mb, verdict_namespace
from ..core.contract import (
    VerificationResult,
    Verifier,
    bad_completion,
    comparison_error,
    internal_error,
    is_missing,
)
from ..core.deadline_pool import DeadlinePool, TaskOutcome
from ..core.registry import register_verifier
from .batch import BatchMemo
from .canaries import canaries
from .closed_form import operation_left
from .extract import extract_answer
from .fast import degree_pairs, fast_compare, percent_pairs, shape_verdict
from .normalize import Normalized
from .numbers import Tolerance
from .remembered import ResultMemory
from .worker import compare_task, math_verify_task, warm_up

logger = logging.getLogger("trl_grpo_ext.verifiers.math")

PERCENT_MODES = ("either", "strip", "fraction")
# Bump when a rule that can change a verdict changes: cached verdicts of other versions are then never read.
RULES_VERSION = "math-2026.12-4"
# Reason (after `internal_error: `) of an exception that the reference's own answer meets as well: the verifier's.
REFERENCE_RAISES = "raises_on_the_reference"
# Libraries whose version can change a worker's verdict (part of the verdict cache's namespace).
SYMPY_LIBRARIES = ("sympy", "latex2sympy2_extended", "mpmath")


@dataclass
class _Pending:
    """An item the fast path could not decide: (prediction, reference) pairs for a worker."""

    index: int
    pairs: tuple[tuple[tuple[str, str], ...], ...]  # per candidate answer, its (prediction, reference) pairs
    extracted: str
    details: dict[str, Any]
    question: Any = None  # what the item asked (`BatchMemo.seen`), remembered with its result


def _check_positive(name: str, value: Any, allow_zero: bool = False) -> None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and (value >= 0 if allow_zero else value > 0)
    if not ok:
        raise ValueError(
            f"math verifier option {name}={value!r} must be a {'non-negative' if allow_zero else 'positive'} number."
        )


def _reference_of(item: tuple) -> str:
    """A worker question's key for `DeadlinePool.map`'s affinity: the reference of its first pair. A worker keeps the
    references it parsed (`parse_leaf`), so a GRPO group's questions, which share their reference, cost one parse of it
    when they go to one worker (synthetic epoch 1: references parsed by both workers about 160 -> 15 of 274, the
    workers' CPU time about 5 % less; docs/benchmarks.md)."""
    groups = item[0]
    return groups[0][0][1]


def _raised(outcome: TaskOutcome) -> bool:
    """The comparison raised (MemoryError aside: an input too large for the memory limit is the input's)."""
    return outcome.status == "error" and outcome.error_type != "MemoryError"


def _text_key(completion: Any, reference: Any) -> tuple | None:
    """What makes two items of a batch the same item: the completion's text and the reference, when both are text
    (a GRPO group repeats whole completions often; anything else is verified item by item)."""
    if isinstance(completion, str) and isinstance(reference, str):
        return completion, reference
    return None


@register_verifier("math")
class MathVerifier(Verifier):
    """Final-answer equality for math (boxed/anchored extraction, LaTeX normalisation, sympy under a hard deadline).

    Numbers are compared exactly, decimals at the precision they are written to (see `numbers`). Options:
    rel_tol / abs_tol (default 0: none; an extra tolerance for numbers, equal when
    |a - b| <= max(rel_tol * max(|a|, |b|), abs_tol)); timeout_s (hard deadline per item); percent ("either": `10\\%`
    may be read as 10 or 0.1, "strip": as 10, "fraction": as 0.1); strip_units; n_workers (default: the usable CPU
    cores, divided among the training processes of the machine); memory_limit_mb (per worker); cache_mb (the verdict
    cache's bound in MiB, default 64; 0: off); closed_form (default True: an answer with an operation left to
    perform, `17 \\times 23` for 391 or `\\dbinom{16}{5}`, scores 0 with reason `not_simplified`; see `closed_form`).
    """

    def __init__(
        self,
        rel_tol: float = 0.0,
        abs_tol: float = 0.0,
        timeout_s: float = 5.0,
        percent: str = "either",
        strip_units: bool = True,
        n_workers: int | None = None,
        memory_limit_mb: int | None = 4096,
        cache_mb: float = DEFAULT_CACHE_MB,
        closed_form: bool = True,
    ):
        _check_positive("rel_tol", rel_tol, allow_zero=True)
        _check_positive("abs_tol", abs_tol, allow_zero=True)
        _check_positive("timeout_s", timeout_s)
        if percent not in PERCENT_MODES:
            raise ValueError(f"math verifier option percent={percent!r} is not valid; choose one of {PERCENT_MODES}.")
        if n_workers is not None and (not isinstance(n_workers, int) or n_workers < 1):
            raise ValueError(f"math verifier option n_workers={n_workers!r} must be a positive integer or None.")
        self.rel_tol, self.abs_tol, self.timeout_s = float(rel_tol), float(abs_tol), float(timeout_s)
        if not isinstance(closed_form, bool):
            raise ValueError(f"math verifier option closed_form={closed_form!r} must be True or False.")
        self.percent, self.strip_units, self.closed_form = percent, strip_units, closed_form
        self.n_workers, self.memory_limit_mb = n_workers, memory_limit_mb
        self.cache_mb = check_cache_mb("math", cache_mb)
        self._pool: DeadlinePool | None = None
        self._pool_lock = threading.Lock()
        # Worker verdicts across batches, keyed on the normalised pairs. Only the options that reach the workers
        # (the tolerances; timeout_s does not change an "ok" verdict) and the library versions can change one; the
        # others (percent, strip_units) are already in the pairs.
        self._verdicts = VerdictCache(int(self.cache_mb * 2**20))
        self._namespace = verdict_namespace(
            "math", RULES_VERSION, {"rel_tol": self.rel_tol, "abs_tol": self.abs_tol}, SYMPY_LIBRARIES
        )
        # Whole results by the two texts, in the same cache: every option that changes a result is in its namespace.
        options = {
            "rel_tol": self.rel_tol,
            "abs_tol": self.abs_tol,
            "percent": percent,
            "strip_units": strip_units,
            "closed_form": closed_form,
        }
        self._memory = ResultMemory(
            self._verdicts, verdict_namespace("math-results", RULES_VERSION, options, SYMPY_LIBRARIES)
        )

    # -- public API ---------------------------------------------------------------------------------------------
    def verify(self, completion: str, reference: Any) -> VerificationResult:
        return self.verify_batch([completion], [reference])[0]

    def verify_batch(self, completions: Sequence[str], references: Sequence[Any]) -> list[VerificationResult]:
        """Score every completion against its reference; undecided items run in parallel, each under `timeout_s`."""
        return self.verify_batch_with_stats(completions, references)[0]

    def verify_batch_with_stats(
        self, completions: Sequence[str], references: Sequence[Any]
    ) -> tuple[list[VerificationResult], BatchStats]:
        """`verify_batch`, and what this call did (`BatchStats`: duplicates, cache hits, each item's time).

        Each item's answer is extracted and normalised on its own; items whose normalised answers and reference are
        the same question are decided once, and a question a worker decided before comes from the verdict cache.
        """
        if len(completions) != len(references):
            raise ValueError(
                f"verify_batch got {len(completions)} completions and {len(references)} references; "
                "pass one reference per completion."
            )
        memo = BatchMemo()
        stats = BatchStats(items=len(completions), item_seconds=[0.0] * len(completions))
        results: list[VerificationResult | None] = [None] * len(completions)
        pending: list[_Pending] = []
        copies: list[tuple[int, int]] = []
        remembered_pairs: set[tuple] = set()  # worker questions of remembered results: they count as cache hits
        known: dict[tuple, TaskOutcome | None] = {}  # each distinct worker question: its outcome (None: asked now)
        asked: list[tuple] = []

        def questions() -> Iterator[list]:
            """Prepare every item, yielding each new question for the workers as soon as it is found: the workers
            start on it while the next items are extracted and normalised."""
            first_with_text: dict[tuple, int] = {}
            for i, (completion, reference) in enumerate(zip(completions, references)):
                start = time.perf_counter()
                text_key = _text_key(completion, reference)
                if text_key is not None and text_key in first_with_text:
                    # The same text against the same reference: extraction and judgement are functions of the two.
                    copies.append((i, first_with_text[text_key]))
                    memo.duplicates += 1
                    continue
                if text_key is not None:
                    first_with_text[text_key] = i
                remembered = self._memory.get(*text_key) if text_key is not None else None
                if remembered is not None:  # decided in an earlier batch
                    results[i] = remembered.result()
                    if remembered.question is not None:
                        memo.seen(remembered.question)
                    if remembered.pairs is not None:
                        remembered_pairs.add(remembered.pairs)
                elif self._prepare_item(i, completion, reference, memo, results, pending):
                    key = pending[-1].pairs
                    if key not in known:
                        known[key] = self._verdicts.get((self._namespace, key))
                        if known[key] is None:
                            asked.append(key)
                            stats.item_seconds[i] = time.perf_counter() - start
                            yield [list(group) for group in key]
                            continue
                stats.item_seconds[i] = time.perf_counter() - start

        for key, outcome in zip(asked, self._compare_in_workers(questions())):
            known[key] = outcome
        self._blame_raised_comparisons(known)
        for key in asked:
            outcome = known[key]
            # Only decisions: a timeout (CPU time varies a little with load, see core/cache.py), an error and a
            # failure of the machinery (crashed, stalled, unavailable) are asked again next time.
            if outcome.status == "ok":
                self._verdicts.put((self._namespace, key), TaskOutcome("ok", value=outcome.value))
        stats.duplicates = memo.duplicates
        if self._verdicts.max_bytes and (known or remembered_pairs):
            answered_whole = len(remembered_pairs.difference(known))
            stats.cache_lookups += len(known) + answered_whole
            stats.cache_hits += len(known) - len(asked) + answered_whole
        for item in pending:
            outcome = known[item.pairs]
            result = results[item.index] = self._result_from(item, outcome)
            stats.item_seconds[item.index] += outcome.elapsed_s
            text_key = _text_key(completions[item.index], references[item.index])
            if outcome.status == "ok" and text_key is not None:
                self._memory.put(*text_key, result, item.question, item.pairs)
        for copy, original in copies:
            kept = results[original]
            results[copy] = VerificationResult(kept.score, kept.reason, kept.extracted, dict(kept.details))
            stats.item_seconds[copy] = stats.item_seconds[original]
        return results, stats  # type: ignore[return-value]

    async def averify_batch(self, completions: Sequence[str], references: Sequence[Any]) -> list[VerificationResult]:
        """`verify_batch` for asyncio code: the event loop keeps running while workers compute."""
        return await asyncio.to_thread(self.verify_batch, completions, references)

    def canaries(self, reference: Any, rng: random.Random) -> tuple[list[str], list[str]]:
        """Wrong and right completions built from `reference`, for the live audit (`canaries.py`)."""
        return canaries(str(reference), rng)

    def second_opinion(self, completions: Sequence[str], references: Sequence[Any]) -> list[bool | None]:
        """math-verify's verdict on each pair, in this verifier's workers under its CPU deadline (the audit's second
        opinion); None where it failed or ran out of time. Needs the `math-verify` package."""
        pool = self._ensure_pool()
        items = [(str(c), str(r)) for c, r in zip(completions, references)]
        outcomes = pool.map(math_verify_task, items, timeout_s=self.timeout_s)
        return [outcome.value if outcome.status == "ok" else None for outcome in outcomes]

    def start(self, wait: bool = True) -> None:
        """Start the worker processes (each imports sympy and warms its parser, 2-5 s) now rather than on the first
        batch that needs them; `wait=False` returns at once and lets them start in the background."""
        pool = self._ensure_pool()
        if wait:
            pool.wait_until_ready()

    def close(self) -> None:
        with self._pool_lock:
            if self._pool is not None:
                self._pool.close()
                self._pool = None

    def clear_cache(self) -> None:
        """Forget every cached verdict (the workers keep their parse caches)."""
        self._verdicts.clear()

    # -- stages -------------------------------------------------------------------------------------------------
    def _prepare_item(
        self, i: int, completion: Any, reference: Any, memo: BatchMemo, results: list, pending: list[_Pending]
    ) -> bool:
        """`_prepare` one item into `results` (decided) or `pending` (for the workers: True); a decision on two texts
        is remembered across batches, an exception raised on this answer is not."""
        memo.last_question = None
        try:
            decided = self._prepare(i, completion, reference, memo)
        except Exception as exc:  # a bug: the answer's doing (0) unless the reference's own answer meets it too (None)
            logger.debug("math verifier failed on item %d", i, exc_info=True)
            trace = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
            if self._reference_raises(i, reference):
                results[i] = internal_error(f"{REFERENCE_RAISES}: {type(exc).__name__}: {exc}", traceback=trace)
            else:
                results[i] = comparison_error(type(exc).__name__, f"{type(exc).__name__}: {exc}", traceback=trace)
            return False
        if isinstance(decided, _Pending):
            decided.question = memo.last_question
            pending.append(decided)
            return True
        results[i] = decided
        if _text_key(completion, reference) is not None:
            self._memory.put(completion, reference, decided, memo.last_question, None)
        return False

    def _reference_raises(self, index: int, reference: Any) -> bool:
        """Whether the reference's own answer, given boxed as the completion, raises in `_prepare` too."""
        try:
            memo = BatchMemo()
            self._prepare(index, rf"\boxed{{{memo.reference(str(reference)).answer}}}", reference, memo)
        except Exception:
            return True
        return False

    def _prepare(self, index: int, completion: Any, reference: Any, memo: BatchMemo) -> VerificationResult | _Pending:
        """Extraction and normalisation, then the in-process fast path; what is left becomes a `_Pending`. The
        reference's reading, each normalised answer and each judgement are computed once per batch (`memo`)."""
        if is_missing(reference):
            return VerificationResult(None, "unusable_reference: missing")
        if not isinstance(completion, str):
            return bad_completion(completion)
        ref = memo.reference(str(reference))
        if ref.answer is None:
            memo.seen(("unusable", str(reference)))
            return VerificationResult(None, f"unusable_reference: {ref.how}")
        extraction = extract_answer(completion, ref.letters)
        details = {"how": extraction.how, "reference": ref.answer}
        if extraction.answer is None and (ref.letter is not None or not extraction.candidates):
            memo.seen(("no_answer", ref.answer, extraction.how))
            return VerificationResult(0.0, extraction.how, None, details)
        if ref.letter is not None:
            memo.seen(("letter", ref.answer, extraction.answer))
            correct = extraction.answer == ref.letter
            return VerificationResult(
                float(correct), "letter" if correct else "wrong_letter", extraction.answer, details
            )
        ref_norm = memo.normalized(ref.answer, self.strip_units, reference=True)
        if ref_norm.invalid or not ref_norm.text:
            memo.seen(("unusable", ref.answer))
            return VerificationResult(
                None, f"unusable_reference: {ref_norm.invalid or 'empty'}", extraction.answer, details
            )
        candidates = extraction.candidates or (extraction.answer,)
        shown = extraction.answer or " | ".join(candidates)
        pred_norms = tuple(memo.normalized(candidate, self.strip_units) for candidate in candidates)
        question = (pred_norms, ref_norm)
        memo.seen(question)
        verdict, normalized = memo.judgement(question, self._judge_candidates)
        if normalized is not None:
            details["normalized"] = normalized
        if isinstance(verdict, str):  # one answer, or every box of a hedge: each must be the reference
            reason = verdict if len(candidates) == 1 or verdict.startswith("not_simplified") else "hedge"
            return VerificationResult(0.0, reason, shown, details)
        if verdict is True:
            return VerificationResult(1.0, "correct", shown, details)
        return _Pending(index, verdict, shown, details)

    def _judge_candidates(self, question: tuple) -> tuple[bool | str | tuple, tuple[str, str] | None]:
        """Every candidate answer against the reference, in-process: True (all equal), the reason of the first that
        differs, or the (prediction, reference) pairs per candidate that a worker must decide; and the first valid
        candidate's normalised (prediction, reference) texts, shown in the result's details."""
        pred_norms, ref_norm = question
        normalized, groups = None, []
        for pred_norm in pred_norms:
            if pred_norm.invalid or not pred_norm.text:
                return pred_norm.invalid or "no_answer", normalized
        if self.closed_form:  # one candidate in closed form is enough: `\boxed{1000}` (or `10^3`)
            # An angle in degrees may be given in radians (`\\frac{\\pi}{6}` for `30^\\circ`), never as arithmetic.
            left = [
                operation_left(p.text, ref_norm.text, not ((p.degrees or ref_norm.degrees) and "\\pi" in p.text))
                for p in pred_norms
            ]
            if all(left):
                return f"not_simplified: {left[0]}", (pred_norms[0].text, ref_norm.text)
        for pred_norm in pred_norms:
            normalized = normalized or (pred_norm.text, ref_norm.text)
            judged = self._judge(pred_norm, ref_norm)
            if isinstance(judged, str):
                return judged, normalized
            if judged is not True:
                groups.append(judged)
        return (tuple(groups) if groups else True), normalized

    def _judge(self, pred_norm: Normalized, ref_norm: Normalized) -> bool | str | tuple:
        """One valid normalised answer against the normalised reference: True (equal), a reason (different), or the
        (prediction, reference) pairs a worker must decide."""
        if pred_norm.unit and ref_norm.unit and pred_norm.unit != ref_norm.unit:
            return "different_unit"
        undecided = []
        tolerance = Tolerance(self.rel_tol, self.abs_tol)
        for pred, ref in percent_pairs(pred_norm, ref_norm, self.percent) + degree_pairs(pred_norm, ref_norm):
            shaped = shape_verdict(pred, ref)  # a clock time or a ratio: never a quotient
            if isinstance(shaped, bool):
                if shaped:
                    return True
                continue
            if shaped is not None:
                pred, ref = shaped
            verdict = fast_compare(pred, ref, tolerance, pred_norm.text_answer or ref_norm.text_answer)
            if verdict is True:
                return True
            if verdict is None:
                undecided.append((pred, ref))
        return tuple(undecided) if undecided else "wrong"

    def _compare_in_workers(self, pair_lists: Iterable[list]) -> list[TaskOutcome]:
        """Each pair list's outcome, in order. `pair_lists` may be a generator (the batch's items being prepared): it
        is always consumed to its end, and the pool starts only if it yields something."""
        pair_lists = iter(pair_lists)
        first = next(pair_lists, None)
        if first is None:
            return []
        sent = [first]

        def items() -> Iterator[tuple]:
            yield first, self.rel_tol, self.abs_tol
            for pairs in pair_lists:
                sent.append(pairs)
                yield pairs, self.rel_tol, self.abs_tol

        try:
            pool = self._ensure_pool()
            return pool.map(compare_task, items(), timeout_s=self.timeout_s, affinity=_reference_of)
        except (RuntimeError, OSError) as exc:  # no worker could start, or the pool broke: not the answers' fault
            sent.extend(pair_lists)  # the items not prepared yet are prepared now
            logger.error("math verifier workers failed: %s: %s; scoring None", type(exc).__name__, exc)
            error = f"the worker pool failed: {type(exc).__name__}: {exc}"
            return [TaskOutcome("unavailable", error=error)] * len(sent)

    def _blame_raised_comparisons(self, known: dict[tuple, TaskOutcome | None]) -> None:
        """Each question whose comparison raised is asked again with its reference on both sides; where that raises
        too (or finds the reference unusable), the exception is not the answer's doing: its outcome becomes the
        verifier's failure (None), not a `comparison_error` (0) that every answer to this reference would get."""
        raised = [key for key, outcome in known.items() if outcome is not None and _raised(outcome)]
        if not raised:
            return
        itself = ([[(ref, ref) for _, ref in group] for group in key] for key in raised)
        for key, outcome in zip(raised, self._compare_in_workers(itself)):
            if _raised(outcome) or (outcome.status == "ok" and outcome.value[0] is None):
                known[key] = TaskOutcome(REFERENCE_RAISES, error=known[key].error)

    def _ensure_pool(self) -> DeadlinePool:
        with self._pool_lock:
            if self._pool is None:
                self._pool = DeadlinePool(self.n_workers, initializer=warm_up, memory_limit_mb=self.memory_limit_mb)
            return self._pool

    def _result_from(self, item: _Pending, outcome: TaskOutcome) -> VerificationResult:
        """A worker's outcome as a result. What a failure scores depends on whose failure it is:

        - "timeout" (the comparison used more than `timeout_s` of CPU time): 0.0, reason `timeout`. An answer too slow
          to check gets the penalty of a wrong one; otherwise a policy could learn to escape it with slow answers.
        - "error" from MemoryError (the comparison ran out of memory under `memory_limit_mb` on this input): 0.0,
          reason `too_large: ...`, like a timeout and like compare's TooLargeError.
        - any other "error": `compare_task` turns the answers that are not valid LaTeX and the oversized ones into
          verdicts with a reason, so an exception that escapes it (a RecursionError, a TypeError deep in sympy) is a
          bug, ours or a library's, that this answer triggers: 0.0, because None would let a policy escape the
          penalty by crashing the verifier, with reason `comparison_error: <type>` (the message in `details`), which
          the reward adapter counts and logs with the answer and the reference. Unless the reference's own answer
          raises as well (`_blame_raised_comparisons`): then no answer could be paid, and it is the verifier's
          failure, `internal_error: raises_on_the_reference: ...` (None).
        - "crashed" (the worker died twice), "stalled" (it hit the wall-clock backstop without using its CPU budget),
          "unavailable" (no worker could start) and any other status: None, reason `internal_error: ...`.
        None keeps the item out of its group's statistics instead of training on a false 0, and the reason says what
        broke.
        """
        if outcome.status == "timeout":
            logger.info("math verifier timed out after %.1f s of CPU time on %r", self.timeout_s, item.pairs[0][0])
            return VerificationResult(0.0, "timeout", item.extracted, item.details)
        if outcome.status == "error" and outcome.error_type == "MemoryError":
            return VerificationResult(0.0, f"too_large: {outcome.error}", item.extracted, item.details)
        if outcome.status == "error":
            logger.debug("math verifier: %s comparing %r", outcome.error, item.pairs[0])
            return comparison_error(outcome.error_type or "error", outcome.error, item.extracted, **item.details)
        if outcome.status != "ok":
            # Debug only: the reward adapter logs internal errors once per batch.
            logger.debug("math verifier failed (%s) on %r: %s", outcome.status, item.pairs[0][0], outcome.error)
            error = f"internal_error: {outcome.status}: {outcome.error}"
            return VerificationResult(None, error, item.extracted, item.details)
        equal, reason = outcome.value
        score = None if equal is None else float(equal)
        return VerificationResult(score, "correct" if equal else reason, item.extracted, item.details)
