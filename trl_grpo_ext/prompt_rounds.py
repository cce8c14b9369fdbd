"""`PromptStreamRounds`: the part of `GRPOExtTrainer` that runs dynamic sampling and prompt retirement.

With either on, each training batch is built from generation rounds of prompts drawn from a `PromptStream`: one
round without dynamic sampling, and with it as many as it takes (up to `max_generation_rounds`) to fill the batch
with groups that carry signal. Each round is stock's `_generate_and_score_completions` on those prompts, its fields
gathered from every process; the batch is assembled from the gathered rounds by the pure functions of
`dynamic_sampling.py`, identically on every process, and each process keeps its slice, as stock does.
"""

from __future__ import annotations

import logging

import torch
from datasets import Dataset
from trl import GRPOTrainer

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
)
from .prompt_stream import PromptStream

logger = logging.getLogger(__name__)


class PromptStreamRounds(GRPOTrainer):
    """Generation rounds from the prompt stream. Mixed into `GRPOExtTrainer`, whose reward hooks it uses
    (`_overlapping_rewards`, `_task_rewards_and_penalty`, `_advantages`, `_replace_table_advantages`)."""

    _prompt_stream: PromptStream | None = None

    def _build_prompt_stream(self, args: GRPOExtConfig) -> PromptStream | None:
        if not args.dynamic_sampling and args.retire_solved_after is None:
            return None
        if not isinstance(self.train_dataset, Dataset):
            raise ValueError(
                "dynamic_sampling and retire_solved_after draw prompts by dataset row: they need a map-style "
                f"datasets.Dataset as train_dataset, got {type(self.train_dataset).__name__}."
            )
        seed = args.data_seed if args.data_seed is not None else args.seed
        return PromptStream(len(self.train_dataset), seed, self.shuffle_dataset, args.retire_solved_after)

    def _load_prompt_stream_state(self) -> None:
        """The prompt stream continues where the checkpoint left it (position, retirements, completions generated)."""
        if self._prompt_stream is None:
            return
        # Restoring callback states (restore_callback_states_from_checkpoint) replaces the callback object.
        self._prompt_stream = next(cb for cb in self.callback_handler.callbacks if isinstance(cb, PromptStream))
        saved = self.state.stateful_callbacks.get(PromptStream.__name__)
        if saved:
            self._prompt_stream.restore(saved)
        else:
            logger.warning(
                "The checkpoint has no prompt stream state: prompts are drawn from the start of the stream."
            )
            self.state.stateful_callbacks[PromptStream.__name__] = self._prompt_stream.state()

    def _generate_from_prompt_stream(self) -> dict:
        """One training batch, from rounds of `generation_batch_size / num_generations` prompts of the stream.

        Without dynamic sampling one round is the batch. With it, rounds continue until the informative groups
        (non-zero advantages, `dynamic_sampling.informative_groups`) fill a batch or `max_generation_rounds` is
        reached; then the batch is the informative groups so far, completed by masked filler groups."""
        size = self.num_generations
        target = self.args.generation_batch_size // size
        max_rounds = self.args.max_generation_rounds if self.args.dynamic_sampling else 1
        rounds, informative = [], []
        while len(rounds) < max_rounds:
            rows = self._prompt_stream.draw(target)
            rounds.append(self._generation_round(rows))
            task_rewards = combined_rewards(rounds[-1]["rewards_per_func"], self.reward_weights)
            solved = (rounds[-1]["rewards_per_func"] == 1.0).view(target, -1).all(dim=1)
            self._prompt_stream.record(rows, solved.tolist(), completions=len(rows) * size)
            if not self.args.dynamic_sampling:
                informative.append(torch.ones(target, dtype=torch.bool))
                break
            lengths = rounds[-1]["completion_mask"].sum(dim=1) if self.args.advantage_estimator == "opo" else None
            informative.append(self._round_informative_groups(task_rewards, lengths))
            if sum(int(mask.sum()) for mask in informative) >= target:
                break
        picks = pick_groups(informative, target)
        fillers = fill_groups(informative, picks, target)
        batch, is_filler = assemble_batch(rounds, picks, fillers, size, self._tokenizer.pad_token_id)
        self._log_sampling_metrics(len(rounds), len(picks), target)
        return self._local_slice_with_advantages(batch, is_filler, last_round=(len(rounds) - 1, picks + fillers))

    def _round_informative_groups(self, rewards: torch.Tensor, lengths: torch.Tensor | None) -> torch.Tensor:
        return round_informative_groups(
            rewards,
            self.num_generations,
            self.args.advantage_estimator,
            lengths,
            epsilon=self.args.advantage_epsilon,
            unbiased_std=self.args.advantage_std == "unbiased",
            k=self.args.pass_at_k,
        ).cpu()

    def _generation_round(self, rows: list[int]) -> dict:
        """Generate and score `num_generations` completions of each row, laid out as stock lays out a generation
        batch (each process holds a contiguous slice); return every batch field gathered from all processes."""
        prompts = [row for row in rows for _ in range(self.num_generations)]
        num_local = len(prompts) // self.accelerator.num_processes
        start = self.accelerator.process_index * num_local
        inputs = [dict(self.train_dataset[row]) for row in prompts[start : start + num_local]]
        with self._overlapping_rewards(inputs):
            output = super()._generate_and_score_completions(inputs)
        rewards, penalty = self._task_rewards_and_penalty(output, "train")
        gathered = {"rewards_per_func": self._gathered_rewards_per_func}
        if penalty is not None:
            gathered["kl_penalty"] = penalty
        pad_token_id = self._tokenizer.pad_token_id
        for field, value in output.items():
            if field in RECOMPUTED_FIELDS:
                continue
            value = self.accelerator.pad_across_processes(
                value, dim=1, pad_index=padding_value(field, pad_token_id), pad_first=field in LEFT_PADDED
            )
            gathered[field] = self.accelerator.gather(value)
        return gathered

    def _local_slice_with_advantages(self, batch: dict, is_filler: torch.Tensor, last_round: tuple) -> dict:
        """This process's slice of the assembled batch, with the advantages of the whole batch and its loss items."""
        size = self.num_generations
        rewards = combined_rewards(batch.pop("rewards_per_func"), self.reward_weights)
        penalty = batch.pop("kl_penalty", None)
        lengths = batch["completion_mask"].sum(dim=1) if self.args.advantage_estimator == "opo" else None
        advantages = self._advantages(rewards if penalty is None else rewards - penalty, size, lengths)
        trained = advantages[~is_filler]
        if trained.numel():
            self._log_advantage_metrics(trained, size, "train")
        loss_mask = batch["completion_mask"] * batch.get("tool_mask", 1)
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
        self._replace_table_advantages(table.tolist())
        return output

    def _log_sampling_metrics(self, rounds: int, kept: int, target: int) -> None:
        metrics = self._metrics["train"]
        if self.args.dynamic_sampling:
            metrics["dynamic_sampling/generation_rounds"].append(float(rounds))
            metrics["dynamic_sampling/kept_group_fraction"].append(kept / (rounds * target))
            metrics["dynamic_sampling/capped"].append(float(kept < target))

    def log(self, logs: dict[str, float], start_time: float | None = None) -> None:
        if self._prompt_stream is not None and self.model.training:  # current counts, not averages over the interval
            stream = self._prompt_stream
            self._metrics["train"]["num_completions_generated"] = [float(stream.completions_generated)]
            if self.args.retire_solved_after is not None:
                self._metrics["train"]["prompts/retired"] = [float(len(stream.retired))]
                self._metrics["train"]["prompts/active"] = [float(stream.active)]
        super().log(logs, start_time)
