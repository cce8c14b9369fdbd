"""Advantage estimators: pure functions from grouped scalar rewards to one advantage per completion.

Every estimator takes `rewards` of shape (num_groups, G), NaN where a completion is unscorable, and returns a tensor of
the same shape. It may also declare any of these keyword-only parameters, which `compute_advantages` passes in:

- `epsilon` (float): added to denominators;
- `unbiased_std` (bool): Bessel-corrected standard deviations (as TRL's `nanstd`) or not;
- `lengths` (Tensor (num_groups, G)): completion lengths in tokens, the tokens the policy generated (padding and tool
  results excluded);
- `k` (int): the k of pass@k.

`compute_advantages` then applies the edge-case rules once, for every estimator (built-in or registered by a user):
NaN rewards get advantage 0; for an estimator with a group baseline (the default), a group of one gets 0 and a group
whose scorable rewards are all equal gets 0. What the trainer needs to know about an estimator is declared when it is
registered (`EstimatorProperties`).
Formulas and sources: docs/estimators.md.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

from ..verifiers.core.plugins import Registry

_ADVANTAGE_ESTIMATORS = Registry("advantage estimator")


@dataclass(frozen=True)
class EstimatorProperties:
    """What the trainer needs to know about an estimator, declared where it is registered.

    - `needs_lengths`: the estimator declares a `lengths` parameter, so the trainer computes completion lengths for it
      (read from its signature at registration);
    - `unscaled`: its scale does not depend on the spread of the rewards (positively homogeneous), so a KL penalty in
      the reward is not scaled up to a full-strength advantage where the task rewards of a group tie;
    - `group_baseline`: it compares each completion with the others of its group, so a group of one, or one whose
      scorable rewards all tie, carries no signal and gets advantage 0. Without one (a batch-wide baseline), a tied
      group still has advantages, and dynamic sampling would drop nothing.
    """

    needs_lengths: bool = False
    unscaled: bool = False
    group_baseline: bool = True


_PROPERTIES: dict[str, EstimatorProperties] = {}


def register_advantage_estimator(
    name: str, *, unscaled: bool = False, group_baseline: bool = True, override: bool = False
) -> Callable:
    """Decorator: register `fn(rewards, *, epsilon=..., unbiased_std=..., lengths=..., k=...) -> advantages`.

    `rewards` and the result have shape (num_groups, G); declare only the keyword parameters you use. `unscaled` and
    `group_baseline` are the estimator's properties (`EstimatorProperties`); declaring `lengths` makes the trainer
    pass completion lengths.
    """
    register = _ADVANTAGE_ESTIMATORS.register(name, override=override)

    def decorator(fn: Callable) -> Callable:
        register(fn)
        _PROPERTIES[name] = EstimatorProperties(
            needs_lengths="lengths" in inspect.signature(fn).parameters,
            unscaled=unscaled,
            group_baseline=group_baseline,
        )
        return fn

    return decorator


def get_advantage_estimator(name: str) -> Callable:
    return _ADVANTAGE_ESTIMATORS.get(name)


def estimator_properties(name: str) -> EstimatorProperties:
    """The properties `name` was registered with (ValueError listing the valid names when it is not registered)."""
    get_advantage_estimator(name)
    return _PROPERTIES[name]


def list_advantage_estimators() -> dict[str, str]:
    """Registered estimator names with the first line of their docstring."""
    return _ADVANTAGE_ESTIMATORS.describe()


def validate_advantage_estimator(field: str, name: str) -> None:
    _ADVANTAGE_ESTIMATORS.validate(field, name)


def estimator_parameters(name: str) -> set[str]:
    """The keyword parameters an estimator declares (used to reject options it would ignore)."""
    return set(inspect.signature(get_advantage_estimator(name)).parameters) - {"rewards"}


# --- statistics with NaN = missing, as TRL's `nanstd` ---


def nanstd(x: torch.Tensor, dim: int | None = None, keepdim: bool = False, unbiased: bool = True) -> torch.Tensor:
    """Standard deviation ignoring NaNs; NaN where fewer than two values (one value, unbiased). Same operations as
    trl.trainer.utils.nanstd, so that `grpo` reproduces stock TRL to the bit."""
    mean = torch.nanmean(x, dim=dim, keepdim=True)
    variance = torch.nanmean((x - mean) ** 2, dim=dim, keepdim=True)
    if unbiased:
        count = torch.sum(~torch.isnan(x), dim=dim, keepdim=True)
        correction = count / (count - 1)
        correction = torch.where(count > 1, correction, torch.full_like(correction, float("nan")))
        variance *= correction
    std = torch.sqrt(variance)
    if keepdim or dim is None:
        return std if keepdim else std.reshape(())
    return std.squeeze(dim)


def _group_mean(rewards: torch.Tensor) -> torch.Tensor:
    return torch.nanmean(rewards, dim=1, keepdim=True)


# --- built-in estimators ---


@register_advantage_estimator("grpo")
def grpo(rewards: torch.Tensor, *, epsilon: float, unbiased_std: bool) -> torch.Tensor:
    """(r - group mean) / (group std + eps): DeepSeekMath (arXiv 2402.03300), stock TRL's default."""
    std = nanstd(rewards, dim=1, keepdim=True, unbiased=unbiased_std)
    return (rewards - _group_mean(rewards)) / (std + epsilon)


