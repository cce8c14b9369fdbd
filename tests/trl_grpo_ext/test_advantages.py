"""Advantage estimators against independent implementations of their formulas, stock TRL, and their invariances."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st
from stock_trl import StockAdvantages, build_stock_trainer

from trl_grpo_ext.trainer.advantages import (
    _ADVANTAGE_ESTIMATORS,
    EstimatorProperties,
    advantage_metrics,
    clip_advantages,
    compute_advantages,
    estimator_properties,
    get_advantage_estimator,
    list_advantage_estimators,
    register_advantage_estimator,
)

from .reference_estimators import ESTIMATORS, groups_of, is_flat, peer_reinforce_pp, reference_advantages

GROUP_SIZES = [1, 2, 3, 4, 8]
SEEDS = [0, 1, 2]


# --- random rewards covering every edge case ---


GROUP_KINDS = ["spread", "ties", "all equal", "some NaN", "one scorable", "all NaN"]


def random_group(rng: np.random.Generator, group_size: int, kind: str) -> list[float]:
    if kind == "spread":
        return list(rng.normal(size=group_size))
    if kind == "ties":
        return [float(v) for v in rng.choice([0.0, 0.5, 1.0], size=group_size)]
    if kind == "all equal":
        return [float(rng.normal())] * group_size
    if kind == "some NaN":
        group = list(rng.normal(size=group_size))
        group[int(rng.integers(group_size))] = math.nan
        return group
    if kind == "one scorable":
        group = [math.nan] * group_size
        group[int(rng.integers(group_size))] = float(rng.normal())
        return group
    return [math.nan] * group_size


def random_rewards(seed: int, group_size: int, num_groups: int = 12) -> list[float]:
    """Every kind of group once, then kinds drawn at random (spread groups twice as likely), in shuffled order."""
    rng = np.random.default_rng(seed)
    kinds = GROUP_KINDS + list(rng.choice(GROUP_KINDS + ["spread"], size=num_groups - len(GROUP_KINDS)))
    rng.shuffle(kinds)
    rewards = []
    for kind in kinds:
        rewards.extend(random_group(rng, group_size, kind))
    return rewards


def random_binary_rewards(seed: int, group_size: int, k: int, num_groups: int = 16) -> list[float]:
    """0/1 rewards with some NaN; every group has n - c >= k or is flat (the case n - c < k has its own test)."""
    rng = np.random.default_rng(seed)
    rewards = []
    while len(rewards) < num_groups * group_size:
        group = [float(v) for v in rng.integers(0, 2, size=group_size)]
        if rng.random() < 0.3:
            group[int(rng.integers(group_size))] = math.nan
        n = sum(1 for r in group if not math.isnan(r))
        c = sum(1 for r in group if r == 1.0)
        if c in (0, n) or n - c >= k:
            rewards.extend(group)
    return rewards


def library(rewards: list[float], group_size: int, estimator: str, **kwargs) -> torch.Tensor:
    if "lengths" in kwargs and kwargs["lengths"] is not None:
        kwargs["lengths"] = torch.tensor(kwargs["lengths"])
    return compute_advantages(torch.tensor(rewards, dtype=torch.float64), group_size, estimator, **kwargs)


def assert_matches_reference(rewards, group_size, estimator, **kwargs):
    got = library(rewards, group_size, estimator, **kwargs)
    expected = torch.tensor(reference_advantages(rewards, group_size, estimator, **kwargs), dtype=torch.float64)
    torch.testing.assert_close(got, expected, rtol=relative_tolerance(estimator, **kwargs), atol=1e-12)
    # The edge-case rules give exactly 0, not merely something small.
    group_baseline = estimator_properties(estimator).group_baseline
    for index, (r, group) in enumerate(zip(rewards, expand_groups(rewards, group_size))):
        if math.isnan(r) or (group_baseline and (group_size == 1 or is_flat(group))):
            assert got[index].item() == 0.0, (estimator, index, rewards)
    return got


# Estimators that divide by a Bessel-corrected std. Like trl.trainer.utils.nanstd (which the library mirrors for bit
# parity with stock), they compute the factor count / (count - 1) from integer counts, i.e. in float32 even for float64
# rewards: the std is then off by up to ~3e-8 relative. Everything else must match to float64 rounding.
BESSEL_STD = {"grpo", "batch_std", "reinforce_pp_baseline", "reinforce_pp"}


def relative_tolerance(estimator: str, unbiased_std: bool = True, **_) -> float:
    return 1e-7 if estimator in BESSEL_STD and unbiased_std else 1e-10


def expand_groups(rewards, group_size):
    """The group of each completion, aligned with `rewards`."""
    return [group for group in groups_of(rewards, group_size) for _ in group]


# --- 1. exact values against the reference implementations ---


def reference_cases():
    """(estimator, group_size, seed) for every estimator but pass_at_k and opo (own tests). random_rewards always
    holds a 'some NaN' group, so group sizes 2 and 3 always hold a group with exactly 2 scorable rewards."""
    for estimator in sorted(set(ESTIMATORS) - {"pass_at_k", "opo", "reinforce_pp"}):
        for group_size in GROUP_SIZES:
            for seed in SEEDS:
                yield pytest.param(estimator, group_size, seed)


def test_rank_hand_computed():
    # ranks 1, 2.5, 2.5, 4 of n = 4 -> (rank - 2.5) / 1.5; NaN -> 0
    got = compute_advantages(torch.tensor([0.0, 1.0, 1.0, 2.0, 5.0, math.nan, 9.0, 7.0]), 4, "rank")
    torch.testing.assert_close(got, torch.tensor([-1.0, 0.0, 0.0, 1.0, -1.0, 0.0, 1.0, 0.0]))


def test_rank_two_scorable_rewards_span_unit_interval():
    got = compute_advantages(torch.tensor([0.0, 1.0, 5.0, math.nan, 1.0]), 5, "rank")
    assert got.tolist() == [-1.0, 0.0, 1.0, 0.0, 0.0]
    assert compute_advantages(torch.tensor([0.0, 1.0]), 2, "rank").tolist() == [-1.0, 1.0]


@pytest.mark.parametrize(("estimator", "group_size", "seed"), list(reference_cases()))
def test_estimator_matches_reference(estimator, group_size, seed):
    rewards = random_rewards(seed, group_size)
    assert_matches_reference(rewards, group_size, estimator, epsilon=1e-4)


@pytest.mark.parametrize("unbiased_std", [True, False])
@pytest.mark.parametrize("epsilon", [0.0, 1e-6, 0.1])
@pytest.mark.parametrize("estimator", ["grpo", "batch_std", "reinforce_pp_baseline", "range"])
def test_epsilon_and_std_options_match_reference(estimator, epsilon, unbiased_std):
    for group_size in (2, 5):
        rewards = random_rewards(7, group_size)
        assert_matches_reference(rewards, group_size, estimator, epsilon=epsilon, unbiased_std=unbiased_std)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("group_size", GROUP_SIZES)
def test_opo_matches_reference(group_size, seed):
    rewards = random_rewards(seed, group_size)
    lengths = [int(v) for v in np.random.default_rng(seed + 100).integers(1, 60, size=len(rewards))]
    assert_matches_reference(rewards, group_size, "opo", lengths=lengths)


@pytest.mark.parametrize("unbiased_std", [True, False])
@pytest.mark.parametrize("epsilon", [0.0, 1e-4])
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("group_size", GROUP_SIZES)
def test_reinforce_pp_matches_reference(group_size, seed, epsilon, unbiased_std):
    rewards = random_rewards(seed, group_size)
    lengths = [int(v) for v in np.random.default_rng(seed + 200).integers(1, 60, size=len(rewards))]
    options = dict(lengths=lengths, epsilon=epsilon, unbiased_std=unbiased_std)
    got = assert_matches_reference(rewards, group_size, "reinforce_pp", **options)
    # No group baseline: scorable completions of tied groups and of groups of one keep a non-zero advantage.
    assert all(got[i] != 0 for i, r in enumerate(rewards) if not math.isnan(r))


def test_reinforce_pp_hand_computed():
    # Scorable (reward, length): (1, 2), (0, 3), (1, 1), (1, 4), (0, 2): T = 12 tokens, mean m = 7/12, token variance
    # (7 (5/12)^2 + 5 (7/12)^2) / 11 = 35/132 (Bessel over tokens). The tied second group keeps its advantages.
    rewards = torch.tensor([1.0, 0.0, 1.0, 1.0, math.nan, 0.0], dtype=torch.float64)
    got = compute_advantages(rewards, 2, "reinforce_pp", epsilon=0.0, lengths=torch.tensor([2, 3, 1, 4, 5, 2]))
    up, down = (5 / 12) / math.sqrt(35 / 132), -(7 / 12) / math.sqrt(35 / 132)
    torch.testing.assert_close(got, torch.tensor([up, down, up, up, 0.0, down], dtype=torch.float64))


def test_reinforce_pp_gives_zero_when_every_token_has_the_same_return():
    got = compute_advantages(
        torch.tensor([1.0, 1.0, math.nan, 1.0]), 2, "reinforce_pp", lengths=torch.tensor([1, 2, 3, 4])
    )
    assert got.tolist() == [0.0, 0.0, 0.0, 0.0]
    with pytest.raises(ValueError, match=r"reinforce_pp.*lengths"):
        compute_advantages(torch.tensor([1.0, 0.0]), 2, "reinforce_pp")


@pytest.mark.parametrize(("peer", "unbiased_std"), [("openrlhf", False), ("verl", True)])
@pytest.mark.parametrize("seed", SEEDS)
def test_reinforce_pp_equals_the_peers_token_whitening(peer, unbiased_std, seed):
    """With the reward on each response's last token and no KL in it, a response's return is its reward at every
    token, so the peers' per-token advantages are constant along each response and equal ours; exactly once their 1e-8
    constants are removed, and within 1e-7 with them (rewards of unit variance)."""
    rng = np.random.default_rng(seed)
    rewards = [float(v) for v in rng.choice([0.0, 0.25, 1.0], size=24)]
    lengths = [int(v) for v in rng.integers(1, 40, size=24)]
    token_rewards = [[0.0] * (length - 1) + [r] for r, length in zip(rewards, lengths)]
    ours = library(rewards, 4, "reinforce_pp", lengths=lengths, epsilon=0.0, unbiased_std=unbiased_std)
    for epsilon, tolerance in [(0.0, 1e-12), (1e-8, 1e-7)]:
        theirs = peer_reinforce_pp(token_rewards, peer, epsilon)
        for index, response in enumerate(theirs):
            assert len(set(response)) == 1
            assert response[0] == pytest.approx(ours[index].item(), rel=tolerance, abs=tolerance)


@pytest.mark.parametrize(("peer", "unbiased_std"), [("openrlhf", False), ("verl", True)])
def test_reinforce_pp_leaves_tool_results_out_as_the_peers_masks_do(peer, unbiased_std):
    """Tool results inside a response are outside the peers' action (response) masks: they add nothing to the return
    and are left out of the token statistics. The trainer's `lengths` count the tokens the policy generated, so ours
    equals theirs on the policy's tokens."""
    rng = np.random.default_rng(7)
    rewards = [float(v) for v in rng.choice([0.0, 1.0], size=12)]
    masks = [[int(v) for v in rng.choice([0, 1, 1, 1], size=int(n))] + [1] for n in rng.integers(2, 30, size=12)]
    token_rewards = [[0.0] * (len(mask) - 1) + [r] for r, mask in zip(rewards, masks)]
    policy_tokens = [sum(mask) for mask in masks]
    assert any(0 in mask for mask in masks)  # the premise: some responses hold tool results
    ours = library(rewards, 4, "reinforce_pp", lengths=policy_tokens, epsilon=0.0, unbiased_std=unbiased_std)
    for index, response in enumerate(peer_reinforce_pp(token_rewards, peer, epsilon=0.0, masks=masks)):
        assert response == pytest.approx([ours[index].item()] * policy_tokens[index], rel=1e-12)


