"""Where the prompts of each generation round come from when `dynamic_sampling` or `retire_solved_after` is on.

Both features need prompts the dataloader cannot give: dynamic sampling draws more prompts mid-step, retirement stops
drawing some. `PromptStream` replaces the dataloader's prompts with its own seeded order of dataset rows (a new
permutation each epoch, as stock's sampler shuffles, or the dataset order with `shuffle_dataset=False`) that skips
retired rows; the dataloader still counts the steps. Every process holds the same stream and sees the same gathered
rewards, so all draw the same rows and retire the same prompts without communicating.

Its state (position, retirement streaks, completions generated) is saved in each checkpoint's trainer state and
restored on resume.
"""

from __future__ import annotations

import logging

import torch
from transformers import TrainerCallback
from transformers.trainer_callback import ExportableState

logger = logging.getLogger(__name__)


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
    ):
        self.num_rows, self.seed, self.shuffle = num_rows, seed, shuffle
        self.retire_solved_after = retire_solved_after
        self.epoch, self.position = epoch, position
        self.completions_generated = completions_generated
        self.streaks = {int(row): count for row, count in (streaks or {}).items()}  # consecutive solved appearances
        self.retired = set(retired or ())
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
        self.__init__(**{**args, "retire_solved_after": self.retire_solved_after})

    @property
    def active(self) -> int:
        return self.num_rows - len(self.retired)

    def _epoch_order(self) -> list[int]:
        if not self.shuffle:
            return list(range(self.num_rows))
        generator = torch.Generator().manual_seed(self.seed + self.epoch)
        return torch.randperm(self.num_rows, generator=generator).tolist()

    def draw(self, count: int) -> list[int]:
        """The next `count` active rows, continuing into the next epoch's order when this one runs out."""
        if self.active == 0:
            raise RuntimeError("Every prompt of the dataset is retired: there is nothing left to generate from.")
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

    def record(self, rows: list[int], solved: list[bool], completions: int) -> None:
        """Count a round's completions and, with retirement, each row's streak of fully solved groups."""
        self.completions_generated += completions
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
