"""Each example script trains for two steps under `accelerate launch` on CPU, with one process and with two.

`accelerate launch --cpu` always starts a single process; `--multi_gpu --num_processes 2` starts two on gloo without
a GPU (the scripts set `use_cpu` when there is no GPU, which makes the processes join one group). The scripts print
how many steps they trained on how many processes; the tests read that line and the files written.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"

LAUNCH_ONE = ["--cpu", "--num_processes", "1"]
LAUNCH_TWO = ["--multi_gpu", "--num_processes", "2", "--main_process_port", "29541"]


def launch(script: str, launch_args: list[str], script_args: list[str], tmp_path: Path) -> str:
    command = [
        sys.executable, "-m", "accelerate.commands.launch", *launch_args,
        "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no",
        str(EXAMPLES / script), "--max_steps", "2", "--logging_steps", "1", "--output_dir", str(tmp_path / "out"),
        *script_args,
    ]  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TRL_GRPO_EXT_CACHE": str(tmp_path / "cache")}
    result = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-5000:]
    return result.stdout


def assert_trained(stdout: str, processes: int) -> None:
    assert f"Trained 2 steps on {processes} process(es)" in stdout, stdout[-3000:]


def assert_saved_model(tmp_path: Path) -> None:
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tmp_path / "out")
    assert model.config.num_hidden_layers == 2  # the embedded tiny model, trained and saved


@pytest.mark.slow  # over 8 s idle: the default suite stays under 10 minutes
def test_grpo_math_two_steps_one_process(tmp_path):
    stdout = launch("grpo_math.py", LAUNCH_ONE, [], tmp_path)
    assert_trained(stdout, 1)
    assert_saved_model(tmp_path)


@pytest.mark.slow
def test_grpo_math_two_steps_two_processes(tmp_path):
    stdout = launch("grpo_math.py", LAUNCH_TWO, [], tmp_path)
    assert_trained(stdout, 2)
    assert_saved_model(tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("launch_args, processes", [(LAUNCH_ONE, 1), (LAUNCH_TWO, 2)], ids=["one", "two"])
def test_grpo_code_two_steps(tmp_path, launch_args, processes):
    stdout = launch("grpo_code.py", launch_args, ["--max_completion_length", "16"], tmp_path)
    assert_trained(stdout, processes)
    assert_saved_model(tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("launch_args, processes", [(LAUNCH_ONE, 1), (LAUNCH_TWO, 2)], ids=["one", "two"])
def test_custom_verifier_two_steps(tmp_path, launch_args, processes):
    stdout = launch("custom_verifier.py", launch_args, [], tmp_path)
    assert_trained(stdout, processes)
    rewards = stdout.split("per logging step: ")[1].splitlines()[0]
    values = [float(v) for v in rewards.strip("[]").split(",")]
    assert len(values) == 2 and all(0.0 <= v <= 1.0 for v in values)


@pytest.mark.slow
def test_custom_verifier_learns_from_chance_with_its_defaults(tmp_path):
    command = [sys.executable, str(EXAMPLES / "custom_verifier.py"), "--output_dir", str(tmp_path / "out")]
    env = {**os.environ, "TRL_GRPO_EXT_CACHE": str(tmp_path / "cache")}
    result = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-5000:]
    match = re.search(r"^Mean reward ([0-9.]+) \(steps 1-10\) -> ([0-9.]+) \(steps 291-300\)", result.stdout, re.M)
    assert match, result.stdout[-3000:]
    first, last = float(match[1]), float(match[2])
    line = match[0]
    assert first < 0.2 and last >= first + 0.2, line  # chance is 0.1; measured 0.10 -> 0.56 over 300 steps


@pytest.mark.parametrize("script", ["grpo_math.py", "grpo_code.py", "custom_verifier.py"])
def test_help_opens_with_the_script_config_and_extension_flags(script):
    command = [sys.executable, str(EXAMPLES / script), "--help"]
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    head = result.stdout.splitlines()[:60]
    assert head[0] == f"usage: python examples/{script} [--config FILE] [--FLAG VALUE ...]"
    assert head[2].startswith(("GRPO on", "Register your own verifier"))  # the script's docstring
    text = "\n".join(head)
    assert "--config FILE: a YAML file" in text
    for flag in ("--advantage_estimator (default: grpo)", "--kl_estimator (default: k3)", "--kl_placement"):
        assert flag in text, flag
    assert "--learning_rate LEARNING_RATE" in result.stdout  # and every TRL flag after


@pytest.mark.slow
@pytest.mark.parametrize("config", ["grpo_math_tiny.yaml", "grpo_code_tiny.yaml"])
def test_yaml_configs_launch(tmp_path, config):
    script = "grpo_math.py" if "math" in config else "grpo_code.py"
    stdout = launch(script, LAUNCH_ONE, ["--config", str(EXAMPLES / "configs" / config)], tmp_path)
    assert_trained(stdout, 1)  # flags (--max_steps 2) override the YAML file's values


def test_every_accelerate_config_is_a_valid_accelerate_config():
    import yaml
    from accelerate.commands.config.config_args import load_config_from_file

    expected = {
        "single_gpu.yaml": "NO",
        "multi_gpu.yaml": "MULTI_GPU",
        "zero2.yaml": "DEEPSPEED",
        "zero3.yaml": "DEEPSPEED",
        "fsdp2.yaml": "FSDP",
    }
    found = {p.name for p in (EXAMPLES / "accelerate_configs").glob("*.yaml")}
    assert found == set(expected)
    for name, distributed_type in expected.items():
        config = load_config_from_file(str(EXAMPLES / "accelerate_configs" / name))
        assert str(config.distributed_type).endswith(distributed_type), name
    zero_stages = {
        n: yaml.safe_load((EXAMPLES / "accelerate_configs" / n).read_text())["deepspeed_config"]["zero_stage"]
        for n in ("zero2.yaml", "zero3.yaml")
    }
    assert zero_stages == {"zero2.yaml": 2, "zero3.yaml": 3}


def test_yaml_configs_parse_into_the_script_dataclasses():
    sys.path.insert(0, str(EXAMPLES))
    try:
        import grpo_code
        import grpo_math
    finally:
        sys.path.remove(str(EXAMPLES))
    from trl import ModelConfig, TrlParser

    from trl_grpo_ext import GRPOExtConfig

    cases = {
        "grpo_math_tiny.yaml": grpo_math.MathScriptArguments,
        "grpo_math_qwen.yaml": grpo_math.MathScriptArguments,
        "grpo_code_tiny.yaml": grpo_code.CodeScriptArguments,
        "grpo_code_qwen.yaml": grpo_code.CodeScriptArguments,
    }
    for name, script_cls in cases.items():
        parser = TrlParser((script_cls, GRPOExtConfig, ModelConfig))
        # bf16=false: the Qwen files ask for bf16, which this CPU machine cannot validate.
        script_args, config, model_args = parser.parse_args_and_config(
            ["--config", str(EXAMPLES / "configs" / name), "--bf16", "false", "--output_dir", "unused"]
        )
        assert config.advantage_estimator in ("grpo", "rloo"), name
        if "qwen" in name:
            assert model_args.model_name_or_path.startswith("Qwen/") and script_args.dataset_name, name
        else:
            assert model_args.model_name_or_path is None and script_args.dataset_name is None, name


def test_no_folder_of_examples_shadows_an_importable_module():
    """Python puts the script's folder first on sys.path, so a folder `examples/accelerate/` became a namespace
    package that hid the real `accelerate` from every example script run outside its virtual environment."""
    import importlib.util

    folders = [p.name for p in EXAMPLES.iterdir() if p.is_dir() and not p.name.startswith((".", "__"))]
    assert "accelerate_configs" in folders
    shadowing = [name for name in folders if importlib.util.find_spec(name) is not None]
    assert shadowing == [], f"examples/{shadowing} shadow installed modules of the same name"


def test_custom_verifier_short_run_says_it_has_no_trend(tmp_path):
    command = [sys.executable, str(EXAMPLES / "custom_verifier.py"), "--output_dir", str(tmp_path / "out")]
    command += ["--max_steps", "10", "--threads", "1"]
    env = {**os.environ, "TRL_GRPO_EXT_CACHE": str(tmp_path / "cache")}
    result = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-5000:]
    assert re.search(r"^Mean reward [0-9.]+ \(steps 1-10\): one logging window, no trend", result.stdout, re.M)
    assert " -> " not in result.stdout.splitlines()[-1]