def test_reinforce_pp_with_the_kl_in_the_reward_puts_the_whole_penalty_on_the_last_token():
    """The trainer subtracts beta * sum_s KL_s from the reward of a completion (`kl_placement="reward"`): that is the
    peers' REINFORCE++ with the whole penalty on the last token, exactly. The peers spread it over the tokens
    (return-to-go r - beta sum_{s >= t} KL_s), so their later tokens carry less penalty (docs/estimators.md)."""
    token_kl = [[0.2, 0.1, 0.3], [0.05, 0.0], [0.4, 0.1, 0.1, 0.2], [0.3]]
    scores, beta = [1.0, 0.0, 1.0, 0.0], 0.5
    lengths = [len(kls) for kls in token_kl]
    penalised = [score - beta * sum(kls) for score, kls in zip(scores, token_kl)]
    ours = library(penalised, 2, "reinforce_pp", lengths=lengths, epsilon=0.0)
    penalty_at_end = [[0.0] * (len(kls) - 1) + [r] for r, kls in zip(penalised, token_kl)]
    for index, response in enumerate(peer_reinforce_pp(penalty_at_end, "verl", epsilon=0.0)):
        assert response == pytest.approx([ours[index].item()] * lengths[index], rel=1e-12)
    spread = [[-beta * kl for kl in kls[:-1]] + [score - beta * kls[-1]] for score, kls in zip(scores, token_kl)]
    for response in peer_reinforce_pp(spread, "verl", epsilon=0.0)[:3]:
        assert response == sorted(response)  # the return grows along the response as less KL is left to come


