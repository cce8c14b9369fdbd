"""GRPO on math with the `math` verifier as reward, launched like any TRL script.

Every `GRPOExtConfig` / `ModelConfig` field is a flag or a YAML key (`--config examples/configs/grpo_math_tiny.yaml`).
With no arguments it trains the embedded tiny model on the built-in single-digit arithmetic set on CPU, with no
network; `--model_name_or_path` and `--dataset_name` switch to a Hub model and dataset on a GPU machine:

    python examples/grpo_math.py                                    # tiny model, built-in data, CPU
    accelerate launch --config_file examples/accelerate_configs/multi_gpu.yaml examples/grpo_math.py \\
        --config examples/configs/grpo_math_qwen.yaml                # Qwen2.5 on GSM8K

Hub datasets: `--prompt_column` names the question column and `--answer_column` the reference the verifier reads
(GSM8K's `answer` with its `#### 72`, MATH's `solution` with its `\\boxed{}`, or a bare answer).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

from script_setup import parse_script_args, tiny_defaults, tiny_model  # examples/script_setup.py, next to this script
from trl import ModelConfig, ScriptArguments, get_peft_config

from trl_grpo_ext import GRPOExtConfig, GRPOExtTrainer, arithmetic_dataset, end_training, hub_prompt_dataset
from trl_grpo_ext.verifiers import as_reward_function

TINY_DEFAULTS = tiny_defaults(
    "grpo_math", max_steps=50, num_generations=8, per_device_train_batch_size=32, max_completion_length=4
)


@dataclass
class MathScriptArguments(ScriptArguments):
    """Script arguments: the dataset (built-in when `dataset_name` is unset) and the rewards."""

    prompt_column: str = field(default="question", metadata={"help": "Question column of a Hub dataset."})
    answer_column: str = field(default="answer", metadata={"help": "Reference column of a Hub dataset."})
    system_prompt: str | None = field(default=None, metadata={"help": "System message prepended to each prompt."})
    format_reward: bool = field(
        default=False,
        metadata={"help": "Add TRL's think_format_reward (1 for `<think>...</think>` then the answer, else 0)."},
    )
    verifier_timeout_s: float = field(default=5.0, metadata={"help": "Hard deadline per verification, seconds."})
    verifier_audit_canaries: int = field(
        default=2,
        metadata={
            "help": "Audit the math verifier while training: each batch, score canaries (wrong and right answers "
            "built from this many of its references, never trained on) and log math/canary_false_positive and "
            "math/canary_false_negative. 0: off."
        },
    )
    verifier_second_opinion: bool = field(
        default=False,
        metadata={
            "help": "Also grade every completion with math-verify (needs the math-verify package) and log "
            "math/second_opinion_disagreement; the cases go to <output_dir>/verifier_audit.jsonl."
        },
    )


def load_train_dataset(script_args: MathScriptArguments, seed: int):
    if script_args.dataset_name is None:
        return arithmetic_dataset(seed=seed)
    return hub_prompt_dataset(
        script_args.dataset_name,
        script_args.dataset_config,
        script_args.dataset_train_split,
        prompt_column=script_args.prompt_column,
        reference_columns={"answer": script_args.answer_column},
        system_prompt=script_args.system_prompt,
    )


def build_rewards(script_args: MathScriptArguments, output_dir: str | None = None) -> list:
    # Its workers start now, in the background: they import sympy and warm up while the model loads.
    math_reward = as_reward_function(
        "math",
        reference_column="answer",
        audit_canaries=script_args.verifier_audit_canaries,
        second_opinion=script_args.verifier_second_opinion,
        audit_log=str(Path(output_dir) / "verifier_audit.jsonl") if output_dir else None,
        timeout_s=script_args.verifier_timeout_s,
    )
    rewards = [math_reward]
    if script_args.format_reward:
        from trl.rewards import think_format_reward

        rewards.append(think_format_reward)
    return rewards


def main(script_args: MathScriptArguments, training_args: GRPOExtConfig, model_args: ModelConfig) -> None:
    rewards = build_rewards(script_args, training_args.output_dir)
    trainer = GRPOExtTrainer(
        model=model_args.model_name_or_path or tiny_model(),
        reward_funcs=rewards,
        args=training_args,
        train_dataset=load_train_dataset(script_args, training_args.seed),
        peft_config=get_peft_config(model_args),
    )
    try:
        trainer.train(resume_from_checkpoint=training_args.resume_from_checkpoint)
        trainer.save_model(training_args.output_dir)
        steps, processes = trainer.state.global_step, trainer.accelerator.num_processes
        trainer.accelerator.print(
            f"Trained {steps} steps on {processes} process(es); saved to {training_args.output_dir}."
        )
    finally:
        rewards[0].verifier.close()
    end_training(trainer)


def parse_args() -> tuple[MathScriptArguments, GRPOExtConfig, ModelConfig]:
    return parse_script_args(__doc__, "grpo_math.py", (MathScriptArguments, GRPOExtConfig, ModelConfig), TINY_DEFAULTS)


if __name__ == "__main__":
    main(*parse_args())
    sys.exit(0)
