"""retire_solved_after: a prompt whose completions all scored 1.0 in each of its last N appearances is not drawn
again, the counts are logged, retirements survive a resume, and training ends cleanly once every prompt is retired."""

from __future__ import annotations

import logging

import pytest
import torch
from sampling_helpers import always_solved_reward, first_operand, solved_when_even_reward
from trainer_helpers import make_config, parameters, prompt_dataset

from trl_grpo_ext import GRPOExtConfig, GRPOExtTrainer
from trl_grpo_ext.trainer.prompt_stream import PromptStream


class RowRecordingTrainer(GRPOExtTrainer):
    """Keeps the dataset rows of each generation round, per optimizer step."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.rounds = []  # (global step at generation, rows)
        generation_round = self._prompt_rounds.generation_round

        def recording_round(rows):
            self.rounds.append((self.state.global_step, list(rows)))
            return generation_round(rows)

        self._prompt_rounds.generation_round = recording_round


def build(model_dir, output_dir, reward, **overrides):
    settings = {"per_device_train_batch_size": 8, "max_steps": 12, **overrides}
    config = make_config(GRPOExtConfig, output_dir, **settings)
    return RowRecordingTrainer(model=model_dir, reward_funcs=[reward], args=config, train_dataset=prompt_dataset())


def logged(trainer, key):
    return [entry[key] for entry in trainer.state.log_history if key in entry and "train_runtime" not in entry]


def is_solved(row: int) -> bool:
    return first_operand(prompt_dataset()[row]["prompt"]) % 2 == 0  # solved_when_even_reward


def replay_retirements(rounds, after: int, steps: int) -> list[set[int]]:
    """The retired set at the end of each step, from the rows drawn and the reward's rule, independently."""
    streaks, retired, per_step = {}, set(), []
    for step in range(steps):
        for generated_at, rows in rounds:
            if generated_at == step:
                for row in rows:
                    assert row not in retired, f"retired row {row} drawn at step {step}"
                    streaks[row] = streaks.get(row, 0) + 1 if is_solved(row) else 0
        retired |= {row for row, count in streaks.items() if count >= after}
        per_step.append(set(retired))
    return per_step


@pytest.mark.parametrize("dynamic_sampling", [False, True])
def test_prompts_solved_in_their_last_appearances_are_not_drawn_again(tiny_model_dir, tmp_path, dynamic_sampling):
    trainer = build(
        tiny_model_dir,
        tmp_path / "out",
        solved_when_even_reward,
        retire_solved_after=2,
        dynamic_sampling=dynamic_sampling,
    )
    trainer.train()
    per_step = replay_retirements(trainer.rounds, after=2, steps=12)
    assert trainer._prompt_stream.retired == per_step[-1]
    assert per_step[-1] and all(is_solved(row) for row in per_step[-1])
    # Logged after the step's end, where that step's retirements take effect.
    assert logged(trainer, "prompts/retired") == [float(len(r)) for r in per_step]
    assert logged(trainer, "prompts/active") == [16.0 - r for r in logged(trainer, "prompts/retired")]
    if dynamic_sampling:  # solved groups tie: never trained on
        assert set(logged(trainer, "frac_zero_advantage_groups")) == {0.0}


def test_training_ends_cleanly_when_every_prompt_is_retired(tiny_model_dir, tmp_path, caplog):
    trainer = build(tiny_model_dir, tmp_path / "out", always_solved_reward, retire_solved_after=1, max_steps=50)
    with caplog.at_level(logging.WARNING, logger="trl_grpo_ext.trainer.prompt_stream"):
        trainer.train()
    assert trainer.state.global_step == 8  # 2 new prompts per step, each retired after its first appearance
    assert trainer._prompt_stream.active == 0
    assert "All 16 prompts are retired" in caplog.text and "training stops at step 8" in caplog.text
    drawn = [row for _, rows in trainer.rounds for row in rows]
    assert sorted(drawn) == list(range(16))


def test_with_dynamic_sampling_a_solved_dataset_ends_after_one_step(tiny_model_dir, tmp_path):
    """Every group ties, so each step runs its 8 rounds (16 prompts) and all are retired at the step's end."""
    trainer = build(
        tiny_model_dir,
        tmp_path / "out",
        always_solved_reward,
        retire_solved_after=1,
        dynamic_sampling=True,
        max_steps=50,
    )
    trainer.train()
    assert trainer.state.global_step == 1
    assert logged(trainer, "dynamic_sampling/capped") == [1.0]


def full_and_resumed_runs(model_dir, tmp_path, **settings):
    """6 steps uninterrupted, saving at step 3, and the same run resumed from that checkpoint; checks that the resumed
    run drew the rows the uninterrupted one drew from step 3 and ends with the same stream state."""
    settings = dict(max_steps=6, save_strategy="steps", save_steps=3, **settings)
    full = build(model_dir, tmp_path / "full", solved_when_even_reward, **settings)
    full.train()
    resumed = build(model_dir, tmp_path / "resumed", solved_when_even_reward, **settings)
    resumed.train(resume_from_checkpoint=str(tmp_path / "full" / "checkpoint-3"))
    assert resumed.rounds == [entry for entry in full.rounds if entry[0] >= 3]
    assert resumed._prompt_stream.state() == full._prompt_stream.state()
    return full, resumed


def test_retirements_are_saved_and_resumed(tiny_model_dir, tmp_path):
    full, resumed = full_and_resumed_runs(tiny_model_dir, tmp_path, retire_solved_after=1)
    assert logged(resumed, "prompts/retired") == logged(full, "prompts/retired")
    assert logged(resumed, "num_completions_generated") == logged(full, "num_completions_generated")
    for name, value in parameters(full).items():
        assert torch.equal(parameters(resumed)[name], value), name


def test_prompt_stream_skips_retired_rows_and_restores_its_state():
    stream = PromptStream(6, seed=3, retire_solved_after=1)
    first = stream.draw(4)
    stream.record(first, [True, False, True, False], completions=16)
    stream.on_step_end(None, None, type("Control", (), {"should_training_stop": False})())
    assert stream.retired == {first[0], first[2]}
    copy = PromptStream(6, seed=3, retire_solved_after=1)
    copy.restore(stream.state())
    assert copy.draw(10) == stream.draw(10)
    assert not {first[0], first[2]} & set(copy.draw(10))
    with pytest.raises(ValueError, match="covers 6 dataset rows, this dataset has 7"):
        PromptStream(7, seed=3).restore(stream.state())