def test_opo_hand_computed():
    # baseline = (1*1 + 3*0) / (1 + 3) = 0.25
    got = compute_advantages(torch.tensor([1.0, 0.0]), 2, "opo", lengths=torch.tensor([1, 3]))
    torch.testing.assert_close(got, torch.tensor([0.75, -0.25]), rtol=0, atol=0)


def test_opo_without_lengths_fails_clearly():
    with pytest.raises(ValueError, match=r"opo.*lengths"):
        compute_advantages(torch.tensor([1.0, 0.0]), 2, "opo")


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("k", [1, 2, 3])
@pytest.mark.parametrize("group_size", [1, 2, 4, 8])
def test_pass_at_k_matches_reference(group_size, k, seed):
    rewards = random_binary_rewards(seed, group_size, k)
    assert_matches_reference(rewards, group_size, "pass_at_k", k=k)


def test_pass_at_k_hand_computed():
    # n = 4, c = 1, k = 2: rho = 1 - C(3,2)/C(4,2) = 1/2, s = 1/2; correct (1/2)/(1/2) = 1;
    # wrong (1/2 - C(2,1)/C(3,1)) / (1/2) = (1/2 - 2/3) * 2 = -1/3.
    got = compute_advantages(torch.tensor([1.0, 0.0, 0.0, 0.0], dtype=torch.float64), 4, "pass_at_k", k=2)
    torch.testing.assert_close(got, torch.tensor([1.0, -1 / 3, -1 / 3, -1 / 3], dtype=torch.float64))


