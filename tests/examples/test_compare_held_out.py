"""`compare` with held-out evaluation: the built-in task never trains on its held-out problems, every run's
held-out pass@k and maj@k are the first columns after the variant with intervals over seeds and paired significance,
and (slow) stock and the extension's defaults give the same held-out figures, on one process or two."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from trl_grpo_ext.cli import main
from trl_grpo_ext.compare import RunSpec, Task, replot
from trl_grpo_ext.compare.worker import load_task_dataset
from trl_grpo_ext.datasets import arithmetic_split

REPO = Path(__file__).resolve().parents[2]


def test_the_built_in_task_trains_on_none_of_its_held_out_problems():
    held_out = {p["prompt"] for p in arithmetic_split("held_out")}
    trained = set(load_task_dataset(Task(), seed=0)["prompt"])
    assert len(held_out) == 22 and len(trained) == 88 and not held_out & trained
    assert {p["prompt"] for p in arithmetic_split("all")} == held_out | trained


def write_run(directory: Path, name: str, trainer: str, seed: int, reward: float, pass_at_1: float) -> dict:
    logged = [{"step": i + 1, "rollouts": 8 * (i + 1), "reward": reward, "step_time": 0.5} for i in range(10)]
    (directory / f"{name}-seed{seed}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in logged))
    summary = {"pass@1": {"mean": pass_at_1, "ci95": [0, 1], "n": 22}, "maj@1": {"mean": pass_at_1, "ci95": None},
               "pass@8": {"mean": 0.9, "ci95": None}, "maj@8": {"mean": 0.5, "ci95": None}, "n_prompts": 22}  # fmt: skip
    (directory / f"{name}-seed{seed}.eval.json").write_text(json.dumps({"split": "held_out", "summary": summary}))
    return vars(RunSpec(name, trainer, {}, {}, 10, seed))


def test_held_out_columns_come_first_with_intervals_over_seeds_and_paired_significance(tmp_path):
    specs = [write_run(tmp_path, "stock", "stock", s, 0.5, 0.1 * s) for s in range(3)]
    specs += [write_run(tmp_path, "rloo", "ext", s, 0.5, 0.1 * s + 0.2 + 0.01 * s) for s in range(3)]
    (tmp_path / "manifest.json").write_text(json.dumps({"task": vars(Task()), "runs": specs}))
    table = replot(tmp_path)
    header = next(line for line in table.splitlines() if line.startswith("| variant | held-out"))
    assert header.startswith("| variant | held-out pass@1 | held-out pass@8 | held-out maj@8 | trainer |")
    rloo = next(line for line in table.splitlines() if line.startswith("| rloo |"))
    assert rloo.startswith("| rloo | 0.3100 [") and "held-out pass@1 higher" in rloo
    assert "| rloo vs stock | +0.2100 [+0.1852, +0.2348] * |" in table  # 0.20, 0.21, 0.22 paired by seed
    assert "which no run trains on" in table
    payload = json.loads((tmp_path / "results.json").read_text())
    stock = payload["variants"]["stock"]["eval_pass@1"]
    assert stock["mean"] == pytest.approx(0.1) and stock["ci95"] == pytest.approx([-0.148414, 0.348414], rel=1e-3)
    assert "eval_maj@1" not in payload["variants"]["stock"]  # maj@1 is pass@1 unless samples abstain: not repeated


def test_eval_k_beyond_the_samples_stops_the_command(tmp_path, capsys):
    args = ["compare", "--eval_samples", "4", "--eval_k", "1,8", "--output_dir", str(tmp_path / "out")]
    assert main(args) == 2
    assert "eval_k=[1, 8] with eval_num_samples=4: each k must lie between 1 and eval_num_samples" in (
        capsys.readouterr().err
    )


@pytest.mark.slow
@pytest.mark.parametrize("processes", [1, 2])
def test_stock_and_default_extension_give_the_same_held_out_figures(tmp_path, processes):
    launch = []
    if processes == 2:
        launch = ["-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2", "--num_machines", "1",
                  "--mixed_precision", "no", "--dynamo_backend", "no", "--main_process_port", "29571"]  # fmt: skip
    command = [sys.executable, *launch, "-m", "trl_grpo_ext.cli", "compare", "--max_steps", "3",
               "--prompts_per_step", "4", "--eval_k", "1,8", "--output_dir", str(tmp_path)]  # fmt: skip
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-4000:]
    evaluations = {name: json.loads((tmp_path / f"{name}-seed0.eval.json").read_text()) for name in ("stock", "ext")}
    for payload in evaluations.values():
        assert payload["split"] == "held_out" and payload["summary"]["processes"] == processes
        assert [r["index"] for r in payload["per_prompt"]] == list(range(22))
    assert evaluations["stock"]["per_prompt"] == evaluations["ext"]["per_prompt"]
    runs = json.loads((tmp_path / "results.json").read_text())["runs"]
    assert {r["variant"]: r["metrics"]["eval_pass@1"] for r in runs} == {
        "stock": evaluations["stock"]["summary"]["pass@1"]["mean"],
        "ext": evaluations["stock"]["summary"]["pass@1"]["mean"],
    }
