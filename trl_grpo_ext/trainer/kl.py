"""KL estimators: pure per-token functions of the policy and reference log-probabilities.

Each estimator is `fn(logp, ref_logp) -> Tensor` of the same shape, differentiable through `logp`, with
`x = logp - ref_logp` the per-token log-ratio of a token sampled from the policy (Schulman, "Approximating KL
divergence", 2020). Used as a loss term, on-policy, without the importance ratio (`use_bias_correction_kl=False`):

- k1 = x: unbiased for KL(pi || ref) but its gradient is zero in expectation;
- k2 = x^2 / 2: gradient x grad log pi, in expectation the exact gradient of the reverse KL(pi || ref);
- k3 = exp(-x) + x - 1: gradient (1 - exp(-x)) grad log pi, in expectation the gradient of the forward KL(ref || pi);
  stock TRL's;
- the straight-through `+` variants keep the value of k and take the gradient of k2.

Times the importance ratio (TRL's default), k3 and k1 get the reverse-KL gradient in expectation, k2 and the `+`
variants lose it.

Formulas and sources: docs/estimators.md.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from ..verifiers.core.plugins import Registry

_KL_ESTIMATORS = Registry("KL estimator")

# `low_var_kl` (verl's default KL loss): the log-ratio is clamped to [-LOW_VAR_LOG_RATIO_CLAMP, LOW_VAR_LOG_RATIO_CLAMP]
# before exp() (so that exp(-x) cannot overflow), then the value to [-LOW_VAR_VALUE_CLAMP, LOW_VAR_VALUE_CLAMP].
LOW_VAR_LOG_RATIO_CLAMP = 20.0
LOW_VAR_VALUE_CLAMP = 10.0


def register_kl_estimator(name: str, *, override: bool = False) -> Callable:
    """Decorator: register `fn(logp, ref_logp) -> per-token KL estimate` (same shape, differentiable in logp)."""
    return _KL_ESTIMATORS.register(name, override=override)


def get_kl_estimator(name: str) -> Callable:
    return _KL_ESTIMATORS.get(name)


def list_kl_estimators() -> dict[str, str]:
    """Registered estimator names with the first line of their docstring."""
    return _KL_ESTIMATORS.describe()


def validate_kl_estimator(field: str, name: str) -> None:
    _KL_ESTIMATORS.validate(field, name)


def kl_divergence(
    logp: torch.Tensor, ref_logp: torch.Tensor, estimator: str = "k3", clamp: float | None = None
) -> torch.Tensor:
    """Per-token KL estimate of the named estimator; `clamp` bounds the value to [-clamp, clamp] (no gradient beyond)."""
    kl = get_kl_estimator(estimator)(logp, ref_logp)
    if clamp is not None:
        kl = kl.clamp(min=-clamp, max=clamp)
    return kl


@register_kl_estimator("k1")
def k1(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """x = log pi - log ref: unbiased value, zero expected gradient in the loss without the ratio; for the reward."""
    return logp - ref_logp


@register_kl_estimator("k2")
def k2(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """x^2 / 2: in expectation, its gradient is the exact gradient of the reverse KL(pi || ref)."""
    return (logp - ref_logp) ** 2 / 2


@register_kl_estimator("k3")
def k3(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """exp(-x) + x - 1: unbiased, non-negative; gradient of the forward KL(ref || pi). Stock TRL's estimator."""
    # Same operations as TRL's _compute_loss, so that the value matches stock's to the bit.
    return torch.exp(ref_logp - logp) - (ref_logp - logp) - 1


@register_kl_estimator("abs")
def abs_kl(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """|x|: biased; verl's "abs"."""
    return (logp - ref_logp).abs()


@register_kl_estimator("low_var_kl")
def low_var_kl(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """k3 with x clamped to [-20, 20] and the value to [-10, 10]: verl's default KL loss."""
    x = (logp - ref_logp).clamp(min=-LOW_VAR_LOG_RATIO_CLAMP, max=LOW_VAR_LOG_RATIO_CLAMP)
    return (torch.exp(-x) + x - 1).clamp(min=-LOW_VAR_VALUE_CLAMP, max=LOW_VAR_VALUE_CLAMP)


def straight_through(name: str, value_estimator: Callable) -> Callable:
    """The value of `value_estimator` with the gradient of k2: `k2 - k2.detach() + k.detach()` (verl's `+` variants)."""

    def estimator(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
        grad_part = k2(logp, ref_logp)
        return grad_part - grad_part.detach() + value_estimator(logp, ref_logp).detach()

    estimator.__doc__ = f"Value of {name}, gradient of k2 (straight-through)."
    return estimator


for _name, _fn in [("k1", k1), ("k3", k3), ("abs", abs_kl), ("low_var_kl", low_var_kl)]:
    register_kl_estimator(f"{_name}+")(straight_through(_name, _fn))
