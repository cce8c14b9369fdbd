"""Independent reference implementations of the advantage estimators of docs/estimators.md.

Written from the formulas, not from trl_grpo_ext.trainer.advantages: plain Python over lists, exact `Fraction` arithmetic
wherever the formula is rational, `math.sqrt` only for standard deviations. Rewards are a flat list of floats (NaN =
unscorable) grouped in consecutive runs of `group_size`; the result is a flat list of floats.

Edge-case rules (estimators.md), applied after the formula: a NaN reward gets 0, every completion of a group of one
gets 0, every completion of a group whose scorable rewards are all equal gets 0. NaN rewards are left out of every
statistic (group and batch means, standard deviations, counts).
"""

from __future__ import annotations

import math
from fractions import Fraction

EXACT_ZERO = Fraction(0)


def is_nan(value: float) -> bool:
    return value != value


def groups_of(values: list, group_size: int) -> list[list]:
    return [values[start : start + group_size] for start in range(0, len(values), group_size)]


def scorable(group: list[float]) -> list[Fraction]:
    return [Fraction(r) for r in group if not is_nan(r)]


def mean(values: list[Fraction]) -> Fraction:
    return sum(values, EXACT_ZERO) / len(values)


def std(values: list[Fraction], unbiased: bool) -> float:
    """Standard deviation, Bessel-corrected when `unbiased` (needs two values then)."""
    centre = mean(values)
    squares = sum(((v - centre) ** 2 for v in values), EXACT_ZERO)
    return math.sqrt(squares / (len(values) - 1 if unbiased else len(values)))


def is_flat(group: list[float]) -> bool:
    """All scorable rewards of the group are the same value (also true for zero or one scorable reward)."""
    return len(set(scorable(group))) <= 1


def apply_edge_rules(rewards: list[float], group_size: int, advantages: list[float]) -> list[float]:
    out = []
    for group, group_adv in zip(groups_of(rewards, group_size), groups_of(advantages, group_size)):
        flat = group_size == 1 or is_flat(group)
        out.extend(0.0 if flat or is_nan(r) else float(a) for r, a in zip(group, group_adv))
    return out


# --- per-group formulas: (group rewards, options) -> advantages of the group, NaN rows anything ---


def grpo_group(group, epsilon, unbiased_std, **_):
    values = scorable(group)
    centre, spread = mean(values), std(values, unbiased_std)
    return [math.nan if is_nan(r) else float(Fraction(r) - centre) / (spread + epsilon) for r in group]


def dr_grpo_group(group, **_):
    centre = mean(scorable(group))
    return [math.nan if is_nan(r) else Fraction(r) - centre for r in group]


def rloo_group(group, **_):
    """r_i minus the mean of the OTHER scorable rewards of the group (leave one out), by explicit loops."""
    out = []
    for i, r in enumerate(group):
        others = [Fraction(s) for j, s in enumerate(group) if j != i and not is_nan(s)]
        out.append(math.nan if is_nan(r) else Fraction(r) - mean(others))
    return out


def maxrl_group(group, **_):
    centre = mean(scorable(group))
    return [math.nan if is_nan(r) else (EXACT_ZERO if centre == 0 else (Fraction(r) - centre) / centre) for r in group]


def range_group(group, epsilon, **_):
    values = scorable(group)
    centre, spread = mean(values), max(values) - min(values)
    return [math.nan if is_nan(r) else (Fraction(r) - centre) / (spread + Fraction(epsilon)) for r in group]


def rank_group(group, **_):
    """1-based ranks among the scorable rewards, ties get the mean of the positions they occupy; then
    (rank - (n + 1) / 2) / ((n - 1) / 2), which maps ranks 1..n onto [-1, 1]."""
    values = sorted(scorable(group))
    n = len(values)
    out = []
    for r in group:
        if is_nan(r):
            out.append(math.nan)
            continue
        positions = [pos + 1 for pos, v in enumerate(values) if v == Fraction(r)]
        mean_rank = Fraction(sum(positions), len(positions))
        out.append((mean_rank - Fraction(n + 1, 2)) / Fraction(n - 1, 2))
    return out


