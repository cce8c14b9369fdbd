"""examples/grpo_real_model.py and its task: the held-out problems are fixed and never trained on, the script's whole
pipeline runs (on the tiny model, in seconds), and (slow) a few GRPO steps on SmolLM2-135M-Instruct as prepared by
`trl-grpo-ext prepare-model`, whose folder CI passes in TRL_GRPO_EXT_REAL_MODEL."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from trl_grpo_ext.data.chat_arithmetic import chat_arithmetic_problems, chat_arithmetic_split

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "examples" / "grpo_real_model.py"


def test_level_one_problems_are_every_sum_and_every_nonnegative_difference():
    problems = chat_arithmetic_problems(level=1, max_operand=3)
    assert len(problems) == 16 + 10  # 4 x 4 sums, and the 10 pairs a >= b
    for row in problems:
        expression = row["prompt"].removeprefix("What is ").split("?")[0]
        assert eval(expression) == int(row["answer"]) >= 0  # the expression is ours, never a model's


def test_level_two_partial_results_stay_nonnegative():
    for row in chat_arithmetic_problems(level=2, max_operand=4):
        a, op1, b, op2, c = row["prompt"].removeprefix("What is ").split("?")[0].split()
        first = int(a) + int(b) if op1 == "+" else int(a) - int(b)
        assert first >= 0 and int(row["answer"]) >= 0
        assert eval(f"{a} {op1} {b} {op2} {c}") == int(row["answer"])


def test_held_out_split_is_fixed_disjoint_and_a_fifth():
    held_out = chat_arithmetic_split("held_out", max_operand=12)
    train = chat_arithmetic_split("train", max_operand=12)
    everything = chat_arithmetic_split("all", max_operand=12)
    assert held_out == chat_arithmetic_split("held_out", max_operand=12)
    assert not {r["prompt"] for r in held_out} & {r["prompt"] for r in train}
    assert len(held_out) + len(train) == len(everything) == 169 + 91
    assert len(held_out) == round(0.2 * len(everything))
    subset = chat_arithmetic_split("train", max_operand=12, limit=10, seed=3)
    assert len(subset) == 10 and all(r in train for r in subset)
    assert subset == chat_arithmetic_split("train", max_operand=12, limit=10, seed=3)
    assert subset != chat_arithmetic_split("train", max_operand=12, limit=10, seed=4)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"level": 3}, "level=3"), ({"max_operand": 0}, "max_operand=0"), ({"split": "test"}, "split='test'")],
)
def test_bad_task_settings_name_the_field_and_the_choices(kwargs, message):
    with pytest.raises(ValueError, match=message):
        chat_arithmetic_split(**kwargs)


def run_script(*args: str, timeout: int) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=timeout, cwd=REPO
    )


@pytest.mark.slow  # over 8 s idle: the default suite stays under 10 minutes
def test_pipeline_runs_end_to_end_on_the_tiny_model(tiny_model_dir, tmp_path):
    out = tmp_path / "run"
    completed = run_script(
        "--model", tiny_model_dir, "--max_steps", "2", "--pool", "8", "--filter_samples", "4",
        "--keep_pass_rate", "0,1", "--eval_samples", "2", "--held_out_limit", "4", "--max_completion_length", "4",
        "--learning_rate", "1e-3", "--seeds", "0", "1", "--output_dir", str(out), "--threads", "1", timeout=300,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr[-3000:]
    result = json.loads((out / "results.json").read_text())
    assert result["before"]["n_prompts"] == 4 and result["selection"] == {**result["selection"], "pool": 8, "kept": 8}
    assert [run["seed"] for run in result["runs"]] == [0, 1]
    assert [run["bf16"] for run in result["runs"]] == [False, False]  # float32 by default: the trainer's own setting
    for run in result["runs"]:
        assert run["steps"] == 2 and len(run["log"]) == 2
        assert -1.0 <= run["gain_pass@1"]["mean"] <= 1.0
        assert 0.0 <= run["after"]["pass@1"]["mean"] <= 1.0
    table = (out / "table.md").read_text()
    assert "| before |" in table and "| seed 1 |" in table and "Gain in held-out pass@1 over 2 seeds" in table


@pytest.mark.slow  # over 8 s idle: the default suite stays under 10 minutes
def test_lora_training_merges_into_a_model_that_evaluates(tiny_model_dir, tmp_path):
    out = tmp_path / "run"
    completed = run_script(
        "--model", tiny_model_dir, "--lora", "--max_steps", "1", "--pool", "4", "--filter_samples", "2",
        "--keep_pass_rate", "0,1", "--eval_samples", "2", "--held_out_limit", "2", "--max_completion_length", "2",
        "--output_dir", str(out), "--threads", "1", "--save_model", "--bf16", timeout=300,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr[-3000:]
    result = json.loads((out / "results.json").read_text())
    assert result["args"]["learning_rate"] == 2e-4 and result["runs"][0]["steps"] == 1
    assert result["runs"][0]["bf16"] is True
    saved = out / "seed0" / "model"  # the merged model: a plain folder that evaluate and from_pretrained read
    assert (saved / "config.json").exists() and not (saved / "adapter_config.json").exists()
    assert (saved / "tokenizer_config.json").exists()


def test_write_task_gives_a_task_file_that_compare_and_evaluate_read(tiny_model_dir, tmp_path):
    from trl_grpo_ext.compare import load_task_file
    from trl_grpo_ext.compare.plan import validate_task
    from trl_grpo_ext.evaluation.tasks import load_eval_rows

    completed = run_script("--model", tiny_model_dir, "--write_task", str(tmp_path / "task"), timeout=120)
    assert completed.returncode == 0, completed.stderr[-3000:]
    task_file = tmp_path / "task" / "task.yaml"
    assert yaml.safe_load(task_file.read_text())["model_name_or_path"] == tiny_model_dir
    task, common = load_task_file(str(task_file))
    validate_task(task)
    assert common["max_completion_length"] == 16 and common["beta"] == 0.0
    _, rows = load_eval_rows(task, task.eval_split)
    held_out = chat_arithmetic_split("held_out", max_operand=12)
    assert [r["answer"] for r in rows] == [r["answer"] for r in held_out]
    assert rows[0]["prompt"] == [{"role": "user", "content": held_out[0]["prompt"]}]


@pytest.mark.slow
def test_a_few_grpo_steps_on_smollm2(tmp_path):
    model = os.environ.get("TRL_GRPO_EXT_REAL_MODEL")
    if not model:
        pytest.skip("TRL_GRPO_EXT_REAL_MODEL is not set: run `trl-grpo-ext prepare-model` and export its folder")
    out = tmp_path / "run"
    completed = run_script(
        "--model", model, "--max_steps", "2", "--pool", "8", "--filter_samples", "4", "--keep_pass_rate", "0,1",
        "--eval_samples", "4", "--held_out_limit", "8", "--output_dir", str(out), timeout=900,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr[-3000:]
    result = json.loads((out / "results.json").read_text())
    (run,) = result["runs"]
    assert run["steps"] == 2 and all(0.0 <= row["reward"] <= 1.0 for row in run["log"])
    assert result["before"]["n_prompts"] == 8 and result["before"]["n_samples"] == 4
    assert "gain pass@1 (paired)" in (out / "table.md").read_text()


def test_generation_speed_benchmark_prints_every_setting(tiny_model_dir):
    completed = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "generation_speed.py"), "--model", tiny_model_dir,
         "--rounds", "1", "--prompts", "9"],
        capture_output=True, text=True, timeout=300, cwd=REPO,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr[-3000:]
    rows = [line for line in completed.stdout.splitlines() if line.startswith("| 1 |") or line.startswith("| 2 |")]
    assert len(rows) == 4 and "x1.00 (x1.00 - x1.00)" in rows[0]
    assert "9 prompts x 8 samples" in completed.stdout
