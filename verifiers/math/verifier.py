"""The `math` verifier: is the final answer of a completion equal to the reference?

Pipeline: `extract` (find the answer) -> `normalize` (canonical LaTeX) -> fast in-process decisions
(identical strings, two plain numbers, two words, choice letters) -> `compare` (sympy) in a `DeadlinePool`
worker, killed when it passes `timeout_s`. Only the last stage touches sympy, and it never runs in the caller's process.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import traceback
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..core.contract import VerificationResult, Verifier, bad_completion, comparison_error, is_missing
from ..core.deadline_pool import DeadlinePool, TaskOutcome
from ..core.registry import register_verifier
from .extract import extract_answer, extract_reference, reference_letter
from .normalize import Normalized, as_word, normalize_answer, plain_number
from .numbers import Tolerance, plain_numbers_equal

logger = logging.getLogger("trl_grpo_ext.verifiers.math")

PERCENT_MODES = ("either", "strip", "fraction")
CHOICE_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
VERDICT_CACHE_SIZE = 20_000
# Two-letter English words an answer may be: never a product of two variables (`no` is not `on`).
TWO_LETTER_WORDS = frozenset("no on or of is it if in an as at to up us we so do go be by he me my".split())


@dataclass
class _Pending:
    """An item the fast path could not decide: (prediction, reference) pairs for a worker."""

    index: int
    pairs: tuple[tuple[tuple[str, str], ...], ...]  # per candidate answer, its (prediction, reference) pairs
    extracted: str
    details: dict[str, Any]


def _degree_pairs(pred: Normalized, ref: Normalized) -> list[tuple[str, str]]:
    """An angle in degrees against one in radians written with pi: `30^\\circ` is `\\frac{\\pi}{6}`."""
    if pred.degrees and not ref.degrees and "\\pi" in ref.text:
        return [(f"\\frac{{\\pi}}{{180}} \\cdot ({pred.text})", ref.text)]
    if ref.degrees and not pred.degrees and "\\pi" in pred.text:
        return [(pred.text, f"\\frac{{\\pi}}{{180}} \\cdot ({ref.text})")]
    return []


def _check_positive(name: str, value: Any, allow_zero: bool = False) -> None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and (value >= 0 if allow_zero else value > 0)
    if not ok:
        raise ValueError(
            f"math verifier option {name}={value!r} must be a {'non-negative' if allow_zero else 'positive'} number."
        )


def compare_task(groups: list[list[tuple[str, str]]], rel_tol: float, abs_tol: float) -> tuple[bool | None, str]:
    """Worker-side entry point (every group of pairs must be equal; one group per candidate answer); imports sympy
    there only, so the trainer's process never loads it."""
    from .compare import compare_all_task

    return compare_all_task(groups, rel_tol, abs_tol)


def warm_up() -> None:
    from .warmup import warm_up as warm

    warm()