def test_pass_at_k_with_k_1_is_grpo_with_population_std():
    rewards = random_binary_rewards(3, 6, 1)
    pass_at_1 = library(rewards, 6, "pass_at_k", k=1)
    grpo = library(rewards, 6, "grpo", epsilon=0.0, unbiased_std=False)
    torch.testing.assert_close(pass_at_1, grpo, rtol=1e-12, atol=1e-12)


def test_pass_at_k_is_zero_when_every_k_subset_passes():
    # n = 4, c = 2, k = 3: every 3-subset holds a correct rollout, so the group's pass@3 reward is constant (rho = 1,
    # s = 0, both numerators 0): like an all-equal group, it carries no signal and its advantage is 0.
    rewards = [1.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0]
    expected = reference_advantages(rewards, 4, "pass_at_k", k=3)
    assert expected[:4] == [0.0] * 4
    got = library(rewards, 4, "pass_at_k", k=3)
    torch.testing.assert_close(got, torch.tensor(expected, dtype=torch.float64), rtol=1e-12, atol=1e-12)


def test_pass_at_k_non_binary_rewards_fail_clearly():
    with pytest.raises(ValueError, match=r"pass_at_k.*binary.*0\.5"):
        compute_advantages(torch.tensor([1.0, 0.5, 0.0, 1.0]), 2, "pass_at_k", k=1)


def test_nan_rewards_are_allowed_by_pass_at_k():
    got = compute_advantages(torch.tensor([1.0, math.nan, 0.0, 1.0]), 4, "pass_at_k", k=1)
    assert got[1].item() == 0.0
    assert got[0].item() > 0 > got[2].item()


@pytest.mark.parametrize(
    "estimator", sorted(name for name in set(ESTIMATORS) - {"pass_at_k"} if estimator_properties(name).group_baseline)
)
def test_edge_cases_on_one_hand_made_batch(estimator):
    # group 1 spread with a NaN, group 2 all equal, group 3 one scorable, group 4 all NaN, group 5 ties.
    rewards = [0.0, math.nan, 2.0, 5.0, 3.0, 3.0, 3.0, 3.0, math.nan, 7.0, math.nan, math.nan]
    rewards += [math.nan] * 4 + [1.0, 1.0, 0.0, 2.0]
    lengths = list(range(1, len(rewards) + 1))
    got = assert_matches_reference(rewards, 4, estimator, lengths=lengths)
    assert torch.count_nonzero(got[4:16]) == 0
    assert got[1].item() == 0.0


# --- 1b. bit-for-bit parity with stock TRL (GRPOTrainer._generate_and_score_completions, run on given rewards) ---


