"""Stock TRL's own code run on chosen inputs, so that tests compare with what TRL computes rather than with a copy
of its expressions: its advantages from given rewards, its loss and KL metric from given log-probabilities."""

from __future__ import annotations

from unittest import mock

import torch
from trainer_helpers import digit_reward, make_config, prompt_dataset
from trl import GRPOConfig, GRPOTrainer

PROMPT = "What is 1 + 2?"


def build_stock_trainer(model_dir, output_dir, **overrides) -> GRPOTrainer:
    """A stock trainer in training mode, with the state transformers' training loop sets before `_compute_loss`."""
    config = make_config(GRPOConfig, output_dir, max_completion_length=2, **overrides)
    trainer = GRPOTrainer(model=model_dir, reward_funcs=[digit_reward], args=config, train_dataset=prompt_dataset())
    trainer.current_gradient_accumulation_steps = config.gradient_accumulation_steps
    trainer.model.train()
    return trainer


class StockAdvantages:
    """Stock `_generate_and_score_completions` with the rewards replaced by given ones: its advantages.

    Generation runs once (for the largest batch asked so far) and is replayed: the advantages depend on the rewards
    alone, and stock's `_generate` return value is checked by the contract test.
    """

    def __init__(self, trainer: GRPOTrainer):
        self.trainer = trainer
        self.generated: tuple | None = None

    def _replay(self, prompts: list) -> tuple:
        if self.generated is None or len(self.generated[0]) < len(prompts):
            self.generated = GRPOTrainer._generate(self.trainer, prompts)
        return tuple(part[: len(prompts)] if isinstance(part, list) else part for part in self.generated)

    def __call__(self, rewards: torch.Tensor, group_size: int, scale_rewards: str) -> torch.Tensor:
        """rewards: (N,) float32, NaN for unscorable; N a multiple of group_size."""
        trainer = self.trainer
        trainer.model.train()
        trainer.num_generations, trainer.scale_rewards = group_size, scale_rewards
        inputs = [{"prompt": PROMPT} for _ in range(rewards.numel())]
        with (
            mock.patch.object(trainer, "_generate", self._replay),
            mock.patch.object(trainer, "_calculate_rewards", lambda *args: rewards.unsqueeze(1).clone()),
        ):
            return GRPOTrainer._generate_and_score_completions(trainer, inputs)["advantages"]


def loss_inputs(
    ref_logps: torch.Tensor, mask: torch.Tensor, old_logps: torch.Tensor | None = None
) -> dict[str, torch.Tensor]:
    """A batch for `_compute_loss` with zero advantages, so that with `beta != 0` stock's loss is its KL term alone."""
    batch, length = mask.shape
    inputs = {
        "prompt_ids": torch.zeros(batch, 1, dtype=torch.long),
        "prompt_mask": torch.ones(batch, 1, dtype=torch.long),
        "completion_ids": torch.zeros(batch, length, dtype=torch.long),
        "completion_mask": mask,
        "advantages": torch.zeros(batch),
        "ref_per_token_logps": ref_logps,
        "num_items_in_batch": mask.sum(),
    }
    if old_logps is not None:
        inputs["old_per_token_logps"] = old_logps
    return inputs


def stock_loss(trainer: GRPOTrainer, logps: torch.Tensor, inputs: dict) -> torch.Tensor:
    """Stock `_compute_loss` with its forward pass returning `logps` (and zero entropies)."""

    def forward(*args, **kwargs):
        return logps, torch.zeros_like(logps), None

    with mock.patch.object(trainer, "_get_per_token_logps_and_entropies", forward):
        return GRPOTrainer._compute_loss(trainer, trainer.model, inputs)
