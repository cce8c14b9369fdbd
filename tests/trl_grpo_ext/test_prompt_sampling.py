"""prompt_sampling="pass_rate": prompts drawn with weight p (1 - p) of their running pass rate, retired prompts never,
composed with dynamic sampling and retirement, and a resumed run draws with the same weights as an uninterrupted one."""

from __future__ import annotations

from collections import Counter

import torch
from sampling_helpers import solved_when_even_reward
from trainer_helpers import parameters

from trl_grpo_ext.trainer.prompt_stream import PromptStream, pass_rate_weights

from .test_retire_prompts import build, full_and_resumed_runs, is_solved, logged, replay_retirements

STOP = type("Control", (), {"should_training_stop": False})


def test_pass_rate_weights_hand_computed():
    passed = torch.tensor([0, 4, 0, 2, 16])
    tried = torch.tensor([0, 4, 8, 4, 16])
    # p = (passed + 1) / (tried + 2): 1/2, 5/6, 1/10, 1/2, 17/18
    expected = [1 / 4, 5 / 36, 9 / 100, 1 / 4, 17 / 324]
    torch.testing.assert_close(pass_rate_weights(passed, tried), torch.tensor(expected, dtype=torch.float64))


def test_rows_are_drawn_in_proportion_to_their_weights_and_retired_rows_never():
    stream = PromptStream(4, seed=5, sampling="pass_rate", retire_solved_after=1)
    stream.record([0, 1, 2, 3], [True, False, False, False], completions=32, passed=[8, 8, 0, 4])
    stream.on_step_end(None, None, STOP())
    weights = stream.weights()
    # row 0 retired; rows 1, 2, 3: p = 9/10, 1/10, 1/2 -> weights 0.09, 0.09, 0.25
    torch.testing.assert_close(weights, torch.tensor([0.0, 0.09, 0.09, 0.25], dtype=torch.float64))
    counts = Counter(row for _ in range(4000) for row in stream.draw(1))
    assert 0 not in counts
    for row in (1, 2, 3):
        assert abs(counts[row] / 4000 - weights[row].item() / weights.sum().item()) < 0.02, counts
    rows = stream.draw(5)  # more than the 3 active rows: each active row once, then again
    assert sorted(rows[:3]) == [1, 2, 3] and 0 not in rows


def test_a_restored_stream_has_the_same_weights_and_draws():
    stream = PromptStream(10, seed=2, sampling="pass_rate")
    for _ in range(3):
        rows = stream.draw(4)
        stream.record(rows, [False] * 4, completions=16, passed=[row % 5 for row in rows])
    copy = PromptStream(10, seed=2, sampling="pass_rate")
    copy.restore(stream.state())
    assert torch.equal(copy.weights(), stream.weights())
    assert [copy.draw(4) for _ in range(5)] == [stream.draw(4) for _ in range(5)]


def replay_pass_counts(rounds, group_size=4) -> tuple[dict[int, int], dict[int, int]]:
    """Each row's completions and full-mark completions, from the rows drawn and the reward's rule, independently."""
    passed, tried = Counter(), Counter()
    for _, rows in rounds:
        for row in rows:
            tried[row] += group_size
            passed[row] += group_size if is_solved(row) else group_size // 2  # 1, 0 alternating otherwise
    return dict(passed), dict(tried)


def test_pass_rate_sampling_composes_with_dynamic_sampling_and_retirement(tiny_model_dir, tmp_path):
    trainer = build(
        tiny_model_dir,
        tmp_path / "out",
        solved_when_even_reward,
        prompt_sampling="pass_rate",
        dynamic_sampling=True,
        retire_solved_after=2,
        max_steps=6,
    )
    trainer.train()
    stream = trainer._prompt_stream
    per_step = replay_retirements(trainer.rounds, after=2, steps=6)  # no retired row is drawn again
    assert stream.retired == per_step[-1]
    assert (stream.passed, stream.tried) == replay_pass_counts(trainer.rounds)
    assert logged(trainer, "prompts/seen")[-1] == float(len(stream.tried))
    assert set(logged(trainer, "frac_zero_advantage_groups")) == {0.0}  # dynamic sampling still filters


def test_a_resumed_run_samples_with_the_weights_of_the_uninterrupted_one(tiny_model_dir, tmp_path):
    full, resumed = full_and_resumed_runs(tiny_model_dir, tmp_path, prompt_sampling="pass_rate", retire_solved_after=3)
    assert torch.equal(resumed._prompt_stream.weights(), full._prompt_stream.weights())
    assert len(set(full._prompt_stream.weights().tolist())) > 1  # the premise: the weights are not uniform
    for name, value in parameters(full).items():
        assert torch.equal(parameters(resumed)[name], value), name
