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

import inspect
import json
import sys
from dataclasses import MISSING, dataclass, field

from script_setup import parse_script_args, tiny_defaults, tiny_model  # examples/script_setup.py, next to this script
from trl import ModelConfig, ScriptArguments, get_peft_config

from trl_grpo_ext import GRPOExtConfig, GRPOExtTrainer, code_dataset, end_training, hub_prompt_dataset
from trl_grpo_ext.verifiers import as_reward_function
from trl_grpo_ext.verifiers.code.native import LANGUAGES
from trl_grpo_ext.verifiers.code.options import OPTION_HELP
from trl_grpo_ext.verifiers.code.verifier import CodeVerifier
from trl_grpo_ext.verifiers.sandbox.isolation import ISOLATION_CHOICES

TINY_DEFAULTS = tiny_defaults(
    "grpo_code", max_steps=20, num_generations=4, per_device_train_batch_size=8, max_completion_length=32
)


PYTHON_PROMPT = "Write a Python function that solves the task. Answer with one ```python code block."
CPP_PROMPT = (
    "Write a C++17 program that reads the input from stdin and prints the answer to stdout. "
    "Answer with one ```cpp code block."
)


# The flags that are the code verifier's options, by the option's name: their help is the verifier's (OPTION_HELP).
VERIFIER_FLAGS = {
    "language": "language",
    "checker_headers": "checker_headers",
    "partial_credit": "partial_credit",
    "verifier_timeout_s": "timeout_s",
    "verifier_isolation": "isolation",
    "site_packages": "site_packages",
    "float_tolerance": "float_tolerance",
}
VERIFIER_DEFAULTS = {name: p.default for name, p in inspect.signature(CodeVerifier).parameters.items()}


def verifier_option(option: str, default=MISSING, choices: tuple[str, ...] | None = None):
    """A flag for the code verifier's `option`: the verifier's description and default, unless this script sets its
    own default (its help then names the verifier's)."""
    text = OPTION_HELP[option]
    if default is MISSING:
        default = VERIFIER_DEFAULTS[option]
    else:
        text += f" This script's default differs from the verifier's ({VERIFIER_DEFAULTS[option]!r})."
    metadata = {"help": text, **({"choices": list(choices)} if choices else {})}
    if isinstance(default, (list, tuple)):
        return field(default_factory=lambda: list(default), metadata=metadata)
    return field(default=default, metadata=metadata)


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
    language: str = verifier_option("language", choices=LANGUAGES)
    time_limit_column: str | None = field(
        default=None,
        metadata={
            "help": "Per-test time limit column (seconds) of a C++ stdin/stdout dataset; a case runs at most "
            "--verifier_timeout_s."
        },
    )
    memory_limit_column: str | None = field(
        default=None,
        metadata={
            "help": "Memory limit column (MiB) of a C++ stdin/stdout dataset; a case gets at most the verifier's "
            "memory_mb."
        },
    )
    checker_column: str | None = field(
        default=None, metadata={"help": "Checker column (C++ source, testlib's exit codes) of a stdin/stdout dataset."}
    )
    checker_headers: list[str] = verifier_option("checker_headers")
    partial_credit: bool = verifier_option("partial_credit")
    verifier_timeout_s: float = verifier_option("timeout_s", default=5.0)  # shorter runs for training throughput
    verifier_isolation: str = verifier_option("isolation", choices=ISOLATION_CHOICES)
    site_packages: bool = verifier_option("site_packages")
    float_tolerance: float | None = verifier_option("float_tolerance")


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
    options = {option: getattr(script_args, flag) for flag, option in VERIFIER_FLAGS.items()}
    reward = as_reward_function("code", reference_column="tests", **options)
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
