"""examples/demo.py: the outputs it promises, and (slow) that the reward really rises from chance to at least 0.6."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
SUMMARY = re.compile(
    r"Mean reward (?P<start>[\d.]+) -> (?P<final>[\d.]+) \(first/last (?P<window>\d+) steps\) in (?P<steps>\d+) steps"
)

HELD_OUT = re.compile(
    r"Held-out pass@1 \(22 problems never trained on, 16 samples each, 95% bootstrap interval\): "
    r"(?P<before_mean>[\d.]+) \[(?P<before_lo>[\d.]+), (?P<before_hi>[\d.]+)\] -> "
    r"(?P<after_mean>[\d.]+) \[(?P<after_lo>[\d.]+), (?P<after_hi>[\d.]+)\]"
)


def run_demo(tmp_path: Path, *args: str) -> tuple[re.Match, list[dict]]:
    command = [sys.executable, str(REPO / "examples" / "demo.py"), "--output_dir", str(tmp_path), *args]
    env = {**os.environ, "TRL_GRPO_EXT_CACHE": str(tmp_path / "cache")}
    result = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-5000:]
    summary = SUMMARY.search(result.stdout)
    assert summary, result.stdout[-2000:]
    assert "GRPO" in result.stderr and "step" in result.stderr  # the progress bar (tqdm writes to stderr)
    assert (tmp_path / "reward_curve.png").read_bytes()[:8] == PNG_MAGIC
    held_out = HELD_OUT.search(result.stdout)
    assert held_out, result.stdout[-2000:]
    for figure in ("before", "after"):
        low, mean, high = (float(held_out[f"{figure}_{part}"]) for part in ("lo", "mean", "hi"))
        assert 0.0 <= low <= mean <= high <= 1.0
    assert (tmp_path / "model" / "config.json").exists()  # for trl-grpo-ext evaluate --model
    logged = [json.loads(line) for line in (tmp_path / "log.jsonl").read_text().splitlines()]
    return summary, logged


@pytest.mark.slow
def test_demo_writes_log_plot_and_a_summary_consistent_with_its_log(tmp_path):
    summary, logged = run_demo(tmp_path, "--max_steps", "3", "--prompts_per_step", "4")
    assert [row["step"] for row in logged] == [1, 2, 3]
    rewards = [row["reward"] for row in logged]
    assert all(0.0 <= r <= 1.0 for r in rewards)
    mean = sum(rewards) / 3
    assert int(summary["steps"]) == 3 and int(summary["window"]) == 3
    assert float(summary["start"]) == pytest.approx(mean, abs=0.005)
    assert float(summary["final"]) == pytest.approx(mean, abs=0.005)


@pytest.mark.slow
def test_demo_learns_from_chance_to_at_least_0_6(tmp_path):
    # The demo's defaults: a fixed number of steps and no time cap, so a loaded CI machine gets the same result.
    summary, logged = run_demo(tmp_path)
    window = int(summary["window"])
    start = sum(r["reward"] for r in logged[:window]) / window
    final = sum(r["reward"] for r in logged[-window:]) / window
    assert start < 0.2, "the format warm-up must leave the policy near chance (0.1)"
    assert final >= 0.6
    assert float(summary["final"]) == pytest.approx(final, abs=0.005)


@pytest.mark.slow
def test_max_seconds_caps_the_run_and_says_so(tmp_path):
    summary, logged = run_demo(tmp_path, "--max_seconds", "0.001", "--prompts_per_step", "4")
    assert int(summary["steps"]) == 1 and len(logged) == 1  # the cap is checked after each step