def pass_at_k_group(group, k, **_):
    """Pass@k advantage from n scorable rollouts with c correct (0 < c < n, flat groups are handled by the caller).

    Groups with n < k (C(n, k) = 0) get 0. When n - c < k every k-subset holds a correct rollout: rho = 1, s = 0 and both
    numerators are 0, i.e. the pass@k reward of the group is constant, which the equal-rewards rule maps to 0."""
    n = len(scorable(group))
    c = sum(1 for r in group if r == 1.0)
    if n < k:
        return [EXACT_ZERO] * len(group)
    rho = 1 - Fraction(math.comb(n - c, k), math.comb(n, k))
    s = math.sqrt(rho * (1 - rho))
    correct = (1 - rho) / s if s else 0.0
    wrong = (1 - rho - Fraction(math.comb(n - c - 1, k - 1), math.comb(n - 1, k - 1))) / s if s else 0.0
    return [math.nan if is_nan(r) else (correct if r == 1.0 else wrong) for r in group]


def opo_group(group, lengths, **_):
    pairs = [(Fraction(r), Fraction(length)) for r, length in zip(group, lengths) if not is_nan(r)]
    baseline = sum((length * r for r, length in pairs), EXACT_ZERO) / sum((length for _, length in pairs), EXACT_ZERO)
    return [math.nan if is_nan(r) else Fraction(r) - baseline for r in group]


PER_GROUP = {
    "grpo": grpo_group,
    "dr_grpo": dr_grpo_group,
    "rloo": rloo_group,
    "maxrl": maxrl_group,
    "range": range_group,
    "rank": rank_group,
    "pass_at_k": pass_at_k_group,
}


# --- batch-level formulas ---


def batch_std_all(rewards, group_size, epsilon, unbiased_std, **_):
    """(r_i - group mean) / (std of all scorable rewards of the batch + eps)."""
    spread = std(scorable(rewards), unbiased_std) if len(scorable(rewards)) > 1 else 0.0
    out = []
    for group in groups_of(rewards, group_size):
        centre = mean(scorable(group)) if scorable(group) else EXACT_ZERO
        out.extend(math.nan if is_nan(r) else float(Fraction(r) - centre) / (spread + epsilon) for r in group)
    return out


def reinforce_pp_all(rewards, group_size, epsilon, unbiased_std, **_):
    """Centre each reward on its group mean, then z-score the centred values over all scorable ones of the batch."""
    centred = []
    for group in groups_of(rewards, group_size):
        centre = mean(scorable(group)) if scorable(group) else EXACT_ZERO
        centred.extend(math.nan if is_nan(r) else Fraction(r) - centre for r in group)
    present = [c for c in centred if not is_nan(c)]
    centre_b = mean(present)
    spread = std(present, unbiased_std) if len(present) > 1 else 0.0
    return [math.nan if is_nan(c) else float(c - centre_b) / (spread + epsilon) for c in centred]


def gpg_all(rewards, group_size, **_):
    """alpha (r_i - group mean), alpha = N / max(N - M, 1): N scorable completions of the batch, M the scorable ones in
    groups whose scorable rewards are all equal."""
    groups = groups_of(rewards, group_size)
    total = sum(len(scorable(g)) for g in groups)
    in_flat = sum(len(scorable(g)) for g in groups if is_flat(g))
    alpha = Fraction(total, max(total - in_flat, 1))
    out = []
    for group in groups:
        centred = [EXACT_ZERO] * len(group) if is_flat(group) else dr_grpo_group(group)
        out.extend(math.nan if is_nan(a) else alpha * a for a in centred)
    return out


BATCH_LEVEL = {"batch_std": batch_std_all, "reinforce_pp_baseline": reinforce_pp_all, "gpg": gpg_all}


def reinforce_pp_tokens(rewards, lengths, epsilon, unbiased_std, **_):
    """REINFORCE++ without a baseline: every scorable completion contributes its reward once per token, the mean and
    standard deviation are taken over that explicit list of token values (T of them; T - 1 in the variance when
    `unbiased_std`), and each reward is whitened with them. A batch whose token values are all equal gets 0."""
    tokens = [Fraction(r) for r, length in zip(rewards, lengths) if not is_nan(r) for _ in range(length)]
    if len(set(tokens)) <= 1 or (unbiased_std and len(tokens) < 2):
        return [math.nan if is_nan(r) else EXACT_ZERO for r in rewards]
    centre, spread = mean(tokens), std(tokens, unbiased_std)
    return [math.nan if is_nan(r) else float(Fraction(r) - centre) / (spread + epsilon) for r in rewards]


# Estimators without a group baseline: only the NaN rule applies (tied groups and groups of one keep their values).
WITHOUT_GROUP_BASELINE = {"reinforce_pp": reinforce_pp_tokens}

