"""Register your own verifier in a few lines and train with it: the tiny model learns single-digit arithmetic on a
CPU, scored by the verifier defined below.

    python examples/custom_verifier.py                 # tiny model, built-in arithmetic, CPU
    accelerate launch examples/custom_verifier.py --max_steps 100

A verifier is a function `(completion, reference, **options) -> float | None` (or a `Verifier` subclass) registered
under a name; `as_reward_function(name, reference_column=...)` turns it into a TRL reward function that never raises
into the trainer. Every `GRPOExtConfig` field is a flag or a YAML key (`--config my.yaml`).

The model starts from the demo's format-only warm-up (supervised steps on `3+4=` followed by a *random* digit: it
learns to answer with one digit, nothing about arithmetic), so the reward starts at chance, 1 in 10, and what it
gains after that is GRPO's. The script prints the mean reward of the first and of the last logging interval.
"""

from __future__ import annotations

import sys

from script_setup import parse_checked, script_parser  # examples/script_setup.py, next to this script

from trl_grpo_ext import (
    GRPOExtConfig,
    GRPOExtTrainer,
    arithmetic_dataset,
    arithmetic_format_warmup,
    build_tiny_model,
    end_training,
)
from trl_grpo_ext.verifiers import as_reward_function, register_verifier


@register_verifier("first_digit")
def first_digit(completion: str, reference: str, partial: float = 0.0) -> float | None:
    """1 when the first digit of the completion is the reference digit; `partial` for any other digit."""
    if not reference.isdigit():
        return None  # an unusable reference: TRL treats the reward as missing
    digits = [c for c in completion if c.isdigit()]
    if not digits:
        return 0.0
    return 1.0 if digits[0] == reference[0] else partial


# Settings under which the tiny model learns on a CPU in a couple of minutes (those of examples/demo.py): the answer
# is one token, 32 prompts x 8 completions per step, a constant learning rate, k3 KL to the warmed-up model.
DEFAULTS = dict(
    output_dir="outputs/custom_verifier",
    max_steps=300,
    learning_rate=1e-3,
    lr_scheduler_type="constant",
    beta=0.04,
    num_generations=8,
    per_device_train_batch_size=32 * 8,
    max_completion_length=1,
    temperature=1.0,
    logging_steps=10,
    save_strategy="no",
    report_to="none",
    bf16=False,
)


def warmed_up_model(seed: int):
    """The tiny model after the format-only warm-up. Deterministic, so every process of a launch builds the same."""
    model, tokenizer = build_tiny_model(seed=seed)
    arithmetic_format_warmup(model, tokenizer, steps=30, seed=seed)
    return model, tokenizer


def main(training_args: GRPOExtConfig) -> None:
    reward = as_reward_function("first_digit", reference_column="answer")  # options: ..., partial=0.1
    model, tokenizer = warmed_up_model(training_args.seed)
    trainer = GRPOExtTrainer(
        model=model,
        processing_class=tokenizer,
        reward_funcs=[reward],
        args=training_args,
        train_dataset=arithmetic_dataset(seed=training_args.seed),
    )
    trainer.train()
    logged = [(entry["step"], entry["reward"]) for entry in trainer.state.log_history if "reward" in entry]
    steps, processes = trainer.state.global_step, trainer.accelerator.num_processes
    every = training_args.logging_steps
    trainer.accelerator.print(f"Trained {steps} steps on {processes} process(es).")
    trainer.accelerator.print(f"Mean reward (first_digit) per logging step: {[round(r, 3) for _, r in logged]}")
    (first_step, first), (last_step, last) = logged[0], logged[-1]
    first_window = f"{first:.2f} (steps {max(1, first_step - every + 1)}-{first_step})"
    if len(logged) == 1:
        summary = f"Mean reward {first_window}: one logging window, no trend (lower --logging_steps {every})"
    else:
        summary = f"Mean reward {first_window} -> {last:.2f} (steps {max(1, last_step - every + 1)}-{last_step})"
    trainer.accelerator.print(f"{summary}; chance is 0.10.")
    end_training(trainer)


if __name__ == "__main__":
    parser = script_parser(__doc__, "custom_verifier.py", (GRPOExtConfig,))
    parser.set_defaults(**DEFAULTS)
    (args,) = parse_checked("custom_verifier.py", sys.argv[1:], (GRPOExtConfig,), parser.parse_args_and_config)
    main(args)
    sys.exit(0)
