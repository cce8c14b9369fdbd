"""`PromptRounds` alone, without a trainer or a model: its inputs are a prompt stream, rows, settings, an accelerator
and the trainer's functions, here stand-ins. Rows with an even number are solved by every completion (no signal);
odd rows get rewards 0, 1, 0, 1 (signal). The trainer's own runs are in test_dynamic_sampling.py and
test_retire_prompts.py."""

from __future__ import annotations

from collections import defaultdict
from types import SimpleNamespace

import pytest
import torch

from trl_grpo_ext.trainer.advantages import compute_advantages
from trl_grpo_ext.trainer.prompt_rounds import PromptRounds, build_prompt_stream
from trl_grpo_ext.trainer.prompt_stream import PromptStream

SIZE = 4  # completions per prompt
ROWS = [{"row": i} for i in range(16)]


class OneProcess:
    num_processes, process_index = 1, 0

    @staticmethod
    def gather(value):
        return value

    @staticmethod
    def pad_across_processes(value, **kwargs):
        return value


def settings(**overrides):
    values = dict(
        num_generations=SIZE, generation_batch_size=3 * SIZE, dynamic_sampling=True, max_generation_rounds=8,
        advantage_estimator="grpo", advantage_epsilon=1e-4, advantage_std="unbiased", pass_at_k=1,
        retire_solved_after=None, data_seed=None, seed=0, prompt_sampling="uniform",
    )  # fmt: skip
    values.update(overrides)
    uses_stream = values["dynamic_sampling"] or values["retire_solved_after"] is not None
    return SimpleNamespace(**values, uses_prompt_stream=uses_stream or values["prompt_sampling"] != "uniform")


def score(inputs):
    """Stock's output for these inputs: a completion of length 2 + row % 3 per row, and the rewards."""
    rows = [item["row"] for item in inputs]
    rewards = torch.tensor([1.0 if row % 2 == 0 else float(i % 2) for i, row in enumerate(rows)]).unsqueeze(1)
    lengths = torch.tensor([2 + row % 3 for row in rows])
    width = int(lengths.max())
    output = {
        "prompt_ids": torch.tensor(rows).unsqueeze(1).repeat(1, 2),
        "prompt_mask": torch.ones(len(rows), 2, dtype=torch.long),
        "completion_ids": torch.arange(width).repeat(len(rows), 1),
        "completion_mask": (torch.arange(width).unsqueeze(0) < lengths.unsqueeze(1)).long(),
        "advantages": torch.full((len(rows),), 99.0),  # stock's, recomputed
    }
    return output, rewards, None


def score_with_a_tool_result(inputs):
    """`score`, with each completion's second token marked as a tool result (tool_mask 0), as TRL's tool loop marks
    the tokens it inserts."""
    output, rewards, penalty = score(inputs)
    output["tool_mask"] = torch.ones_like(output["completion_mask"])
    output["tool_mask"][:, 1] = 0
    return output, rewards, penalty


def make_rounds(args, stream=None, shuffle=False, scorer=score):
    log = SimpleNamespace(metrics=defaultdict(list), advantages=[], table=None, rounds=[], lengths=[])

    def scored(inputs):
        log.rounds.append(sorted({item["row"] for item in inputs}))
        return scorer(inputs)

    def advantages(rewards, size, lengths):
        log.lengths.append(lengths)
        return compute_advantages(rewards, size, args.advantage_estimator, 1e-4, lengths)

    rounds = PromptRounds(
        stream or PromptStream(len(ROWS), 0, shuffle, args.retire_solved_after), ROWS, args, OneProcess(),
        torch.ones(1), pad_token_id=0, score=scored,
        advantages=advantages,
        log_metric=lambda name, value: log.metrics[name].append(value),
        log_advantages=lambda advantages, size: log.advantages.append(advantages),
        show_advantages=lambda values: setattr(log, "table", values),
    )  # fmt: skip
    return rounds, log