@pytest.fixture(scope="module")
def stock_advantages(tiny_model_dir, tmp_path_factory):
    """Stock TRL's own advantage computation: (rewards, group_size, scale_rewards) -> advantages."""
    return StockAdvantages(build_stock_trainer(tiny_model_dir, tmp_path_factory.mktemp("stock")))


def random_float_rewards(seed: int, group_size: int, dtype: torch.dtype) -> torch.Tensor:
    """Random floats with NaN rows (including groups with a single scorable reward) and no all-equal group."""
    generator = torch.Generator().manual_seed(seed)
    rewards = torch.rand(16 * group_size, generator=generator, dtype=dtype) * 3 - 1
    rewards[torch.rand(rewards.shape, generator=generator) < 0.2] = math.nan
    rewards[:group_size] = math.nan
    rewards[group_size + 1 : 2 * group_size] = math.nan
    return rewards


@pytest.mark.parametrize("group_size", [2, 4, 8])
@pytest.mark.parametrize(
    ("estimator", "scale_rewards"), [("grpo", "group"), ("dr_grpo", "none"), ("batch_std", "batch")]
)
def test_bit_for_bit_equal_to_stock_trl(stock_advantages, estimator, scale_rewards, group_size):
    """Stock holds rewards in float32, so that is the dtype compared."""
    for seed in range(5):
        rewards = random_float_rewards(seed, group_size, torch.float32)
        grouped = rewards.view(-1, group_size)
        # the test's premise: no group with two scorable rewards that are all equal
        for group in grouped:
            valid = group[~torch.isnan(group)]
            assert valid.numel() < 2 or valid.unique().numel() > 1
        got = compute_advantages(rewards, group_size, estimator, epsilon=1e-4)
        expected = stock_advantages(rewards, group_size, scale_rewards)
        assert got.dtype == expected.dtype
        assert torch.equal(got, expected), (estimator, seed, (got - expected).abs().max())


# --- 2. properties (hypothesis) ---

SMALL_INTS = st.integers(min_value=-8, max_value=8).map(float)
NAN = st.just(math.nan)
PROPERTY_SETTINGS = settings(deadline=None, max_examples=40)


@st.composite
def reward_batches(draw, values=SMALL_INTS, nan_share=True):
    """(rewards, group_size): integer-valued floats (shifts and sums stay exact, ties are common), some NaN."""
    group_size = draw(st.sampled_from([1, 2, 3, 4, 6]))
    num_groups = draw(st.integers(min_value=1, max_value=4))
    element = st.one_of(values, values, values, NAN) if nan_share else values
    rewards = draw(st.lists(element, min_size=group_size * num_groups, max_size=group_size * num_groups))
    return rewards, group_size


def lengths_for(rewards):
    return [1 + (7 * i) % 13 for i in range(len(rewards))]


def run(rewards, group_size, estimator, **kwargs):
    if estimator_properties(estimator).needs_lengths:
        kwargs["lengths"] = lengths_for(rewards)
    return library(rewards, group_size, estimator, **kwargs)


SHIFT_INVARIANT = [
    "grpo", "dr_grpo", "batch_std", "rloo", "reinforce_pp_baseline", "reinforce_pp", "range", "rank", "gpg", "opo"
]  # fmt: skip
SCALE_INVARIANT = ["grpo", "batch_std", "rank", "range", "reinforce_pp_baseline", "reinforce_pp", "maxrl"]
HOMOGENEOUS = ["dr_grpo", "rloo", "gpg", "opo"]
ZERO_SUM = ["grpo", "dr_grpo", "batch_std", "rloo", "range", "rank", "gpg", "maxrl", "reinforce_pp_baseline"]
MONOTONE = [
    "grpo", "dr_grpo", "batch_std", "rloo", "reinforce_pp_baseline", "reinforce_pp", "range", "rank", "gpg", "opo"
]  # fmt: skip


@pytest.mark.parametrize("estimator", SHIFT_INVARIANT)
@PROPERTY_SETTINGS
@given(batch=reward_batches(), shift=st.integers(min_value=-50, max_value=50))
def test_shift_invariance(estimator, batch, shift):
    rewards, group_size = batch
    shifted = [r + shift for r in rewards]
    torch.testing.assert_close(
        run(shifted, group_size, estimator), run(rewards, group_size, estimator), rtol=1e-9, atol=1e-9
    )


