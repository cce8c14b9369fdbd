"""`trl-grpo-ext compare`: variant parsing, run planning, the summary table from JSONL files, re-plotting, and (slow)
end-to-end runs where stock and the extension's defaults log identical metrics."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from trl_grpo_ext.compare import RunSpec, parse_variant, plan_group_sweep, plan_runs, replot, summarize

# Metrics that measure the machine, not the training: they may differ between two identical runs.
MACHINE_METRICS = {"step_time", "peak_memory_mb"}


def test_parse_variant_reads_yaml_scalars():
    assert parse_variant("rloo:advantage_estimator=rloo,beta=0.04,kl_clamp=null,use_vllm=false") == (
        "rloo",
        {"advantage_estimator": "rloo", "beta": 0.04, "kl_clamp": None, "use_vllm": False},
    )
    assert parse_variant("plain") == ("plain", {})


@pytest.mark.parametrize("bad", ["stock", ":beta=0.1", "x:beta", "x:=1", "a=b"])
def test_parse_variant_rejects_malformed_text_naming_it(bad):
    with pytest.raises(ValueError, match="--variant"):
        parse_variant(bad)


def test_plan_runs_puts_stock_first_and_common_settings_everywhere():
    runs = plan_runs([("k2", {"kl_estimator": "k2"})], {"beta": 0.04}, max_steps=7, prompts_per_step=4, seed=3)
    assert [(r.name, r.trainer, r.overrides) for r in runs] == [
        ("stock", "stock", {"beta": 0.04}),
        ("k2", "ext", {"beta": 0.04, "kl_estimator": "k2"}),
    ]
    assert all((r.max_steps, r.prompts_per_step, r.seed) == (7, 4, 3) for r in runs)


def test_group_sweep_spends_the_same_rollout_budget_for_every_group_size():
    runs = plan_group_sweep([2, 4, 8, 16], [("ext", {})], {}, rollouts=1024, prompts_per_step=8, seed=0)
    assert [r.name for r in runs[:4]] == ["stock-G2", "ext-G2", "stock-G4", "ext-G4"]
    for run in runs:
        group_size = run.overrides["num_generations"]
        assert run.max_steps == 1024 // (group_size * 8)
        assert run.max_steps * group_size * run.prompts_per_step == 1024
    with pytest.raises(ValueError, match="group size 1"):
        plan_group_sweep([1], [], {}, rollouts=64, prompts_per_step=8, seed=0)


def rows(rewards, kl=None, step_times=None, memory=None):
    out = []
    for i, reward in enumerate(rewards):
        row = {"step": i + 1, "rollouts": (i + 1) * 32, "reward": reward, "entropy": 2.0 - 0.1 * i}
        row["step_time"] = step_times[i] if step_times else 0.5
        row["peak_memory_mb"] = memory[i] if memory else 100.0
        if kl is not None:
            row["kl"] = kl[i]
        out.append(row)
    return out


def test_summarize_uses_a_tenth_of_the_run_as_window():
    rewards = [0.0, 0.1, 0.2, 0.3, 0.4, 0.9, 0.6, 0.7, 0.8, 0.5, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
    kl = [0.01 * i for i in range(20)]
    s = summarize(rows(rewards, kl=kl, step_times=[float(i) for i in range(20)], memory=[10.0] * 19 + [50.0]))
    # window = 20 // 10 = 2: final = mean of the last two values; best = highest mean of two consecutive values.
    assert math.isclose(s["final_reward"], (0.9 + 1.0) / 2)
    assert math.isclose(s["best_reward"], (0.9 + 1.0) / 2)
    assert math.isclose(s["kl"], (0.18 + 0.19) / 2)
    assert math.isclose(s["entropy"], ((2.0 - 1.8) + (2.0 - 1.9)) / 2)
    assert s["step_time_s"] == 10.0  # median of 0..19 (upper middle)
    assert (s["peak_memory_mb"], s["steps"], s["rollouts"]) == (50.0, 20, 640)


def test_summarize_best_reward_is_the_best_window_not_the_last():
    s = summarize(rows([0.1, 0.8, 0.9, 0.2, 0.1]), window=2)
    assert math.isclose(s["best_reward"], 0.85) and math.isclose(s["final_reward"], 0.15)
    assert s["kl"] is None


def write_results(directory: Path, runs: dict[str, tuple[str, dict, list[dict]]]) -> None:
    manifest = {"model": "unused", "runs": []}
    for name, (trainer, overrides, logged) in runs.items():
        manifest["runs"].append(vars(RunSpec(name, trainer, overrides)))
        (directory / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in logged))
    (directory / "manifest.json").write_text(json.dumps(manifest))


def test_replot_builds_the_table_and_plots_from_the_jsonl_files_alone(tmp_path):
    write_results(
        tmp_path,
        {
            "stock": ("stock", {}, rows([0.1] * 10, kl=[0.0] * 10)),
            "k2": ("ext", {"kl_estimator": "k2"}, rows([0.1] * 9 + [0.7], kl=[0.5] * 10, memory=[123.4] * 10)),
        },
    )
    table = replot(tmp_path)
    assert (tmp_path / "results.md").read_text() == table
    lines = table.strip().splitlines()
    assert lines[0].startswith("| run | trainer | settings | steps | final reward | best reward | KL | entropy |")
    assert lines[2] == "| stock | stock | defaults | 10 | 0.1000 | 0.1000 | 0.0000 | 1.1000 | 0.5000 | 100 |"
    assert lines[3] == "| k2 | ext | kl_estimator=k2 | 10 | 0.7000 | 0.7000 | 0.5000 | 1.1000 | 0.5000 | 123 |"
    for png in ("reward.png", "kl.png", "rollouts.png"):
        assert (tmp_path / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_replot_skips_the_kl_plot_when_no_run_logged_kl(tmp_path):
    write_results(tmp_path, {"stock": ("stock", {}, rows([0.2, 0.3]))})
    assert "| n/a |" in replot(tmp_path)
    assert (tmp_path / "reward.png").exists() and not (tmp_path / "kl.png").exists()


def run_compare(*args: str) -> str:
    command = [sys.executable, "-c", "import sys; from trl_grpo_ext.cli import main; sys.exit(main())", "compare"]
    result = subprocess.run([*command, *args], capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-5000:]
    return result.stdout


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.slow
def test_default_variant_logs_exactly_what_stock_logs(tmp_path):
    out = run_compare(
        "--max_steps", "3", "--prompts_per_step", "4", "--set", "beta=0.04", "--output_dir", str(tmp_path)
    )
    stock, ext = read_jsonl(tmp_path / "stock.jsonl"), read_jsonl(tmp_path / "ext.jsonl")
    assert len(stock) == len(ext) == 3
    for stock_row, ext_row in zip(stock, ext):
        shared = (stock_row.keys() & ext_row.keys()) - MACHINE_METRICS
        assert {"reward", "kl", "entropy", "loss"} <= shared
        assert {k: stock_row[k] for k in shared} == {k: ext_row[k] for k in shared}
    table = (tmp_path / "results.md").read_text()
    assert table in out
    stock_line, ext_line = (line for line in table.splitlines() if line.startswith(("| stock ", "| ext ")))
    # Reward, best reward, KL and entropy columns agree; step time and memory are the machine's.
    assert stock_line.split("|")[4:9] == ext_line.split("|")[4:9]
    for png in ("reward.png", "kl.png", "rollouts.png"):
        assert (tmp_path / png).exists()


@pytest.mark.slow
def test_group_sweep_writes_one_run_per_group_size_on_the_same_budget(tmp_path):
    run_compare(
        "--group_sizes", "2", "4", "--rollouts", "32", "--prompts_per_step", "4", "--output_dir", str(tmp_path)
    )  # fmt: skip
    for name, steps in [("stock-G2", 4), ("ext-G2", 4), ("stock-G4", 2), ("ext-G4", 2)]:
        logged = read_jsonl(tmp_path / f"{name}.jsonl")
        assert [r["step"] for r in logged] == list(range(1, steps + 1))
        assert logged[-1]["rollouts"] == 32
    assert (tmp_path / "rollouts.png").exists()
