"""Adapter from any registered verifier to a TRL reward function.

TRL's GRPOTrainer calls `reward(prompts=..., completions=..., completion_ids=..., **columns)` where `columns` holds the
dataset columns, `trainer_state`, and two loggers: `log_metric(name, value)` (a scalar averaged per logging step) and
`log_extra(column, values)` (a column of the completions table). This module stays free of torch and trl imports.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from .base import VerificationResult, get_verifier

logger = logging.getLogger("trl_grpo_ext.verifiers.reward")

# Reasons counted as shares in `log_metric`, by the prefix of VerificationResult.reason.
TRACKED_REASONS = {"timeout": "timeout", "unparseable": "unparseable", "no_answer": "no_answer", "error": "error"}


def completion_text(completion: Any) -> str:
    """Plain text of a completion: a string as is; a conversation (list of messages): the last assistant content."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, dict):
        completion = [completion]
    if isinstance(completion, Sequence):
        messages = [m for m in completion if isinstance(m, dict)]
        assistant = [m for m in messages if m.get("role", "assistant") == "assistant"]
        chosen = (assistant or messages)[-1:] if messages else []
        if chosen:
            return _content_text(chosen[0].get("content", ""))
    raise TypeError(f"a completion must be a string or a list of message dicts, got {type(completion).__name__}")


def _content_text(content: Any) -> str:
    """Message content may be a string or a list of typed parts ({"type": "text", "text": ...})."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return "" if content is None else str(content)


def _reason_shares(results: list[VerificationResult]) -> dict[str, float]:
    counts = Counter()
    for result in results:
        for prefix, metric in TRACKED_REASONS.items():
            if result.reason.startswith(prefix):
                counts[metric] += 1
    n = max(len(results), 1)
    shares = {f"{metric}_rate": counts[metric] / n for metric in TRACKED_REASONS.values()}
    shares["unusable_reference_rate"] = sum(r.score is None for r in results) / n
    scored = [r.score for r in results if r.score is not None]
    shares["mean_score"] = sum(scored) / len(scored) if scored else 0.0
    return shares


def as_reward_function(
    name: str, reference_column: str = "answer", **verifier_options: Any
) -> Callable[..., list[float | None]]:
    """A TRL reward function `(prompts, completions, **columns) -> list[float | None]` backed by verifier `name`.

    The function is named `<name>_reward` (TRL names its metrics `rewards/<function name>/...`). It reads the
    reference of each completion from the dataset column `reference_column`, logs `<name>/timeout_rate`,
    `<name>/unparseable_rate`, `<name>/no_answer_rate`, ... through `log_metric`, and the columns
    `<name>_extracted` and `<name>_reason` through `log_extra`, when the trainer passes those loggers.
    The verifier is built here (an unknown name or a bad option fails now, not mid-training) and kept as
    `reward.verifier`; its worker processes start on first use (or at `reward.verifier.start(wait=False)`, in the
    background), and `reward.verifier.close()` stops them.
    """
    if not isinstance(reference_column, str) or not reference_column:
        raise ValueError(f"reference_column must be a non-empty column name, got {reference_column!r}.")
    verifier = get_verifier(name, **verifier_options)

    def reward(prompts: Sequence[Any] | None = None, completions: Sequence[Any] = (), **columns: Any):
        log_metric = columns.pop("log_metric", None)
        log_extra = columns.pop("log_extra", None)
        if reference_column not in columns:
            available = sorted(k for k in columns if k not in ("trainer_state", "completion_ids", "environments"))
            raise KeyError(
                f"reward function {reward.__name__!r} needs the dataset column {reference_column!r} "
                f"(reference_column); the batch has columns {available}."
            )
        references = list(columns[reference_column])
        results = _score(verifier, list(completions), references)
        if log_metric is not None:
            for metric, value in _reason_shares(results).items():
                log_metric(f"{name}/{metric}", value)
        if log_extra is not None:
            log_extra(f"{name}_extracted", [r.extracted if r.extracted is not None else "" for r in results])
            log_extra(f"{name}_reason", [r.reason for r in results])
        return [r.score for r in results]

    reward.__name__ = reward.__qualname__ = f"{name}_reward"
    reward.verifier = verifier  # type: ignore[attr-defined]
    return reward


def _score(verifier: Any, completions: list[Any], references: list[Any]) -> list[VerificationResult]:
    """Verify a batch; malformed completions score 0 and a failing verifier scores 0, neither raises."""
    texts: list[str | None] = []
    for completion in completions:
        try:
            texts.append(completion_text(completion))
        except TypeError as exc:
            logger.warning("%s; scoring 0", exc)
            texts.append(None)
    valid = [i for i, t in enumerate(texts) if t is not None]
    results = [VerificationResult(0.0, "bad_completion: not text or messages")] * len(completions)
    try:
        scored = verifier.verify_batch([texts[i] for i in valid], [references[i] for i in valid])
    except Exception as exc:
        logger.warning("verifier %r failed on a batch: %s: %s; scoring 0", verifier.name, type(exc).__name__, exc)
        scored = [VerificationResult(0.0, f"error: {type(exc).__name__}: {exc}")] * len(valid)
    for i, result in zip(valid, scored):
        results[i] = result
    return results