ESTIMATORS = sorted([*PER_GROUP, *BATCH_LEVEL, *WITHOUT_GROUP_BASELINE, "opo"])


def reference_advantages(
    rewards: list[float],
    group_size: int,
    estimator: str,
    epsilon: float = 1e-4,
    lengths: list[int] | None = None,
    unbiased_std: bool = True,
    k: int = 1,
) -> list[float]:
    """Advantages of `estimator` for the flat `rewards`, edge-case rules applied."""
    options = dict(epsilon=epsilon, unbiased_std=unbiased_std, k=k)
    if estimator in WITHOUT_GROUP_BASELINE:
        raw = WITHOUT_GROUP_BASELINE[estimator](rewards, lengths, **options)
        return [0.0 if is_nan(r) else float(a) for r, a in zip(rewards, raw)]
    if group_size == 1:  # a group of one carries no signal, whatever the formula would say
        return [0.0] * len(rewards)
    if estimator in BATCH_LEVEL:
        if all(is_nan(r) for r in rewards):
            return [0.0] * len(rewards)
        raw = BATCH_LEVEL[estimator](rewards, group_size, **options)
    else:
        raw = []
        length_groups = groups_of(lengths, group_size) if lengths is not None else None
        for index, group in enumerate(groups_of(rewards, group_size)):
            if is_flat(group):  # the formulas may divide by zero here; the edge rule gives 0 anyway
                raw.extend([EXACT_ZERO] * len(group))
            elif estimator == "opo":
                raw.extend(opo_group(group, length_groups[index]))
            else:
                raw.extend(PER_GROUP[estimator](group, **options))
    return apply_edge_rules(rewards, group_size, raw)


# --- REINFORCE++ as the peers define it: token-level returns, whitened over every response token of the batch ---


def returns_to_go(token_rewards: list[float], mask: list[int]) -> list[Fraction]:
    """G_t = sum_{s >= t} r_s (gamma = 1) over the tokens of one response that `mask` counts: OpenRLHF multiplies the
    rewards by its action mask, verl carries the return unchanged through tokens outside its response mask (tool
    results), so either way a tool result adds nothing to the return."""
    returns, running = [], EXACT_ZERO
    for reward, counted in zip(reversed(token_rewards), reversed(mask), strict=True):
        running += Fraction(reward) * counted
        returns.append(running)
    return returns[::-1]


def peer_reinforce_pp(
    token_rewards: list[list[float]], peer: str, epsilon: float = 1e-8, masks: list[list[int]] | None = None
) -> list[list[float]]:
    """Per-token advantages of REINFORCE++ for responses given as their per-token rewards (the score on the last token,
    minus beta * KL_t on every token when the KL is in the reward), as `peer` computes them, at the tokens `masks`
    counts (1: generated by the policy; 0: a tool result, left out of the statistics; default: every token):

    - "openrlhf" (OpenRLHF 0.11.2, `--algo.advantage.estimator reinforce`, `compute_advantages_and_returns`): mean and
      population variance of the returns over the counted tokens, then (G - mean) / sqrt(max(var, epsilon));
    - "verl" (verl 0.9.1, `reinforce_plus_plus`, its `masked_whiten`): `masked_mean` divides by the token count plus
      epsilon, `masked_var` is the masked mean of the squared deviations times T / (T - 1) (Bessel), then
      (G - mean) / sqrt(var + epsilon).

    Both peers use epsilon = 1e-8; 0 removes it. Advantages are returned for the counted tokens only."""
    masks = masks or [[1] * len(rewards) for rewards in token_rewards]
    returns = [returns_to_go(rewards, mask) for rewards, mask in zip(token_rewards, masks, strict=True)]
    tokens = [g for response, mask in zip(returns, masks) for g, counted in zip(response, mask) if counted]
    count, floor = len(tokens), Fraction(epsilon)
    if peer == "openrlhf":
        centre = sum(tokens, EXACT_ZERO) / count
        variance = sum(((g - centre) ** 2 for g in tokens), EXACT_ZERO) / count
        scale = math.sqrt(max(variance, floor))
    else:
        centre = sum(tokens, EXACT_ZERO) / (count + floor)
        variance = sum(((g - centre) ** 2 for g in tokens), EXACT_ZERO) / (count + floor) * count / (count - 1)
        scale = math.sqrt(variance + floor)
    return [
        [float(g - centre) / scale for g, counted in zip(response, mask) if counted]
        for response, mask in zip(returns, masks)
    ]