@register_verifier("math")
class MathVerifier(Verifier):
    """Final-answer equality for math (boxed/anchored extraction, LaTeX normalisation, sympy under a hard deadline).

    Numbers are compared exactly, decimals at the precision they are written to (see `numbers`). Options:
    rel_tol / abs_tol (default 0: none; an extra tolerance for numbers, equal when
    |a - b| <= max(rel_tol * max(|a|, |b|), abs_tol)); timeout_s (hard deadline per item); percent ("either": `10\\%`
    may be read as 10 or 0.1, "strip": as 10, "fraction": as 0.1); strip_units; n_workers (default: the usable CPU
    cores, divided among the training processes of the machine); memory_limit_mb (per worker).
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
    ):
        _check_positive("rel_tol", rel_tol, allow_zero=True)
        _check_positive("abs_tol", abs_tol, allow_zero=True)
        _check_positive("timeout_s", timeout_s)
        if percent not in PERCENT_MODES:
            raise ValueError(f"math verifier option percent={percent!r} is not valid; choose one of {PERCENT_MODES}.")
        if n_workers is not None and (not isinstance(n_workers, int) or n_workers < 1):
            raise ValueError(f"math verifier option n_workers={n_workers!r} must be a positive integer or None.")
        self.rel_tol, self.abs_tol, self.timeout_s = float(rel_tol), float(abs_tol), float(timeout_s)
        self.percent, self.strip_units = percent, strip_units
        self.n_workers, self.memory_limit_mb = n_workers, memory_limit_mb
        self._pool: DeadlinePool | None = None
        self._verdicts: OrderedDict[tuple, TaskOutcome] = OrderedDict()
        self._verdicts_lock = threading.Lock()
        self._pool_lock = threading.Lock()

    # -- public API ---------------------------------------------------------------------------------------------
    def verify(self, completion: str, reference: Any) -> VerificationResult:
        return self.verify_batch([completion], [reference])[0]

    def verify_batch(self, completions: Sequence[str], references: Sequence[Any]) -> list[VerificationResult]:
        """Score every completion against its reference; undecided items run in parallel, each under `timeout_s`."""
        if len(completions) != len(references):
            raise ValueError(
                f"verify_batch got {len(completions)} completions and {len(references)} references; "
                "pass one reference per completion."
            )
        results: list[VerificationResult | None] = [None] * len(completions)
        pending: list[_Pending] = []
        for i, (completion, reference) in enumerate(zip(completions, references)):
            try:
                decided = self._prepare(i, completion, reference)
            except Exception as exc:  # a bug that this answer triggers: 0, counted and logged apart (_result_from)
                logger.debug("math verifier failed on item %d", i, exc_info=True)
                trace = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
                decided = comparison_error(type(exc).__name__, f"{type(exc).__name__}: {exc}", traceback=trace)
            if isinstance(decided, _Pending):
                pending.append(decided)
            else:
                results[i] = decided
        if pending:
            for item, result in zip(pending, self._run_in_workers(pending)):
                results[item.index] = result
        return results  # type: ignore[return-value]

    async def averify_batch(self, completions: Sequence[str], references: Sequence[Any]) -> list[VerificationResult]:
        """`verify_batch` for asyncio code: the event loop keeps running while workers compute."""
        return await asyncio.to_thread(self.verify_batch, completions, references)

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

    # -- stages -------------------------------------------------------------------------------------------------
    def _prepare(self, index: int, completion: Any, reference: Any) -> VerificationResult | _Pending:
        """Extraction and normalisation, then the in-process fast path; what is left becomes a `_Pending`."""
        if is_missing(reference):
            return VerificationResult(None, "unusable_reference: missing")
        if not isinstance(completion, str):
            return bad_completion(completion)
        ref_extraction = extract_reference(str(reference))
        if ref_extraction.answer is None:
            return VerificationResult(None, f"unusable_reference: {ref_extraction.how}")
        letter = reference_letter(ref_extraction.answer)
        letters = CHOICE_LETTERS[: max(5, CHOICE_LETTERS.index(letter) + 1)] if letter else None
        extraction = extract_answer(completion, letters)
        details = {"how": extraction.how, "reference": ref_extraction.answer}
        if extraction.answer is None and (letter is not None or not extraction.candidates):
            return VerificationResult(0.0, extraction.how, None, details)
        if letter is not None:
            correct = extraction.answer == letter
            return VerificationResult(
                float(correct), "letter" if correct else "wrong_letter", extraction.answer, details
            )
        ref_norm = normalize_answer(ref_extraction.answer, self.strip_units, reference=True)
        if ref_norm.invalid or not ref_norm.text:
            return VerificationResult(
                None, f"unusable_reference: {ref_norm.invalid or 'empty'}", extraction.answer, details
            )
        candidates = extraction.candidates or (extraction.answer,)
        shown = extraction.answer or " | ".join(candidates)
        groups = []
        for candidate in candidates:  # one answer, or every box of a hedge: each must be the reference
            judged = self._judge(candidate, ref_norm, details)
            if isinstance(judged, str):
                return VerificationResult(0.0, judged if len(candidates) == 1 else "hedge", shown, details)
            if judged is not True:
                groups.append(judged)
        if not groups:
            return VerificationResult(1.0, "correct", shown, details)
        return _Pending(index, tuple(groups), shown, details)

    def _judge(self, answer: str, ref_norm: Normalized, details: dict) -> bool | str | tuple:
        """One candidate answer against the normalised reference, in-process: True (equal), a reason (different),
        or the (prediction, reference) pairs a worker must decide."""
        pred_norm = normalize_answer(answer, self.strip_units)
        if pred_norm.invalid or not pred_norm.text:
            return pred_norm.invalid or "no_answer"
        details.setdefault("normalized", (pred_norm.text, ref_norm.text))
        if pred_norm.unit and ref_norm.unit and pred_norm.unit != ref_norm.unit:
            return "different_unit"
        undecided = []
        for pred, ref in self._percent_pairs(pred_norm, ref_norm) + _degree_pairs(pred_norm, ref_norm):
            verdict = self._fast_compare(pred, ref, pred_norm.text_answer or ref_norm.text_answer)
            if verdict is True:
                return True
            if verdict is None:
                undecided.append((pred, ref))
        return tuple(undecided) if undecided else "wrong"

    def _percent_pairs(self, pred: Normalized, ref: Normalized) -> list[tuple[str, str]]:
        def hundredth(text: str) -> str:
            value = plain_number(text)
            return f"{value / 100}" if value is not None else f"\\frac{{{text}}}{{100}}"

        if self.percent == "strip" or pred.percent == ref.percent:
            return [(pred.text, ref.text)]
        if self.percent == "fraction":
            return [
                (hundredth(pred.text) if pred.percent else pred.text, hundredth(ref.text) if ref.percent else ref.text)
            ]
        scaled = (hundredth(pred.text), ref.text) if pred.percent else (pred.text, hundredth(ref.text))
        return [(pred.text, ref.text), scaled]

    def _fast_compare(self, pred: str, ref: str, text: bool = False) -> bool | None:
        """True/False when decidable in microseconds without sympy; None when a worker must decide. `text`: one side
        was written as text (`\\text{no}`), so its letters are a word, not a product of variables."""
        if pred.replace(" ", "") == ref.replace(" ", ""):
            return True
        a, b = plain_number(pred), plain_number(ref)
        if a is not None and b is not None:
            return plain_numbers_equal(a, b, pred, ref, Tolerance(self.rel_tol, self.abs_tol))
        word_a, word_b = as_word(pred), as_word(ref)
        if word_a is not None and word_b is not None:
            if len(word_a) == 1 or len(word_b) == 1:  # single letters: E (a choice) is not e (Euler's number)
                return word_a == word_b
            text = text or bool({word_a.lower(), word_b.lower()} & TWO_LETTER_WORDS)
            if word_a != word_b and sorted(word_a) == sorted(word_b) and len(word_a) <= 2 and not text:
                return None  # `ab` and `ba`, written in math, are products of variables: sympy decides
            return word_a.lower() == word_b.lower()  # words (3+ letters, or written as text) are compared as text
        if (word_a is not None) != (word_b is not None) and (a is not None or b is not None):
            return None if "e" in (word_a, word_b) else False  # a word against a number; Euler's e: sympy decides
        return None

    def _run_in_workers(self, pending: list[_Pending]) -> list[VerificationResult]:
        """Send each distinct undecided pair list to the workers once (a GRPO group often repeats an answer);
        verdicts are remembered across batches, timeouts and errors are not."""
        with self._verdicts_lock:
            known = {p.pairs: self._verdicts.get(p.pairs) for p in pending}
        unique = [key for key, outcome in known.items() if outcome is None]
        outcomes = dict(zip(unique, self._compare_in_workers([[list(g) for g in groups] for groups in unique])))
        results = []
        for item in pending:
            key = item.pairs
            outcome = known[key] or outcomes[key]
            if outcome.status == "ok":
                self._remember(key, outcome)
            results.append(self._result_from(item, outcome))
        return results

    def _remember(self, key: tuple, outcome: TaskOutcome) -> None:
        with self._verdicts_lock:
            self._verdicts[key] = outcome
            self._verdicts.move_to_end(key)
            while len(self._verdicts) > VERDICT_CACHE_SIZE:
                self._verdicts.popitem(last=False)

    def _compare_in_workers(self, pair_lists: list[list[list[tuple[str, str]]]]) -> list[TaskOutcome]:
        if not pair_lists:
            return []
        try:
            pool = self._ensure_pool()
            items = [(pairs, self.rel_tol, self.abs_tol) for pairs in pair_lists]
            return pool.map(compare_task, items, timeout_s=self.timeout_s)
        except (RuntimeError, OSError) as exc:  # no worker could start, or the pool broke: not the answers' fault
            logger.error("math verifier workers failed: %s: %s; scoring None", type(exc).__name__, exc)
            error = f"the worker pool failed: {type(exc).__name__}: {exc}"
            return [TaskOutcome("unavailable", error=error)] * len(pair_lists)

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
          the reward adapter counts and logs with the answer and the reference.
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