@register_advantage_estimator("dr_grpo", unscaled=True)
def dr_grpo(rewards: torch.Tensor) -> torch.Tensor:
    """r - group mean, no std scaling: Dr. GRPO (arXiv 2503.20783), TRL scale_rewards='none'."""
    return rewards - _group_mean(rewards)


@register_advantage_estimator("batch_std")
def batch_std(rewards: torch.Tensor, *, epsilon: float, unbiased_std: bool) -> torch.Tensor:
    """(r - group mean) / (batch std + eps): PPO-Lite (arXiv 2508.08221), TRL scale_rewards='batch'."""
    std = nanstd(rewards, unbiased=unbiased_std) if rewards.numel() > 1 else torch.zeros((), dtype=rewards.dtype)
    return (rewards - _group_mean(rewards)) / (std + epsilon)


@register_advantage_estimator("rloo", unscaled=True)
def rloo(rewards: torch.Tensor) -> torch.Tensor:
    """r_i - mean of the group's other rewards = n/(n-1) (r_i - group mean), n scorable: RLOO (arXiv 2402.14740)."""
    count = (~torch.isnan(rewards)).sum(dim=1, keepdim=True).to(rewards.dtype)
    return count / (count - 1).clamp(min=1) * (rewards - _group_mean(rewards))


@register_advantage_estimator("reinforce_pp_baseline")
def reinforce_pp_baseline(rewards: torch.Tensor, *, epsilon: float, unbiased_std: bool) -> torch.Tensor:
    """Subtract the group mean, then z-score over the batch: REINFORCE++ baseline (arXiv 2501.03262)."""
    centred = rewards - _group_mean(rewards)
    std = nanstd(centred, unbiased=unbiased_std)
    return (centred - torch.nanmean(centred)) / (torch.nan_to_num(std, nan=0.0) + epsilon)


@register_advantage_estimator("reinforce_pp", group_baseline=False)
def reinforce_pp(
    rewards: torch.Tensor, *, lengths: torch.Tensor | None, epsilon: float, unbiased_std: bool
) -> torch.Tensor:
    """(r - token mean) / (token std + eps) over every completion token of the batch: REINFORCE++ (arXiv 2501.03262).

    No group baseline: the return is whitened over the batch, as OpenRLHF's `reinforce` and verl's `reinforce_plus_plus`
    do. A completion's return is its reward (with `kl_placement="reward"`, minus its KL penalty) at each of its tokens, so
    the token-level mean and standard deviation are those of the rewards weighted by the completion lengths:
    `(r_i - m) / (s + eps)`, `m = sum_j L_j r_j / T`, `s^2 = sum_j L_j (r_j - m)^2 / T` (`/ (T - 1)` with
    `unbiased_std`), `T = sum_j L_j` over the scorable completions. 0 everywhere when every token has the same return.
    """
    if lengths is None:
        raise ValueError("advantage_estimator='reinforce_pp' needs completion lengths: pass `lengths`.")
    weights = torch.where(torch.isnan(rewards), torch.zeros_like(rewards), lengths.to(rewards.dtype))
    values = torch.nan_to_num(rewards)
    tokens = weights.sum()
    mean = (weights * values).sum() / tokens.clamp(min=1)
    variance = (weights * (values - mean) ** 2).sum() / tokens.clamp(min=1)
    if unbiased_std:
        variance = variance * tokens / (tokens - 1) if tokens > 1 else torch.zeros_like(variance)
    std = torch.sqrt(variance)
    counted = values[weights > 0]
    if counted.numel() == 0 or counted.max() == counted.min():  # compared exactly: the rounding of `mean` is no spread
        return torch.where(torch.isnan(rewards), rewards, torch.zeros_like(rewards))
    return (rewards - mean) / (std + epsilon)