def test_dynamic_sampling_keeps_drawing_until_the_informative_groups_fill_the_batch():
    rounds, log = make_rounds(settings())
    batch = rounds.batch()
    assert log.rounds == [[0, 1, 2], [3, 4, 5]]  # the stream in order, 3 prompts a round, until 3 odd rows
    assert batch["prompt_ids"][::SIZE, 0].tolist() == [1, 3, 5]  # the first three odd rows: the informative ones
    assert (batch["advantages"].view(3, SIZE) != 0).all() and batch["advantages"].sum().abs() < 1e-5
    assert batch["completion_ids"].size(1) == 4 and batch["num_items_in_batch"] == batch["completion_mask"].sum()
    assert dict(log.metrics) == {
        "dynamic_sampling/generation_rounds": [2.0],
        "dynamic_sampling/kept_group_fraction": [3 / 6],
        "dynamic_sampling/capped": [0.0],
    }
    assert rounds.stream.completions_generated == 2 * 3 * SIZE and len(log.advantages[0]) == 3 * SIZE
    table = torch.tensor(log.table).view(3, SIZE)  # the last round's rows 3, 4, 5: row 4 was not trained on
    assert (table[0] != 0).all() and (table[1] == 0).all() and (table[2] != 0).all()
    assert rounds.counts() == {"num_completions_generated": [24.0]}


def test_a_capped_batch_is_completed_by_masked_fillers():
    rounds, log = make_rounds(settings(max_generation_rounds=1))
    batch = rounds.batch()
    assert batch["prompt_ids"][::SIZE, 0].tolist() == [1, 0, 2]  # the informative row, then the rest of the round
    assert batch["completion_mask"][SIZE:].sum() == 0 and (batch["advantages"][SIZE:] == 0).all()
    assert batch["num_items_in_batch"] == batch["completion_mask"][:SIZE].sum()
    assert log.metrics["dynamic_sampling/capped"] == [1.0] and len(log.advantages[0]) == SIZE


def test_without_dynamic_sampling_one_round_is_the_batch_and_solved_prompts_retire():
    args = settings(dynamic_sampling=False, retire_solved_after=1)
    rounds, log = make_rounds(args)
    batch = rounds.batch()
    assert log.rounds == [[0, 1, 2]] and batch["prompt_ids"][::SIZE, 0].tolist() == [0, 1, 2]
    assert (batch["advantages"][:SIZE] == 0).all() and not log.metrics  # no sampling metrics without it
    rounds.stream.on_step_end(args, SimpleNamespace(global_step=1), SimpleNamespace(should_training_stop=False))
    assert rounds.counts() == {
        "num_completions_generated": [12.0],
        "prompts/retired": [2.0],  # rows 0 and 2
        "prompts/active": [14.0],
    }
    rounds.batch()
    assert log.rounds[-1] == [3, 4, 5]


def test_an_estimator_that_takes_lengths_gets_the_tokens_the_policy_generated():
    rounds, log = make_rounds(
        settings(dynamic_sampling=False, retire_solved_after=1, advantage_estimator="reinforce_pp"),
        scorer=score_with_a_tool_result,
    )
    batch = rounds.batch()
    # rows 0, 1, 2: completions of 2 + row % 3 tokens, the second of them a tool result
    assert log.lengths[0].tolist() == [1] * SIZE + [2] * SIZE + [3] * SIZE
    assert batch["num_items_in_batch"] == 6 * SIZE  # the loss skips the tool results too


def test_the_stream_resumes_from_the_saved_state():
    rounds, _ = make_rounds(settings(dynamic_sampling=False, retire_solved_after=1))
    rounds.batch()
    rounds.stream.on_step_end(None, SimpleNamespace(global_step=1), SimpleNamespace(should_training_stop=False))
    saved = {PromptStream.__name__: rounds.stream.state()}
    resumed, log = make_rounds(settings(dynamic_sampling=False, retire_solved_after=1))
    fresh = PromptStream(len(ROWS), 0, False, 1)
    resumed.restore([object(), fresh], saved)
    assert resumed.stream is fresh and fresh.state() == rounds.stream.state()
    resumed.batch()
    assert log.rounds == [[3, 4, 5]]


def test_the_stream_needs_a_map_style_dataset():
    assert build_prompt_stream(settings(dynamic_sampling=False), ROWS, True) is None
    with pytest.raises(ValueError, match="need a map-style datasets.Dataset as train_dataset, got list"):
        build_prompt_stream(settings(), ROWS, True)
