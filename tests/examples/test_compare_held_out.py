"""`compare` with held-out evaluation: the built-in task never trains on its held-out problems, the held-out table
pairs every problem by seed with two-way bootstrap intervals, and (slow) stock and the extension's defaults give the
same held-out figures, on one process or two, and a budgeted run with a control evaluates every run at every point
without changing what it trains."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from trl_grpo_ext.cli import main
from trl_grpo_ext.compare import RunSpec, Task, replot
from trl_grpo_ext.compare.worker import load_task_dataset
from trl_grpo_ext.data.datasets import arithmetic_split

REPO = Path(__file__).resolve().parents[2]


def test_the_built_in_task_trains_on_none_of_its_held_out_problems():
    held_out = {p["prompt"] for p in arithmetic_split("held_out")}
    trained = set(load_task_dataset(Task(), seed=0)["prompt"])
    assert len(held_out) == 22 and len(trained) == 88 and not held_out & trained
    assert {p["prompt"] for p in arithmetic_split("all")} == held_out | trained


def write_run(directory: Path, name: str, trainer: str, seed: int, reward: float, per_prompt: list[float]) -> dict:
    logged = [{"step": i + 1, "rollouts": 8 * (i + 1), "reward": reward, "step_time": 0.5} for i in range(10)]
    (directory / f"{name}-seed{seed}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in logged))
    mean = sum(per_prompt) / len(per_prompt)
    summary = {"pass@1": {"mean": mean, "ci95": [0, 1], "n": 22}, "maj@1": {"mean": mean, "ci95": None},
               "pass@8": {"mean": 0.9, "ci95": None}, "maj@8": {"mean": 0.5, "ci95": None}, "n_prompts": 22}  # fmt: skip
    rows = [{"index": i, "pass@1": value} for i, value in enumerate(per_prompt)]
    payload = {"split": "held_out", "summary": summary, "per_prompt": rows, "completions": 80, "step": 10}
    (directory / f"{name}-seed{seed}.eval.json").write_text(json.dumps(payload))
    return vars(RunSpec(name, trainer, {}, {}, 10, seed))


def test_held_out_table_pairs_each_problem_by_seed_with_intervals_inside_the_range(tmp_path):
    specs = [write_run(tmp_path, "stock", "stock", s, 0.5, [0.1 * s, 0.0]) for s in range(5)]
    specs += [write_run(tmp_path, "rloo", "ext", s, 0.5, [0.1 * s + 0.2 + 0.01 * s, 0.1]) for s in range(5)]
    (tmp_path / "manifest.json").write_text(json.dumps({"task": vars(Task()), "runs": specs}))
    table = replot(tmp_path)
    header = next(line for line in table.splitlines() if line.startswith("| variant | seeds | completions"))
    assert header == "| variant | seeds | completions | pass@1 at the end | area under curve | vs stock |"
    rloo = next(line for line in table.splitlines() if line.startswith("| rloo |"))
    # per problem: rloo - stock = 0.2 + 0.01 s (mean 0.22 over seeds) and 0.1: mean 0.16
    assert rloo.startswith("| rloo | 5 | 80 | 0.260 [") and "| +0.160 [" in rloo
    assert "- `rloo`: stock: higher." in table and "which no run trains on" in table
    payload = json.loads((tmp_path / "results.json").read_text())
    assert payload["held_out"]["rloo"]["vs_stock"]["mean"] == pytest.approx(0.16)
    low, high = payload["held_out"]["stock"]["end"]["ci95"]
    assert 0.0 <= low < high <= 0.4  # a two-way bootstrap stays inside the figures' range
    assert payload["variants"]["stock"]["eval_pass@1"]["mean"] == pytest.approx(0.1)
    assert "eval_maj@1" not in payload["variants"]["stock"]  # maj@1 is pass@1 unless samples abstain: not repeated


def test_the_training_table_leaves_the_held_out_verdict_to_the_held_out_section(tmp_path):
    """rloo gains on one problem and loses on the other, the same on every seed: over seeds alone its mean gain is
    significant, over seeds and problems it is not; the report gives one verdict, the two-way one."""
    specs = [write_run(tmp_path, "stock", "stock", s, 0.5, [0.5, 0.5]) for s in range(5)]
    specs += [write_run(tmp_path, "rloo", "ext", s, 0.5, [1.0, 0.3 + 0.01 * s]) for s in range(5)]
    (tmp_path / "manifest.json").write_text(json.dumps({"task": vars(Task()), "runs": specs}))
    table = replot(tmp_path)
    assert "- `rloo`: stock: no separable difference." in table
    training_row = next(line for line in table.splitlines() if line.startswith("| rloo | 5 | 0.5000"))
    assert training_row.endswith("| none significant |"), training_row
    payload = json.loads((tmp_path / "results.json").read_text())
    seeds_only = (
        payload["variants"]["rloo"]["eval_pass@1"]["mean"] - payload["variants"]["stock"]["eval_pass@1"]["mean"]
    )
    assert seeds_only == pytest.approx(0.16)  # every seed: (0.5 - 0.2 + 0.01 s) / 2 > 0


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


@pytest.mark.slow
def test_a_budgeted_comparison_with_a_control_evaluates_every_run_at_every_point(tmp_path):
    """The command of a budgeted study on the built-in task (smaller): each run stops at the budget, is evaluated at
    every point, the base model once per seed; evaluating along the way leaves the training draws unchanged."""
    command = [sys.executable, "-m", "trl_grpo_ext.cli", "compare", "--prompts_per_step", "4", "--budget_completions",
               "64", "--eval_every_completions", "32", "--control", "shuffled", "--output_dir", str(tmp_path / "a")]  # fmt: skip
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-4000:]
    out = tmp_path / "a"
    for name in ("stock", "control:shuffled"):
        assert [json.loads(line)["rollouts"] for line in (out / f"{name}-seed0.jsonl").read_text().splitlines()] == [
            32,
            64,
        ]
        assert json.loads((out / f"{name}-seed0.eval@32.json").read_text())["completions"] == 32
        assert json.loads((out / f"{name}-seed0.eval.json").read_text())["completions"] == 64
    assert json.loads((out / "base-seed0.eval.json").read_text())["completions"] == 0
    table = (out / "results.md").read_text()
    assert "| control:shuffled | 1 | 64 |" in table and "pass@1 at 32 | pass@1 at 64" in table
    # the same stock run without evaluations along the way logs the same training
    plain = [sys.executable, "-m", "trl_grpo_ext.cli", "compare", "--prompts_per_step", "4", "--budget_completions",
             "64", "--variant", "ext", "--output_dir", str(tmp_path / "b")]  # fmt: skip
    assert subprocess.run(plain, cwd=REPO, capture_output=True, text=True, timeout=900).returncode == 0
    logged = [(tmp_path / d / "stock-seed0.jsonl").read_text().splitlines() for d in ("a", "b")]
    keys = ("reward", "loss", "grad_norm", "entropy")
    assert [[json.loads(r)[k] for k in keys] for r in logged[0]] == [
        [json.loads(r)[k] for k in keys] for r in logged[1]
    ]
