"""The verifier contract and its registry.

A verifier scores one completion against one reference and never raises: bad input gives score 0 (or None when the
reference itself is unusable) with a reason. Verifiers know nothing of torch or TRL; `as_reward_function` adapts them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any

from trl_grpo_ext.registry import Registry, first_doc_line

logger = logging.getLogger("trl_grpo_ext.verifiers")

ENTRY_POINT_GROUP = "trl_grpo_ext.verifiers"


@dataclass(frozen=True)
class VerificationResult:
    """Outcome of one verification.

    score: reward in [0, 1], or None when the reference is unusable (TRL then treats the reward as missing).
    reason: a short machine-friendly tag ("correct", "wrong", "timeout", "no_answer", ...), optionally with detail.
    extracted: the answer the verifier took from the completion, when it found one.
    """

    score: float | None
    reason: str
    extracted: str | None = None
    details: dict[str, Any] = field(default_factory=dict)


class Verifier:
    """Base class. Subclasses implement `verify`; `verify_batch` may be overridden to run in parallel."""

    name: str = ""

    def verify(self, completion: str, reference: Any) -> VerificationResult:
        raise NotImplementedError

    def verify_batch(self, completions: Sequence[str], references: Sequence[Any]) -> list[VerificationResult]:
        if len(completions) != len(references):
            raise ValueError(
                f"verify_batch got {len(completions)} completions and {len(references)} references; "
                "pass one reference per completion."
            )
        return [self.verify(c, r) for c, r in zip(completions, references)]

    def start(self, wait: bool = True) -> None:
        """Start worker processes now rather than on the first batch (verifiers without workers do nothing).

        With `wait=False` they start in the background, e.g. while the trainer loads the model.
        """

    def close(self) -> None:
        """Release workers or sandboxes. Safe to call more than once."""


class FunctionVerifier(Verifier):
    """Wraps a plain function `fn(completion, reference, **options) -> float | None | VerificationResult`."""

    def __init__(self, fn: Callable[..., Any], name: str, **options: Any):
        self.fn = fn
        self.name = name
        self.options = options

    def verify(self, completion: str, reference: Any) -> VerificationResult:
        try:
            out = self.fn(completion, reference, **self.options)
        except Exception as exc:  # a user's verifier must not stop a training run either
            logger.warning("verifier %r raised %s: %s; scoring 0", self.name, type(exc).__name__, exc)
            return VerificationResult(0.0, f"error: {type(exc).__name__}: {exc}")
        if isinstance(out, VerificationResult):
            return out
        if out is None:
            return VerificationResult(None, "unusable_reference")
        return VerificationResult(float(out), "scored")


_VERIFIERS = Registry("verifier")
_entry_points_loaded = False


def register_verifier(name: str, *, override: bool = False) -> Callable[[Any], Any]:
    """Register a `Verifier` subclass or a plain scoring function under `name`.

    ```python
    @register_verifier("exact")
    def exact(completion, reference):
        "Exact string match after stripping whitespace."
        return float(completion.strip() == str(reference).strip())
    ```
    """
    return _VERIFIERS.register(name, override=override)


def _load_entry_points() -> None:
    """Import third-party verifiers declared under the `trl_grpo_ext.verifiers` entry-point group."""
    global _entry_points_loaded
    if _entry_points_loaded:
        return
    _entry_points_loaded = True
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name in _VERIFIERS:
            continue
        try:
            _VERIFIERS.register(ep.name)(ep.load())
        except Exception as exc:
            logger.warning("could not load verifier entry point %r (%s): %s", ep.name, ep.value, exc)


def get_verifier(name: str, **options: Any) -> Verifier:
    """Build the verifier registered as `name`, with its options as keyword arguments."""
    _load_entry_points()
    obj = _VERIFIERS.get(name)
    if isinstance(obj, type):
        verifier = obj(**options)
        verifier.name = verifier.name or name
        return verifier
    return FunctionVerifier(obj, name, **options)


def list_verifiers() -> dict[str, str]:
    """Registered verifier names with a one-line description each."""
    _load_entry_points()
    return {name: first_doc_line(obj) for name, obj in ((n, _VERIFIERS.get(n)) for n in _VERIFIERS.names())}
