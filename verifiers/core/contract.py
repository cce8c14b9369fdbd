"""The verifier contract: what `verify` returns, and the base classes a registered verifier becomes.

A verifier scores one completion against one reference and never raises. A wrong or malformed completion scores 0
(reason `bad_completion: ...` when it is not text); an unusable reference gives None (`unusable_reference: ...`);
a failure of the verifier itself gives None with reason `internal_error: ...`, never 0, since 0 means "wrong" and
would train on a signal that is not there. An exception raised while checking one particular answer (a bug of the
verifier, or of a library it uses, that this answer triggers) scores 0 with a reason of its own,
`comparison_error: <type>` (`judge_error: ...` in the code judge): None would let a policy escape the penalty by
crashing the verifier, and the reason keeps it apart from wrong answers in the metrics and the logs. That holds only
where the reference's own answer, checked the same way, raises nothing; otherwise it is the verifier's failure
(None). A failure keeps its traceback in `details["traceback"]`, which the reward adapter logs. Verifiers know
nothing of torch or TRL; `as_reward_function` adapts them.
"""

from __future__ import annotations

import inspect
import logging
import math
import numbers
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

logger = logging.getLogger("trl_grpo_ext.verifiers")

INTERNAL_ERROR = "internal_error"  # reason prefix of a verifier's own failure
COMPARISON_ERROR = "comparison_error"  # reason prefix of an exception while checking one particular answer
# How much of a value (its repr: a completion, a result, a parser's message) a reason or an error message quotes.
QUOTED_CHARS = 80


@dataclass(frozen=True)
class VerificationResult:
    """Outcome of one verification.

    score: reward in [0, 1], or None when no verdict exists: the reference is unusable, or the verifier itself failed
        (TRL then treats the reward as missing and leaves the completion out of its group's statistics).
    reason: a short machine-friendly tag ("correct", "wrong", "timeout", "no_answer", "bad_completion: ...",
        "unusable_reference: ...", "internal_error: ...", "comparison_error: <type>"), optionally with detail
        (docs/verifiers.md lists which reasons mean "wrong" and which "could not tell").
    extracted: the answer the verifier took from the completion, when it found one.
    """

    score: float | None
    reason: str
    extracted: str | None = None
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def is_internal_error(self) -> bool:
        return self.reason.startswith(INTERNAL_ERROR)


def internal_error(exc: BaseException | str, **details: Any) -> VerificationResult:
    """The result of a verifier's own failure: score None, reason `internal_error: <type>: <message>`."""
    if isinstance(exc, BaseException):
        details.setdefault("traceback", "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)))
        exc = f"{type(exc).__name__}: {exc}"
    return VerificationResult(None, f"{INTERNAL_ERROR}: {exc}", details=details)


def comparison_error(
    error_type: str, error: str = "", extracted: str | None = None, **details: Any
) -> VerificationResult:
    """The result of an exception while checking one answer: score 0, reason `comparison_error: <error_type>`, the
    exception's text (and traceback, when given) in `details`."""
    return VerificationResult(0.0, f"{COMPARISON_ERROR}: {error_type}", extracted, {**details, "error": error})


def bad_completion(completion: Any) -> VerificationResult:
    """The result for a completion that is not text: score 0, reason `bad_completion: ...`."""
    return VerificationResult(0.0, f"bad_completion: expected str, got {type(completion).__name__}")


def is_missing(reference: Any) -> bool:
    """None, or NaN (how pandas and `datasets` write a missing value)."""
    return reference is None or (isinstance(reference, float) and reference != reference)


class Verifier:
    """Base class. Subclasses implement `verify`; `verify_batch` may be overridden to run in parallel."""

    name: str = ""

    def verify(self, completion: str, reference: Any) -> VerificationResult:
        raise NotImplementedError

    def verify_batch(self, completions: Sequence[str], references: Sequence[Any]) -> list[VerificationResult]:
        """`verify` on each pair; an exception from one item becomes that item's `internal_error` result."""
        if len(completions) != len(references):
            raise ValueError(
                f"verify_batch got {len(completions)} completions and {len(references)} references; "
                "pass one reference per completion."
            )
        results = []
        for completion, reference in zip(completions, references):
            try:
                results.append(self.verify(completion, reference))
            except Exception as exc:  # a verifier never raises into the trainer
                results.append(internal_error(exc))
        return results

    def start(self, wait: bool = True) -> None:
        """Start worker processes now rather than on the first batch (verifiers without workers do nothing).

        With `wait=False` they start in the background, e.g. while the trainer loads the model.
        """

    def close(self) -> None:
        """Release workers or sandboxes. Safe to call more than once."""


class FunctionVerifier(Verifier):
    """Wraps a plain function `fn(completion, reference, **options) -> float | None | VerificationResult`.

    A completion that is not a string scores 0 and a missing reference (None) gives None, without calling `fn`; an
    exception from `fn`, or a return value of another type, gives None with reason `internal_error: ...`.
    """

    def __init__(self, fn: Callable[..., Any], name: str, **options: Any):
        check_options(fn, name, options, leading=2)
        self.fn = fn
        self.name = name
        self.options = options

    def verify(self, completion: str, reference: Any) -> VerificationResult:
        if not isinstance(completion, str):
            return bad_completion(completion)
        if is_missing(reference):
            return VerificationResult(None, "unusable_reference: missing")
        try:
            out = self.fn(completion, reference, **self.options)
        except Exception as exc:  # a user's verifier must not stop a training run; the reward adapter logs it
            logger.debug("verifier %r raised", self.name, exc_info=True)
            return internal_error(exc)
        if isinstance(out, VerificationResult):
            return out
        if out is None:
            return VerificationResult(None, "unusable_reference")
        if isinstance(out, numbers.Real) and math.isfinite(out):
            return VerificationResult(float(out), "scored")
        return internal_error(
            f"{self.name} returned {out!r:.{QUOTED_CHARS}}; expected a finite float, None or VerificationResult"
        )


def check_options(obj: Callable[..., Any], name: str, options: dict[str, Any], leading: int = 0) -> None:
    """Raise ValueError, naming the accepted options, when `obj(<leading positional args>, **options)` cannot bind.

    A callable with `**kwargs` accepts any option; one whose signature cannot be read is not checked.
    """
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):
        return
    accepted = accepted_options(signature, leading)
    if not any(p.kind is p.VAR_KEYWORD for p in signature.parameters.values()):
        unknown = [key for key in options if key not in accepted]
        if unknown:
            raise ValueError(
                f"verifier {name!r} does not accept the option(s) {', '.join(map(repr, unknown))}; "
                f"accepted options: {', '.join(accepted) or 'none'}."
            )
    try:
        signature.bind(*([None] * leading), **options)
    except TypeError as exc:  # a required option missing, or a function that cannot take (completion, reference)
        raise ValueError(
            f"verifier {name!r} cannot be built with the options {options}: {exc}; "
            f"accepted options: {', '.join(accepted) or 'none'}."
        ) from None


def accepted_options(signature: inspect.Signature, leading: int = 0) -> list[str]:
    """Parameters that can be passed by keyword, after the first `leading` positional ones."""
    params = list(signature.parameters.values())
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)][:leading]
    return [p.name for p in params if p not in positional and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
