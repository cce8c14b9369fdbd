"""Where the prompts of each generation round come from when `dynamic_sampling`, `retire_solved_after` or
`prompt_sampling="pass_rate"` is on.

These features need prompts the dataloader cannot give: dynamic sampling draws more prompts mid-step, retirement stops
drawing some, pass-rate sampling weighs them. `PromptStream` replaces the dataloader's prompts with its own seeded
order of dataset rows (a new permutation each epoch, as stock's sampler shuffles, or the dataset order with
`shuffle_dataset=False`) that skips retired rows; or, with `sampling="pass_rate"`, with rows drawn without replacement
with the weights of `pass_rate_weights`. The dataloader still counts the steps. Every process holds the same stream
and sees the same gathered rewards, so all draw the same rows and retire the same prompts without communicating.

Its state (position, retirement streaks, pass counts, draws, completions generated) is saved in each checkpoint's
trainer state and restored on resume.
"""

from __future__ import annotations

import logging

import numpy as np
import torch
from transformers import TrainerCallback
from transformers.trainer_callback import ExportableState

logger = logging.getLogger(__name__)


# `prompt_sampling` choices, each with the one line `trl-grpo-ext list` shows.
PROMPT_SAMPLINGS = {
    "uniform": "each epoch visits every active prompt once, in a seeded order (stock's sampler)",
    "pass_rate": "weight p (1 - p), p = (passed + 1) / (tried + 2) the prompt's running pass rate: learnability "
    "sampling (arXiv 2502.12272)",
}


def pass_rate_weights(passed: torch.Tensor, tried: torch.Tensor) -> torch.Tensor:
    """Sampling weight p (1 - p) of each prompt, p = (passed + 1) / (tried + 2) its running pass rate under Laplace's
    rule of succession (an unseen prompt has p = 1/2).

    p (1 - p) is the variance of a prompt's 0/1 reward, the "learnability" by which Foster et al. 2025 ("Learning to
    Reason at the Frontier of Learnability", arXiv 2502.12272) prioritise questions: the prompts whose groups carry the
    most signal for a group baseline weigh most, solved (p -> 1) and hopeless (p -> 0) ones less the more often they
    were tried, never 0, so a prompt the policy starts to solve is drawn again. It is also the soft form of the
    pass-rate filters of prime-rl (easy and hard pools) and ROLL (difficulty mask), which drop prompts outside a
    pass-rate band."""
    rate = (passed.to(torch.float64) + 1) / (tried.to(torch.float64) + 2)
    return rate * (1 - rate)