@register_advantage_estimator("maxrl")
def maxrl(rewards: torch.Tensor) -> torch.Tensor:
    """(r - group mean) / group mean, 0 where the group mean is 0: MaxRL (arXiv 2602.02710)."""
    mean = _group_mean(rewards)
    safe_mean = torch.where(mean == 0, torch.ones_like(mean), mean)
    return torch.where(mean == 0, torch.zeros_like(rewards), (rewards - mean) / safe_mean)


@register_advantage_estimator("range")
def range_normalised(rewards: torch.Tensor, *, epsilon: float) -> torch.Tensor:
    """(r - group mean) / (group max - group min + eps)."""
    spread = _nanmax(rewards) - _nanmin(rewards)
    return (rewards - _group_mean(rewards)) / (spread + epsilon)


@register_advantage_estimator("rank")
def rank(rewards: torch.Tensor) -> torch.Tensor:
    """Centred ranks within the group scaled to [-1, 1]; ties share their mean rank."""
    valid = ~torch.isnan(rewards)
    filled = torch.where(valid, rewards, torch.full_like(rewards, -math.inf))
    # rank_i = (#valid below r_i) + (#valid equal to r_i + 1) / 2, i.e. the mean of the tied 1-based ranks.
    below = ((filled.unsqueeze(1) < filled.unsqueeze(2)) & valid.unsqueeze(1)).sum(-1)
    equal = ((filled.unsqueeze(1) == filled.unsqueeze(2)) & valid.unsqueeze(1)).sum(-1)
    ranks = below.to(rewards.dtype) + (equal.to(rewards.dtype) + 1) / 2
    count = valid.sum(dim=1, keepdim=True).to(rewards.dtype)
    centred = (ranks - (count + 1) / 2) / ((count - 1) / 2).clamp(min=0.5)  # groups of one are zeroed later
    return torch.where(valid, centred, torch.full_like(rewards, math.nan))


@register_advantage_estimator("pass_at_k")
def pass_at_k(rewards: torch.Tensor, *, k: int) -> torch.Tensor:
    """Pass@k training advantage for binary rewards (arXiv 2508.10751), from n rollouts with c correct.

    rho = 1 - C(n-c, k)/C(n, k), s = sqrt(rho (1 - rho)); correct: (1 - rho)/s; wrong: (1 - rho - C(n-c-1, k-1)/C(n-1, k-1))/s.
    Groups with fewer than k scorable rollouts, or where every k-subset passes (c > n - k), get 0.
    """
    if k < 1:
        raise ValueError(f"pass_at_k={k} must be at least 1.")
    valid = ~torch.isnan(rewards)
    scored = rewards[valid]
    if not torch.all((scored == 0) | (scored == 1)):
        bad = scored[(scored != 0) & (scored != 1)][0].item()
        raise ValueError(
            f"advantage_estimator='pass_at_k' needs binary rewards (0 or 1), got {bad}. Use a 0/1 verifier reward, "
            "or another estimator."
        )
    out = torch.zeros_like(rewards)
    for g in range(rewards.shape[0]):
        n = int(valid[g].sum())
        c = int(rewards[g][valid[g]].sum())
        if n < k or c in (0, n):
            continue
        rho = 1 - math.comb(n - c, k) / math.comb(n, k)
        s = math.sqrt(rho * (1 - rho))
        if s == 0:  # every k-subset holds a correct answer (c > n - k): pass@k is certain, no signal
            continue
        correct = (1 - rho) / s
        wrong = (1 - rho - math.comb(n - c - 1, k - 1) / math.comb(n - 1, k - 1)) / s
        out[g] = torch.where(
            rewards[g] == 1, torch.tensor(correct, dtype=out.dtype), torch.tensor(wrong, dtype=out.dtype)
        )
    return out


@register_advantage_estimator("gpg", unscaled=True)
def gpg(rewards: torch.Tensor) -> torch.Tensor:
    """alpha (r - group mean), alpha = N / max(N - M, 1), M completions in all-equal groups: GPG (arXiv 2504.02546)."""
    valid = ~torch.isnan(rewards)
    total = valid.sum()
    in_flat_groups = (valid & _all_equal(rewards)).sum()
    alpha = total.to(rewards.dtype) / (total - in_flat_groups).clamp(min=1).to(rewards.dtype)
    return alpha * (rewards - _group_mean(rewards))


