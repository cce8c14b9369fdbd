"""Build stock and extended trainers on identical work, for parity and behaviour tests."""

from __future__ import annotations

import torch
from datasets import Dataset

PROMPTS = [f"What is {a} + {b}?" for a in range(4) for b in range(4)]


def digit_reward(completions, **kwargs):
    """Deterministic reward in [0, 1] with ties and spread: the share of digit characters."""
    return [sum(ch.isdigit() for ch in c) / max(len(c), 1) for c in completions]


def length_parity_reward(completions, **kwargs):
    """Binary reward; None (unscorable) for empty completions."""
    return [None if not c else float(len(c) % 2 == 0) for c in completions]


def prompt_dataset(n: int = 16) -> Dataset:
    return Dataset.from_dict({"prompt": PROMPTS[:n]})


def make_config(config_cls, output_dir, **overrides):
    settings = dict(
        output_dir=str(output_dir),
        per_device_train_batch_size=4,
        num_generations=4,
        max_completion_length=8,
        max_steps=3,
        learning_rate=1e-3,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        seed=0,
        bf16=False,
        gradient_checkpointing=False,
        use_cpu=True,
        dataloader_num_workers=0,
    )
    settings.update(overrides)
    return config_cls(**settings)


def train(trainer_cls, config, model, reward_funcs=(digit_reward,), dataset=None, **kwargs):
    trainer = trainer_cls(
        model=model, reward_funcs=list(reward_funcs), args=config, train_dataset=dataset or prompt_dataset(), **kwargs
    )
    trainer.train()
    return trainer


def losses(trainer) -> list[float]:
    return [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]


def parameters(trainer) -> dict[str, torch.Tensor]:
    model = trainer.accelerator.unwrap_model(trainer.model)
    return {name: p.detach().clone() for name, p in model.named_parameters()}