class PromptStream(TrainerCallback, ExportableState):
    """Seeded stream of dataset rows that skips retired prompts; a callback so that transformers saves its state."""

    def __init__(
        self,
        num_rows: int,
        seed: int,
        shuffle: bool = True,
        retire_solved_after: int | None = None,
        epoch: int = 0,
        position: int = 0,
        completions_generated: int = 0,
        streaks: dict | None = None,
        retired: list | None = None,
        sampling: str = "uniform",
        passed: dict | None = None,
        tried: dict | None = None,
        draws: int = 0,
    ):
        self.num_rows, self.seed, self.shuffle = num_rows, seed, shuffle
        self.retire_solved_after, self.sampling = retire_solved_after, sampling
        self.epoch, self.position = epoch, position
        self.completions_generated = completions_generated
        self.streaks = {int(row): count for row, count in (streaks or {}).items()}  # consecutive solved appearances
        self.retired = set(retired or ())
        self.passed = {int(row): count for row, count in (passed or {}).items()}  # completions with full marks
        self.tried = {int(row): count for row, count in (tried or {}).items()}  # completions generated
        self.draws = draws  # weighted draws so far: each one's random numbers come from (seed, draws)
        self._order = self._epoch_order()

    def state(self) -> dict:
        return {
            "args": {
                "num_rows": self.num_rows,
                "seed": self.seed,
                "shuffle": self.shuffle,
                "retire_solved_after": self.retire_solved_after,
                "epoch": self.epoch,
                "position": self.position,
                "completions_generated": self.completions_generated,
                "streaks": {str(row): count for row, count in sorted(self.streaks.items()) if count},
                "retired": sorted(self.retired),
                "sampling": self.sampling,
                "passed": {str(row): count for row, count in sorted(self.passed.items())},
                "tried": {str(row): count for row, count in sorted(self.tried.items())},
                "draws": self.draws,
            },
            "attributes": {},
        }

    def restore(self, saved: dict) -> None:
        """Continue from a checkpoint's `state()`."""
        args = saved["args"]
        if args["num_rows"] != self.num_rows:
            raise ValueError(
                f"The checkpoint's prompt stream covers {args['num_rows']} dataset rows, this dataset has "
                f"{self.num_rows}: resume with the dataset the run was started with."
            )
        self.__init__(**{**args, "retire_solved_after": self.retire_solved_after, "sampling": self.sampling})

    @property
    def active(self) -> int:
        return self.num_rows - len(self.retired)

    def _epoch_order(self) -> list[int]:
        if not self.shuffle:
            return list(range(self.num_rows))
        generator = torch.Generator().manual_seed(self.seed + self.epoch)
        return torch.randperm(self.num_rows, generator=generator).tolist()

    def weights(self) -> torch.Tensor:
        """(num_rows,) float64: each row's pass-rate sampling weight (`pass_rate_weights`), 0 for retired rows."""
        passed = torch.tensor([self.passed.get(row, 0) for row in range(self.num_rows)])
        tried = torch.tensor([self.tried.get(row, 0) for row in range(self.num_rows)])
        weights = pass_rate_weights(passed, tried)
        weights[sorted(self.retired)] = 0.0
        return weights

    def draw(self, count: int) -> list[int]:
        """The next `count` active rows: continuing into the next epoch's order when this one runs out, or with
        `sampling="pass_rate"`, drawn without replacement by weight (again, once every active row was drawn)."""
        if self.active == 0:
            raise RuntimeError("Every prompt of the dataset is retired: there is nothing left to generate from.")
        if self.sampling == "pass_rate":
            return self._draw_by_pass_rate(count)
        rows = []
        while len(rows) < count:
            if self.position == len(self._order):
                self.epoch, self.position = self.epoch + 1, 0
                self._order = self._epoch_order()
            row = self._order[self.position]
            self.position += 1
            if row not in self.retired:
                rows.append(row)
        return rows

    def _draw_by_pass_rate(self, count: int) -> list[int]:
        rows = []
        while len(rows) < count:
            weights = self.weights().numpy()
            generator = np.random.default_rng([self.seed, self.draws])
            size = min(count - len(rows), self.active)
            rows += generator.choice(self.num_rows, size=size, replace=False, p=weights / weights.sum()).tolist()
            self.draws += 1
        return rows

    def record(self, rows: list[int], solved: list[bool], completions: int, passed: list[int] | None = None) -> None:
        """Count a round's completions; with pass-rate sampling, each row's completions and those that passed
        (`passed`, one count per row); with retirement, each row's streak of fully solved groups."""
        self.completions_generated += completions
        if self.sampling == "pass_rate":
            for row, count in zip(rows, passed, strict=True):
                self.passed[row] = self.passed.get(row, 0) + count
                self.tried[row] = self.tried.get(row, 0) + completions // len(rows)
        if self.retire_solved_after is None:
            return
        for row, is_solved in zip(rows, solved, strict=True):
            self.streaks[row] = self.streaks.get(row, 0) + 1 if is_solved else 0

    def on_step_end(self, args, state, control, **kwargs):
        """Retire the prompts solved in their last `retire_solved_after` appearances, at the optimizer-step boundary
        (so a step never runs out of prompts half-way), and stop when none is left."""
        if self.retire_solved_after is None:
            return control
        self.retired |= {row for row, count in self.streaks.items() if count >= self.retire_solved_after}
        if self.active == 0 and not control.should_training_stop:
            logger.warning(
                "All %d prompts are retired (every completion scored 1.0 in each of their last %d appearances): "
                "training stops at step %d.",
                self.num_rows,
                self.retire_solved_after,
                state.global_step,
            )
            control.should_training_stop = True
        return control