@register_advantage_estimator("opo", unscaled=True)
def opo(rewards: torch.Tensor, *, lengths: torch.Tensor | None) -> torch.Tensor:
    """r_i - sum_j L_j r_j / sum_j L_j, the length-weighted baseline of OPO (arXiv 2505.23585)."""
    if lengths is None:
        raise ValueError("advantage_estimator='opo' needs completion lengths: pass `lengths` to compute_advantages.")
    weights = torch.where(
        torch.isnan(rewards), torch.zeros_like(lengths, dtype=rewards.dtype), lengths.to(rewards.dtype)
    )
    weighted = torch.nansum(weights * torch.nan_to_num(rewards), dim=1, keepdim=True)
    baseline = weighted / weights.sum(dim=1, keepdim=True).clamp(min=1)
    return rewards - baseline


# --- the entry point ---


def _nanmax(x: torch.Tensor) -> torch.Tensor:
    return torch.where(torch.isnan(x), -math.inf, x).amax(dim=1, keepdim=True)


def _nanmin(x: torch.Tensor) -> torch.Tensor:
    return torch.where(torch.isnan(x), math.inf, x).amin(dim=1, keepdim=True)


def _all_equal(rewards: torch.Tensor) -> torch.Tensor:
    """(num_groups, 1) bool: every scorable reward of the group is the same value (True for empty groups)."""
    return ~(_nanmax(rewards) > _nanmin(rewards))


def compute_advantages(
    rewards: torch.Tensor,
    group_size: int,
    estimator: str = "grpo",
    epsilon: float = 1e-4,
    lengths: torch.Tensor | None = None,
    unbiased_std: bool = True,
    k: int = 1,
) -> torch.Tensor:
    """Advantages of shape (N,) for `rewards` of shape (N,), grouped in consecutive runs of `group_size`.

    NaN rewards are unscorable: left out of every statistic and given advantage 0, as are, for an estimator with a group
    baseline (`EstimatorProperties.group_baseline`), groups of one and groups whose scorable rewards are all equal.
    """
    if rewards.dim() != 1:
        raise ValueError(f"rewards must be a 1-D tensor, got shape {tuple(rewards.shape)}.")
    if group_size < 1 or rewards.numel() % group_size != 0:
        raise ValueError(
            f"group_size={group_size} must be positive and divide the number of rewards ({rewards.numel()})."
        )
    fn = get_advantage_estimator(estimator)
    grouped = rewards.view(-1, group_size)
    available = {
        "epsilon": epsilon,
        "unbiased_std": unbiased_std,
        "lengths": None if lengths is None else lengths.view(-1, group_size),
        "k": k,
    }
    kwargs = {name: available[name] for name in estimator_parameters(estimator) if name in available}
    advantages = fn(grouped, **kwargs)
    if advantages.shape != grouped.shape:
        raise ValueError(
            f"advantage estimator {estimator!r} returned shape {tuple(advantages.shape)}, expected {tuple(grouped.shape)}."
        )
    keep = ~torch.isnan(grouped)
    if estimator_properties(estimator).group_baseline:
        keep &= ~_all_equal(grouped)
        if group_size == 1:
            keep = torch.zeros_like(keep)
    return torch.where(keep, advantages, torch.zeros_like(advantages)).reshape(-1)


def clip_advantages(advantages: torch.Tensor, clip: float, scorable: torch.Tensor) -> tuple[torch.Tensor, float]:
    """Every advantage clamped to [-c, c] after any estimator (NeMo-RL, ROLL); off by default.

    Returns the clamped advantages and the share of the `scorable` completions (a bool mask of the same shape) whose
    advantage was clipped, |A| > clip: the metric `advantages/clipped_fraction`."""
    clipped = advantages.abs() > clip
    count = int(scorable.sum())
    share = int((clipped & scorable).sum()) / count if count else 0.0
    return advantages.clamp(min=-clip, max=clip), share


def advantage_metrics(advantages: torch.Tensor, group_size: int) -> dict[str, float]:
    """Logged summaries of a batch of advantages (N,): mean, std, max |A|, and the share of groups whose advantages are
    all zero (they carry no learning signal)."""
    grouped = advantages.view(-1, group_size)
    return {
        "advantages/mean": advantages.mean().item(),
        "advantages/std": advantages.std().item() if advantages.numel() > 1 else 0.0,
        "advantages/max_abs": advantages.abs().max().item(),
        "frac_zero_advantage_groups": (grouped == 0).all(dim=1).float().mean().item(),
    }