@pytest.mark.parametrize("estimator", SCALE_INVARIANT)
@PROPERTY_SETTINGS
@given(batch=reward_batches(), scale=st.floats(min_value=0.01, max_value=100))
def test_scale_invariance(estimator, batch, scale):
    rewards, group_size = batch
    if estimator == "maxrl":  # (r - mu) / mu: scale-invariant, but its sign flips with mu, keep rewards >= 0
        rewards = [abs(r) for r in rewards]
    scaled = [r * scale for r in rewards]
    # eps = 0 makes the invariance exact in real numbers; flat groups (std 0) are zeroed by the edge rule.
    torch.testing.assert_close(
        run(scaled, group_size, estimator, epsilon=0.0),
        run(rewards, group_size, estimator, epsilon=0.0),
        rtol=1e-9,
        atol=1e-9,
    )


@pytest.mark.parametrize("estimator", ["grpo", "range"])
@PROPERTY_SETTINGS
@given(batch=reward_batches(), scale=st.floats(min_value=0.5, max_value=100))
def test_scale_invariance_up_to_epsilon(estimator, batch, scale):
    """With TRL's eps = 1e-4 and integer rewards (spread >= 1 in a non-flat group), scaling changes A by < 1e-3."""
    rewards, group_size = batch
    scaled = [r * scale for r in rewards]
    torch.testing.assert_close(
        run(scaled, group_size, estimator, epsilon=1e-4),
        run(rewards, group_size, estimator, epsilon=1e-4),
        rtol=1e-3,
        atol=1e-3,
    )


@pytest.mark.parametrize("estimator", HOMOGENEOUS)
@PROPERTY_SETTINGS
@given(batch=reward_batches(), scale=st.floats(min_value=0.01, max_value=100))
def test_positive_homogeneity(estimator, batch, scale):
    rewards, group_size = batch
    scaled = [r * scale for r in rewards]
    torch.testing.assert_close(
        run(scaled, group_size, estimator), scale * run(rewards, group_size, estimator), rtol=1e-9, atol=1e-9
    )


@pytest.mark.parametrize("estimator", ZERO_SUM)
@PROPERTY_SETTINGS
@given(batch=reward_batches())
def test_zero_sum_within_each_group(estimator, batch):
    rewards, group_size = batch
    if estimator == "maxrl":
        rewards = [abs(r) for r in rewards]
    sums = run(rewards, group_size, estimator).view(-1, group_size).sum(dim=1)
    torch.testing.assert_close(sums, torch.zeros_like(sums), rtol=0, atol=1e-9)


@PROPERTY_SETTINGS
@given(batch=reward_batches())
def test_opo_length_weighted_sum_is_zero(batch):
    """OPO's baseline is the length-weighted mean, so sum_i L_i A_i = 0 in every group."""
    rewards, group_size = batch
    lengths = torch.tensor(lengths_for(rewards), dtype=torch.float64)
    weighted = (run(rewards, group_size, "opo") * lengths).view(-1, group_size).sum(dim=1)
    torch.testing.assert_close(weighted, torch.zeros_like(weighted), rtol=0, atol=1e-9)


@st.composite
def binary_batches(draw):
    """(rewards, group_size, k) with 0/1 rewards and NaN, every group flat or with n - c >= k."""
    rewards, group_size = draw(reward_batches(values=st.sampled_from([0.0, 1.0])))
    k = draw(st.integers(min_value=1, max_value=4))
    for group in groups_of(rewards, group_size):
        n = sum(1 for r in group if not math.isnan(r))
        c = sum(1 for r in group if r == 1.0)
        assume(c in (0, n) or n - c >= k)
    return rewards, group_size, k


@PROPERTY_SETTINGS
@given(batch=binary_batches())
def test_pass_at_k_zero_sum_and_ordering(batch):
    """sum_i A_i = [c (1 - rho) + (n - c)(1 - rho) - (n - c) C(n-c-1, k-1)/C(n-1, k-1)] / s = 0, since
    (n - c) C(n-c-1, k-1) / C(n-1, k-1) = n C(n-c, k) / C(n, k) = n (1 - rho); and correct > wrong."""
    rewards, group_size, k = batch
    advantages = library(rewards, group_size, "pass_at_k", k=k)
    sums = advantages.view(-1, group_size).sum(dim=1)
    torch.testing.assert_close(sums, torch.zeros_like(sums), rtol=0, atol=1e-9)
    assert_ordering_preserved(rewards, group_size, advantages)


