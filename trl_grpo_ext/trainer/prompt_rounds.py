"""`PromptRounds`: the training batches of dynamic sampling, prompt retirement and pass-rate sampling, a component of
`GRPOExtTrainer`.

With any of them on, each training batch is built from generation rounds of prompts drawn from a `PromptStream`: one
round without dynamic sampling, and with it as many as it takes (up to `max_generation_rounds`) to fill the batch
with groups that carry signal. Each round is stock's `_generate_and_score_completions` on those prompts, its fields
gathered from every process; the batch is assembled from the gathered rounds by the pure functions of
`dynamic_sampling.py`, identically on every process, and each process keeps its slice, as stock does.

Its inputs are explicit, so that it runs without a trainer (tests/trl_grpo_ext/test_prompt_rounds.py): the stream and
the dataset whose rows it draws, the settings (`GRPOExtConfig`), the accelerator (this process's index, the number of
processes, gathering and padding across them), the reward weights and the pad token, and what only the trainer can
do, as functions: generate and score a list of inputs (`score`), compute advantages, log.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import torch
from datasets import Dataset

from .advantages import estimator_properties
from .config import GRPOExtConfig
from .dynamic_sampling import (
    LEFT_PADDED,
    RECOMPUTED_FIELDS,
    assemble_batch,
    combined_rewards,
    fill_groups,
    padding_value,
    pick_groups,
    round_informative_groups,
    trained_token_mask,
)
from .prompt_stream import PromptStream

logger = logging.getLogger(__name__)

# (stock's output for this process's inputs, the rewards of every function gathered from all processes (N, F), and
# with the KL in the reward, the KL penalty gathered (N,), else None)
Scored = tuple[dict, torch.Tensor, torch.Tensor | None]


def build_prompt_stream(args: GRPOExtConfig, train_dataset: Any, shuffle: bool) -> PromptStream | None:
    """The stream the batches are drawn from, or None when neither dynamic sampling nor retirement is on."""
    if not args.uses_prompt_stream:
        return None
    if not isinstance(train_dataset, Dataset):
        raise ValueError(
            "dynamic_sampling, retire_solved_after and prompt_sampling='pass_rate' draw prompts by dataset row: they "
            f"need a map-style datasets.Dataset as train_dataset, got {type(train_dataset).__name__}."
        )
    seed = args.data_seed if args.data_seed is not None else args.seed
    return PromptStream(len(train_dataset), seed, shuffle, args.retire_solved_after, sampling=args.prompt_sampling)


class PromptRounds:
    """Training batches from generation rounds of the prompt stream.

    `score(inputs)`: generate and score this process's share of a round (the trainer: stock's
    `_generate_and_score_completions` with its reward hooks), returning `Scored`. `advantages(rewards, group_size,
    lengths)`: the selected estimator. `log_metric(name, value)`: a training metric. `log_advantages(advantages,
    group_size)`: the advantage metrics of the groups trained on. `show_advantages(values)`: the advantages of the
    last round, for the completions table.
    """

    def __init__(
        self,
        stream: PromptStream,
        dataset: Any,
        args: GRPOExtConfig,
        accelerator: Any,
        reward_weights: torch.Tensor,
        pad_token_id: int,
        *,
        score: Callable[[list[dict]], Scored],
        advantages: Callable[[torch.Tensor, int, torch.Tensor | None], torch.Tensor],
        log_metric: Callable[[str, float], None],
        log_advantages: Callable[[torch.Tensor, int], None],
        show_advantages: Callable[[list[float]], None],
    ):
        self.stream, self.dataset, self.args, self.accelerator = stream, dataset, args, accelerator
        self.reward_weights, self.pad_token_id = reward_weights, pad_token_id
        self.score, self.advantages, self.log_metric = score, advantages, log_metric
        self.log_advantages, self.show_advantages = log_advantages, show_advantages

    def restore(self, callbacks: list, saved_states: dict) -> None:
        """The prompt stream continues where the checkpoint left it (position, retirements, completions generated).
        `callbacks`: the trainer's, `saved_states`: its state's `stateful_callbacks`."""
        # Restoring callback states (restore_callback_states_from_checkpoint) replaces the callback object.
        self.stream = next(cb for cb in callbacks if isinstance(cb, PromptStream))
        saved = saved_states.get(PromptStream.__name__)
        if saved:
            self.stream.restore(saved)
        else:
            logger.warning(
                "The checkpoint has no prompt stream state: prompts are drawn from the start of the stream."
            )
            saved_states[PromptStream.__name__] = self.stream.state()

    def batch(self) -> dict:
        """One training batch, from rounds of `generation_batch_size / num_generations` prompts of the stream.

        Without dynamic sampling one round is the batch. With it, rounds continue until the informative groups
        (non-zero advantages, `dynamic_sampling.informative_groups`) fill a batch or `max_generation_rounds` is
        reached; then the batch is the informative groups so far, completed by masked filler groups."""
        args = self.args
        size = args.num_generations
        target = args.generation_batch_size // size
        max_rounds = args.max_generation_rounds if args.dynamic_sampling else 1
        rounds, informative = [], []
        while len(rounds) < max_rounds:
            rows = self.stream.draw(target)
            rounds.append(self.generation_round(rows))
            task_rewards = combined_rewards(rounds[-1]["rewards_per_func"], self.reward_weights)
            full_marks = (rounds[-1]["rewards_per_func"] == 1.0).all(dim=1).view(target, -1)
            self.stream.record(
                rows, full_marks.all(dim=1).tolist(), completions=len(rows) * size, passed=full_marks.sum(1).tolist()
            )
            if not args.dynamic_sampling:
                informative.append(torch.ones(target, dtype=torch.bool))
                break
            informative.append(self.informative_groups(task_rewards, self.lengths(rounds[-1])))
            if sum(int(mask.sum()) for mask in informative) >= target:
                break
        picks = pick_groups(informative, target)
        fillers = fill_groups(informative, picks, target)
        batch, is_filler = assemble_batch(rounds, picks, fillers, size, self.pad_token_id)
        self.log_sampling_metrics(len(rounds), len(picks), target)
        return self.local_slice_with_advantages(batch, is_filler, last_round=(len(rounds) - 1, picks + fillers))

    def lengths(self, batch: dict) -> torch.Tensor | None:
        """The tokens the policy generated in each completion of a gathered batch (`trained_token_mask`), for an
        estimator that declares `lengths`; else None."""
        if not estimator_properties(self.args.advantage_estimator).needs_lengths:
            return None
        return trained_token_mask(batch).sum(dim=1)

    def informative_groups(self, rewards: torch.Tensor, lengths: torch.Tensor | None) -> torch.Tensor:
        return round_informative_groups(
            rewards,
            self.args.num_generations,
            self.args.advantage_estimator,
            lengths,
            epsilon=self.args.advantage_epsilon,
            unbiased_std=self.args.advantage_std == "unbiased",
            k=self.args.pass_at_k,
        ).cpu()

    def generation_round(self, rows: list[int]) -> dict:
        """Generate and score `num_generations` completions of each row, laid out as stock lays out a generation
        batch (each process holds a contiguous slice); return every batch field gathered from all processes."""
        prompts = [row for row in rows for _ in range(self.args.num_generations)]
        num_local = len(prompts) // self.accelerator.num_processes
        start = self.accelerator.process_index * num_local
        inputs = [dict(self.dataset[row]) for row in prompts[start : start + num_local]]
        output, rewards_per_func, penalty = self.score(inputs)
        gathered = {"rewards_per_func": rewards_per_func}
        if penalty is not None:
            gathered["kl_penalty"] = penalty
        for field, value in output.items():
            if field in RECOMPUTED_FIELDS:
                continue
            value = self.accelerator.pad_across_processes(
                value, dim=1, pad_index=padding_value(field, self.pad_token_id), pad_first=field in LEFT_PADDED
            )
            gathered[field] = self.accelerator.gather(value)
        return gathered

    def local_slice_with_advantages(self, batch: dict, is_filler: torch.Tensor, last_round: tuple) -> dict:
        """This process's slice of the assembled batch, with the advantages of the whole batch and its loss items."""
        size = self.args.num_generations
        rewards = combined_rewards(batch.pop("rewards_per_func"), self.reward_weights)
        penalty = batch.pop("kl_penalty", None)
        advantages = self.advantages(rewards if penalty is None else rewards - penalty, size, self.lengths(batch))
        trained = advantages[~is_filler]
        if trained.numel():
            self.log_advantages(trained, size)
        loss_mask = trained_token_mask(batch)
        num_local = batch["completion_mask"].size(0) // self.accelerator.num_processes
        start = self.accelerator.process_index * num_local
        output = {field: value[start : start + num_local] for field, value in batch.items()}
        output["advantages"] = advantages[start : start + num_local]
        output["num_items_in_batch"] = loss_mask.sum()

        # The completions table holds the last round: show each row's advantage trained on (0 if not trained on).
        round_index, groups = last_round
        table = torch.zeros(self.args.generation_batch_size)
        for position, (r, g) in enumerate(groups):
            if r == round_index and not is_filler[position * size]:
                table[g * size : (g + 1) * size] = advantages[position * size : (position + 1) * size].cpu()
        self.show_advantages(table.tolist())
        return output

    def log_sampling_metrics(self, rounds: int, kept: int, target: int) -> None:
        if self.args.dynamic_sampling:
            self.log_metric("dynamic_sampling/generation_rounds", float(rounds))
            self.log_metric("dynamic_sampling/kept_group_fraction", kept / (rounds * target))
            self.log_metric("dynamic_sampling/capped", float(kept < target))

    def counts(self) -> dict[str, list[float]]:
        """The stream's current counts, logged as they are at each log (not averaged over the interval)."""
        counts = {"num_completions_generated": [float(self.stream.completions_generated)]}
        if self.args.retire_solved_after is not None:
            counts["prompts/retired"] = [float(len(self.stream.retired))]
            counts["prompts/active"] = [float(self.stream.active)]
        if self.args.prompt_sampling == "pass_rate":
            counts["prompts/seen"] = [float(len(self.stream.tried))]
        return counts
