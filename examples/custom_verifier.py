"""Register your own verifier in a few lines and train with it.

    python examples/custom_verifier.py                 # tiny model, built-in arithmetic, CPU
    accelerate launch examples/custom_verifier.py --max_steps 100

A verifier is a function `(completion, reference, **options) -> float | None` (or a `Verifier` subclass) registered
under a name; `as_reward_function(name, reference_column=...)` turns it into a TRL reward function that never raises
into the trainer. Every `GRPOExtConfig` field is a flag or a YAML key (`--config my.yaml`).
"""

from __future__ import annotations

import sys

from accelerate import PartialState
from trl import TrlParser

from trl_grpo_ext import GRPOExtConfig, GRPOExtTrainer
from trl_grpo_ext.datasets import arithmetic_dataset
from trl_grpo_ext.tiny_model import tiny_model_path
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


DEFAULTS = dict(
    output_dir="outputs/custom_verifier",
    max_steps=20,
    learning_rate=1e-3,
    num_generations=8,
    per_device_train_batch_size=32,
    max_completion_length=2,
    logging_steps=5,
    save_strategy="no",
    report_to="none",
)


def main(training_args: GRPOExtConfig) -> None:
    reward = as_reward_function("first_digit", reference_column="answer", partial=0.1)
    with PartialState().main_process_first():  # one process builds the tiny model, the others then load it
        model = tiny_model_path()
    trainer = GRPOExtTrainer(
        model=model,
        reward_funcs=[reward],
        args=training_args,
        train_dataset=arithmetic_dataset(seed=training_args.seed),
    )
    trainer.train()
    logged = [entry["reward"] for entry in trainer.state.log_history if "reward" in entry]
    steps, processes = trainer.state.global_step, trainer.accelerator.num_processes
    trainer.accelerator.print(f"Trained {steps} steps on {processes} process(es).")
    trainer.accelerator.print(f"Mean reward (first_digit) per logging step: {[round(r, 3) for r in logged]}")


if __name__ == "__main__":
    parser = TrlParser((GRPOExtConfig,))
    parser.set_defaults(**DEFAULTS)
    (args,) = parser.parse_args_and_config()
    main(args)
    sys.exit(0)