def assert_ordering_preserved(rewards, group_size, advantages):
    """r_i > r_j for two scorable rewards of a group (of at least two) implies A_i > A_j."""
    if group_size == 1:
        return
    for start in range(0, len(rewards), group_size):
        for i in range(start, start + group_size):
            for j in range(start, start + group_size):
                if rewards[i] > rewards[j]:  # False whenever one is NaN
                    assert advantages[i] > advantages[j], (i, j, rewards, advantages)


@pytest.mark.parametrize("estimator", [*MONOTONE, "maxrl"])
@PROPERTY_SETTINGS
@given(batch=reward_batches())
def test_ordering_preserved(estimator, batch):
    rewards, group_size = batch
    if estimator == "maxrl":  # monotone only for a positive group mean
        rewards = [abs(r) for r in rewards]
    assert_ordering_preserved(rewards, group_size, run(rewards, group_size, estimator))


@PROPERTY_SETTINGS
@given(batch=reward_batches())
@example(batch=([0.0, 1.0], 2))
def test_rank_values_in_unit_interval_with_extremes(batch):
    rewards, group_size = batch
    advantages = run(rewards, group_size, "rank")
    assert torch.all(advantages.abs() <= 1.0)
    for group, group_adv in zip(groups_of(rewards, group_size), advantages.view(-1, group_size)):
        valid = [r for r in group if not math.isnan(r)]
        if group_size > 1 and len(valid) > 1 and valid.count(max(valid)) == 1 and valid.count(min(valid)) == 1:
            assert group_adv.max().item() == 1.0 and group_adv.min().item() == -1.0


@pytest.mark.parametrize(
    "estimator",
    [name for name in sorted(set(ESTIMATORS) - {"pass_at_k"})],
)
@settings(deadline=None, max_examples=25)
@given(batch=reward_batches())
@example(batch=([0.0, 1.0], 2))
@example(batch=([3.0, math.nan, 3.0, 3.0, 1.0, 2.0], 3))
def test_reference_agreement_on_hypothesis_batches(estimator, batch):
    rewards, group_size = batch
    kwargs = {"lengths": lengths_for(rewards)} if estimator_properties(estimator).needs_lengths else {}
    assert_matches_reference(rewards, group_size, estimator, **kwargs)


# --- 3. registry ---


@pytest.fixture
def temporary_names():
    """Names registered by a test; removed from the registry afterwards so other tests see the built-ins only."""
    names: list[str] = []
    yield names
    for name in names:
        _ADVANTAGE_ESTIMATORS._entries.pop(name, None)


def test_user_estimator_is_used_by_name(temporary_names):
    temporary_names.append("test_sign")

    @register_advantage_estimator("test_sign")
    def sign_of_centred(rewards: torch.Tensor) -> torch.Tensor:
        """sign(r - group mean)."""
        return torch.sign(rewards - torch.nanmean(rewards, dim=1, keepdim=True))

    assert get_advantage_estimator("test_sign") is sign_of_centred
    assert list_advantage_estimators()["test_sign"] == "sign(r - group mean)."
    rewards = torch.tensor([0.0, 2.0, 3.0, 3.0, math.nan, 5.0])
    got = compute_advantages(rewards, 2, "test_sign")
    # the edge-case rules apply to user estimators too: equal group -> 0, NaN -> 0, one scorable -> 0
    assert got.tolist() == [-1.0, 1.0, 0.0, 0.0, 0.0, 0.0]


def test_user_estimator_receives_the_options_it_declares(temporary_names):
    temporary_names.append("test_options")
    seen = {}

    @register_advantage_estimator("test_options")
    def options(rewards, *, epsilon, lengths, k):
        seen.update(epsilon=epsilon, lengths=lengths, k=k)
        return rewards - rewards.mean(dim=1, keepdim=True)

    compute_advantages(torch.tensor([0.0, 1.0]), 2, "test_options", epsilon=0.5, lengths=torch.tensor([3, 4]), k=2)
    assert seen["epsilon"] == 0.5 and seen["k"] == 2
    assert seen["lengths"].tolist() == [[3, 4]]


def test_properties_are_declared_at_registration(temporary_names):
    temporary_names.append("test_properties")

    @register_advantage_estimator("test_properties", unscaled=True, group_baseline=False)
    def centred_on_batch(rewards, *, lengths):
        return rewards - torch.nanmean(rewards)

    assert estimator_properties("test_properties") == EstimatorProperties(
        needs_lengths=True, unscaled=True, group_baseline=False
    )
    assert estimator_properties("grpo") == EstimatorProperties()
    unscaled = {name for name in ESTIMATORS if estimator_properties(name).unscaled}
    assert unscaled == {"dr_grpo", "rloo", "gpg", "opo"}
    assert {name for name in ESTIMATORS if estimator_properties(name).needs_lengths} == {"opo", "reinforce_pp"}
    assert {name for name in ESTIMATORS if not estimator_properties(name).group_baseline} == {"reinforce_pp"}
    with pytest.raises(ValueError, match="no_such_estimator.*Valid choices"):
        estimator_properties("no_such_estimator")


