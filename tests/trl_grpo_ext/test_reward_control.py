"""Null-reward controls: the batch's rewards moved to other completions (a permutation, or draws with replacement),
the same on every process and on resume, and the trainer training on exactly those rewards."""

from __future__ import annotations

import pytest
import torch
from trainer_helpers import make_config, train

from trl_grpo_ext import GRPOExtConfig, GRPOExtTrainer
from trl_grpo_ext.trainer.advantages import compute_advantages
from trl_grpo_ext.trainer.reward_control import control_generator, control_rewards


def batch() -> torch.Tensor:
    # two reward functions: each row must move whole
    return torch.tensor([[float(i), 10.0 * i] for i in range(16)])


def test_shuffled_is_a_permutation_of_whole_rows():
    rewards = batch()
    moved = control_rewards(rewards, "shuffled", control_generator(0, 3, 0))
    assert sorted(moved[:, 0].tolist()) == rewards[:, 0].tolist()  # the same multiset of rewards
    assert torch.equal(moved[:, 1], 10.0 * moved[:, 0])  # each completion's rewards stay together
    assert not torch.equal(moved, rewards)


def test_random_draws_rows_of_the_batch_with_replacement():
    rewards = batch()
    moved = control_rewards(rewards, "random", control_generator(0, 3, 0))
    assert set(moved[:, 0].tolist()) <= set(rewards[:, 0].tolist())
    assert torch.equal(moved[:, 1], 10.0 * moved[:, 0])
    assert len(set(moved[:, 0].tolist())) < 16  # 16 draws from 16 rows repeat one with probability 1 - 16!/16**16


def test_random_control_of_0_1_rewards_is_a_bernoulli_at_the_batch_pass_rate():
    rewards = torch.tensor([[1.0]] * 300 + [[0.0]] * 700)
    means = [control_rewards(rewards, "random", control_generator(0, step, 0)).mean().item() for step in range(200)]
    # mean of 200 batch means of 1,000 Bernoulli(0.3) draws: 0.3 with standard error sqrt(0.21 / 200000) = 0.001
    assert sum(means) / len(means) == pytest.approx(0.3, abs=0.005)


def test_the_draw_is_fixed_by_seed_step_and_batch():
    rewards = batch()
    first = control_rewards(rewards, "shuffled", control_generator(0, 3, 0))
    assert torch.equal(first, control_rewards(rewards, "shuffled", control_generator(0, 3, 0)))
    others = [control_generator(1, 3, 0), control_generator(0, 4, 0), control_generator(0, 3, 1)]
    assert all(not torch.equal(first, control_rewards(rewards, "shuffled", g)) for g in others)


def test_unknown_control_names_the_choices():
    with pytest.raises(ValueError, match="reward_control='shufled' is not valid.*shuffled, random"):
        GRPOExtConfig(output_dir="out", reward_control="shufled")


def test_the_trainer_trains_on_the_controlled_rewards(tiny_model_dir, tmp_path):
    produced = []

    def digit_count(completions, **kwargs):
        scores = [float(sum(ch.isdigit() for ch in text)) for text in completions]
        produced.append(scores)
        return scores

    config = make_config(GRPOExtConfig, tmp_path / "out", max_steps=2, reward_control="shuffled")
    trainer = train(GRPOExtTrainer, config, tiny_model_dir, [digit_count])
    step, index = trainer._control_batch
    true = torch.tensor(produced[-1])[:, None]
    expected = control_rewards(true, "shuffled", control_generator(config.seed, step, index))[:, 0]
    (logged,) = trainer._logs["rewards"].values()
    trained = torch.tensor(list(trainer._logs["advantages"]))
    torch.testing.assert_close(torch.tensor(list(logged)), expected, rtol=0, atol=0)
    torch.testing.assert_close(trained, compute_advantages(expected, group_size=4), rtol=0, atol=0)
    true_means = [
        e["reward_control/true_reward"] for e in trainer.state.log_history if "reward_control/true_reward" in e
    ]
    assert true_means[-1] == pytest.approx(true.mean().item())
