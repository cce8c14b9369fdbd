"""GRPO on code with the sandboxed `code` verifier as reward, launched like any TRL script.

Every `GRPOExtConfig` / `ModelConfig` field is a flag or a YAML key (`--config examples/configs/grpo_code_qwen.yaml`).
With no arguments it trains the embedded tiny model on a few built-in MBPP-style tasks on CPU, with no network (the
tiny model never writes passing code: this checks the wiring, not the learning); `--model_name_or_path` and
`--dataset_name` switch to a Hub model and dataset on a GPU machine:

    python examples/grpo_code.py                                    # tiny model, built-in tasks, CPU
    accelerate launch --config_file examples/accelerate_configs/multi_gpu.yaml examples/grpo_code.py \\
        --config examples/configs/grpo_code_qwen.yaml                # Qwen2.5-Coder on MBPP

Hub datasets: `--prompt_column` names the task column and `--tests_column` the tests the verifier runs (MBPP's
`test_list`, a string of asserts, or stdin/stdout cases); `--entry_point_column` (HumanEval's `entry_point`) makes
the reference `{"test": <tests>, "entry_point": <entry point>}` for a `check(candidate)` test.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

from script_setup import parse_script_args, tiny_defaults, tiny_model  # examples/script_setup.py, next to this script
from trl import ModelConfig, ScriptArguments, get_peft_config

from trl_grpo_ext import GRPOExtConfig, GRPOExtTrainer
from trl_grpo_ext.datasets import code_dataset, hub_prompt_dataset
from trl_grpo_ext.launch import end_training
from trl_grpo_ext.verifiers import as_reward_function

TINY_DEFAULTS = tiny_defaults(
    "grpo_code", max_steps=20, num_generations=4, per_device_train_batch_size=8, max_completion_length=32
)


@dataclass
class CodeScriptArguments(ScriptArguments):
    """Script arguments: the dataset (built-in when `dataset_name` is unset) and the verifier's limits."""

    prompt_column: str = field(default="text", metadata={"help": "Task statement column of a Hub dataset."})
    tests_column: str = field(default="test_list", metadata={"help": "Tests column of a Hub dataset."})
    entry_point_column: str | None = field(
        default=None, metadata={"help": "Entry point column (HumanEval style `check(candidate)` tests)."}
    )
    system_prompt: str | None = field(
        default="Write a Python function that solves the task. Answer with one ```python code block.",
        metadata={"help": "System message prepended to each prompt of a Hub dataset."},
    )
    partial_credit: bool = field(default=False, metadata={"help": "Reward the fraction of tests passed."})
    verifier_timeout_s: float = field(default=5.0, metadata={"help": "Wall-time limit per program, seconds."})
    verifier_isolation: str = field(
        default="auto",
        metadata={
            "help": "Sandbox of the candidate programs: auto or bwrap (bubblewrap, required), or rlimits (weak "
            "isolation, by name only: the candidate can read files and use the network).",
            "choices": ["auto", "bwrap", "rlimits"],
        },
    )
    site_packages: bool = field(
        default=False,
        metadata={"help": "Let candidates import the installed packages (read-only); default: standard library only."},
    )
    float_tolerance: float | None = field(
        default=None,
        metadata={
            "help": "Stdin/stdout tests: accept real numbers within this absolute-or-relative error (e.g. 1e-6)."
        },
    )


def load_train_dataset(script_args: CodeScriptArguments, seed: int):
    if script_args.dataset_name is None:
        return code_dataset(seed=seed)
    tests = script_args.tests_column
    if script_args.entry_point_column:
        tests = (script_args.tests_column, script_args.entry_point_column)
    dataset = hub_prompt_dataset(
        script_args.dataset_name,
        script_args.dataset_config,
        script_args.dataset_train_split,
        prompt_column=script_args.prompt_column,
        reference_columns={"tests": tests},
        system_prompt=script_args.system_prompt,
    )
    if script_args.entry_point_column:  # the verifier reads HumanEval references as {"test", "entry_point"}
        dataset = dataset.map(
            lambda row: {"tests": {"test": row["tests"][tests[0]], "entry_point": row["tests"][tests[1]]}}
        )
    return dataset


def main(script_args: CodeScriptArguments, training_args: GRPOExtConfig, model_args: ModelConfig) -> None:
    reward = as_reward_function(
        "code",
        reference_column="tests",
        timeout_s=script_args.verifier_timeout_s,
        partial_credit=script_args.partial_credit,
        float_tolerance=script_args.float_tolerance,
        isolation=script_args.verifier_isolation,
        site_packages=script_args.site_packages,
    )
    trainer = GRPOExtTrainer(
        model=model_args.model_name_or_path or tiny_model(),
        reward_funcs=[reward],
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
        reward.verifier.close()
    end_training(trainer)


def parse_args() -> tuple[CodeScriptArguments, GRPOExtConfig, ModelConfig]:
    return parse_script_args(__doc__, "grpo_code.py", (CodeScriptArguments, GRPOExtConfig, ModelConfig), TINY_DEFAULTS)


if __name__ == "__main__":
    main(*parse_args())
    sys.exit(0)