def test_unknown_estimator_lists_valid_choices():
    with pytest.raises(ValueError, match="no_such_estimator") as error:
        compute_advantages(torch.tensor([0.0, 1.0]), 2, "no_such_estimator")
    for name in ESTIMATORS:
        assert name in str(error.value)


def test_duplicate_registration_fails_unless_override(temporary_names):
    temporary_names.append("test_duplicate")
    register_advantage_estimator("test_duplicate")(lambda rewards: rewards * 0)
    with pytest.raises(ValueError, match=r"test_duplicate.*override=True"):
        register_advantage_estimator("test_duplicate")(lambda rewards: rewards * 1)

    def doubled(rewards):
        return 2 * (rewards - rewards.mean(dim=1, keepdim=True))

    register_advantage_estimator("test_duplicate", override=True)(doubled)
    assert compute_advantages(torch.tensor([0.0, 1.0]), 2, "test_duplicate").tolist() == [-1.0, 1.0]


def test_builtin_cannot_be_replaced_silently():
    with pytest.raises(ValueError, match="grpo"):
        register_advantage_estimator("grpo")(lambda rewards: rewards)
    assert get_advantage_estimator("grpo").__name__ == "grpo"


def test_registry_fixture_left_only_builtins():
    assert set(list_advantage_estimators()) == set(ESTIMATORS)


def test_bad_shapes_fail_clearly():
    with pytest.raises(ValueError, match="1-D"):
        compute_advantages(torch.zeros(2, 2), 2)
    with pytest.raises(ValueError, match=r"group_size=3.*4"):
        compute_advantages(torch.zeros(4), 3)


# --- 5. metrics ---


def test_advantage_metrics_hand_computed():
    advantages = torch.tensor([1.0, -1.0, 0.0, 0.0, 2.0, -2.0])
    metrics = advantage_metrics(advantages, group_size=2)
    # mean 0; Bessel std sqrt((1 + 1 + 0 + 0 + 4 + 4) / 5) = sqrt(2); one of three groups all zero
    assert metrics["advantages/mean"] == 0.0
    assert metrics["advantages/std"] == pytest.approx(math.sqrt(2), rel=1e-7)
    assert metrics["advantages/max_abs"] == 2.0
    assert metrics["frac_zero_advantage_groups"] == pytest.approx(1 / 3, rel=1e-7)


def test_advantage_metrics_uneven_values():
    advantages = torch.tensor([0.5, -3.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0])
    metrics = advantage_metrics(advantages, group_size=4)
    values = [0.5, -3.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0]
    mean = sum(values) / 8  # -1.5 / 8
    std = math.sqrt(sum((v - mean) ** 2 for v in values) / 7)
    assert metrics["advantages/mean"] == pytest.approx(mean, rel=1e-7)
    assert metrics["advantages/std"] == pytest.approx(std, rel=1e-6)
    assert metrics["advantages/max_abs"] == 3.0
    assert metrics["frac_zero_advantage_groups"] == 0.0
    assert advantage_metrics(torch.zeros(8), 4)["frac_zero_advantage_groups"] == 1.0


def test_advantage_metrics_single_value():
    metrics = advantage_metrics(torch.tensor([0.25]), group_size=1)
    assert metrics == {
        "advantages/mean": 0.25,
        "advantages/std": 0.0,
        "advantages/max_abs": 0.25,
        "frac_zero_advantage_groups": 0.0,
    }


# --- 6. clipping ---


def test_clip_advantages_clamps_and_counts_the_scorable_completions_clipped():
    advantages = torch.tensor([2.5, -3.0, 1.0, -1.0, 0.5, 0.0])
    scorable = torch.tensor([True, True, True, True, True, False])
    clipped, share = clip_advantages(advantages, 1.0, scorable)
    assert clipped.tolist() == [1.0, -1.0, 1.0, -1.0, 0.5, 0.0]
    assert share == 2 / 5  # |A| = 1.0 exactly is not clipped; the unscorable row is not counted
    assert clip_advantages(torch.zeros(2), 1.0, torch.tensor([False, False]))[1] == 0.0
