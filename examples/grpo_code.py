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

C++ datasets (Codeforces, CodeContests, open-r1 Codeforces, DeepCoder): `--language cpp` asks for a ```cpp block
(the default `auto` judges whichever of Python or C++ the completion's last tagged block is); `--time_limit_column`,
`--memory_limit_column` and `--checker_column` add the row's per-test time limit (seconds), memory limit (MiB) and
checker (a C++ program, testlib's contract) to its stdin/stdout cases; `--checker_headers` names the headers the
checkers include (testlib.h, from a clone of github.com/MikeMirzayanov/testlib):

    python examples/grpo_code.py --model_name_or_path Qwen/Qwen2.5-Coder-1.5B-Instruct \
        --dataset_name open-r1/codeforces --prompt_column description --tests_column official_tests \
        --language cpp --time_limit_column time_limit --memory_limit_column memory_limit
"""

from __future__ import annotations

import json
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


PYTHON_PROMPT = "Write a Python function that solves the task. Answer with one ```python code block."
CPP_PROMPT = (
    "Write a C++17 program that reads the input from stdin and prints the answer to stdout. "
    "Answer with one ```cpp code block."
)


def choice(choices: list[str], help: str):
    """A flag that takes one of `choices`, the first by default."""
    return field(default=choices[0], metadata={"help": help, "choices": choices})


@dataclass
class CodeScriptArguments(ScriptArguments):
    """Script arguments: the dataset (built-in when `dataset_name` is unset) and the verifier's limits."""

    prompt_column: str = field(default="text", metadata={"help": "Task statement column of a Hub dataset."})
    tests_column: str = field(default="test_list", metadata={"help": "Tests column of a Hub dataset."})
    entry_point_column: str | None = field(
        default=None, metadata={"help": "Entry point column (HumanEval style `check(candidate)` tests)."}
    )
    system_prompt: str | None = field(
        default=PYTHON_PROMPT,
        metadata={
            "help": "System message prepended to each prompt of a Hub dataset (with --language cpp, the default asks "
            "for one ```cpp block)."
        },
    )
    language: str = choice(
        ["auto", "python", "cpp"],
        "Language of the completions: auto (the last fenced block tagged python or cpp/c++/cc), python or cpp "
        "(C++17, compiled with g++ -O2 in the sandbox; stdin/stdout tests only).",
    )
    time_limit_column: str | None = field(
        default=None, metadata={"help": "Per-test time limit column (seconds) of a C++ stdin/stdout dataset."}
    )
    memory_limit_column: str | None = field(
        default=None, metadata={"help": "Memory limit column (MiB) of a C++ stdin/stdout dataset."}
    )
    checker_column: str | None = field(
        default=None, metadata={"help": "Checker column (C++ source, testlib's exit codes) of a stdin/stdout dataset."}
    )
    checker_headers: list[str] = field(
        default_factory=list,
        metadata={"help": "Headers the checkers include, written beside each checker's source (e.g. testlib.h)."},
    )
    partial_credit: bool = field(default=False, metadata={"help": "Reward the fraction of tests passed."})
    verifier_timeout_s: float = field(default=5.0, metadata={"help": "Wall-time limit per program, seconds."})
    verifier_isolation: str = choice(
        ["auto", "bwrap", "rlimits"],
        "Sandbox of the candidate programs: auto or bwrap (bubblewrap, required), or rlimits (weak isolation, by "
        "name only: the candidate can read files and use the network).",
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


# The row's own rules for C++ stdin/stdout cases, as the verifier reads them: {"tests": [...], "time_limit": ...}.
LIMIT_KEYS = {"time_limit_column": "time_limit", "memory_limit_column": "memory_limit", "checker_column": "checker"}


def load_train_dataset(script_args: CodeScriptArguments, seed: int):
    if script_args.dataset_name is None:
        return code_dataset(seed=seed)
    limits = {key: getattr(script_args, flag) for flag, key in LIMIT_KEYS.items() if getattr(script_args, flag)}
    tests = script_args.tests_column
    if script_args.entry_point_column:
        tests = (script_args.tests_column, script_args.entry_point_column)
    elif limits:
        tests = (script_args.tests_column, *limits.values())
    system_prompt = script_args.system_prompt
    if script_args.language == "cpp" and system_prompt == PYTHON_PROMPT:
        system_prompt = CPP_PROMPT
    dataset = hub_prompt_dataset(
        script_args.dataset_name,
        script_args.dataset_config,
        script_args.dataset_train_split,
        prompt_column=script_args.prompt_column,
        reference_columns={"tests": tests},
        system_prompt=system_prompt,
    )
    if script_args.entry_point_column:  # the verifier reads HumanEval references as {"test", "entry_point"}
        dataset = dataset.map(
            lambda row: {"tests": {"test": row["tests"][tests[0]], "entry_point": row["tests"][tests[1]]}}
        )
    elif limits:  # {"tests": cases, "time_limit": ..., "memory_limit": ..., "checker": ...}
        dataset = dataset.map(lambda row: {"tests": with_limits(row["tests"], tests[0], limits)})
    return dataset


def with_limits(columns: dict, tests_column: str, limits: dict) -> dict:
    """A stdin/stdout row with its own limits, as the verifier reads it: the cases (a list of {"input", "output"},
    or a dict of "inputs" and "outputs" lists, or either as JSON text) with each limit beside them (None where the
    row gives none: the verifier's own limit applies)."""
    cases = columns[tests_column]
    if isinstance(cases, str):
        cases = json.loads(cases)
    reference = dict(cases) if isinstance(cases, dict) else {"tests": cases}
    reference.update({key: columns.get(column) for key, column in limits.items()})
    return reference


def main(script_args: CodeScriptArguments, training_args: GRPOExtConfig, model_args: ModelConfig) -> None:
    reward = as_reward_function(
        "code",
        reference_column="tests",
        timeout_s=script_args.verifier_timeout_s,
        partial_credit=script_args.partial_credit,
        float_tolerance=script_args.float_tolerance,
        isolation=script_args.verifier_isolation,
        site_packages=script_args.site_packages,
        language=script_args.language,
        checker_headers=script_args.checker_headers,
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
