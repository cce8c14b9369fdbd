"""benchmarks/gpu_suite.sh --dry-run on CPU: every step's command is printed and every entry point parses the
arguments the suite gives it, so the script a GPU session runs as is has not rotted (docs/gpu.md)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SUITE = REPO / "benchmarks" / "gpu_suite.sh"
STEPS = [
    "preflight",
    "parity",
    "memory",
    "overhead",
    "accelerate_single",
    "accelerate_fsdp2",
    "accelerate_zero2",
    "accelerate_zero3",
]


def run_suite(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(SUITE), *args], cwd=REPO, capture_output=True, text=True, timeout=300)


@pytest.mark.slow  # over 8 s idle: the default suite stays under 10 minutes
def test_dry_run_checks_every_step(tmp_path):
    result = run_suite("--dry-run", "--output_dir", str(tmp_path / "results"))
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    for step in STEPS:
        assert f"| {step} | ok (dry run) |" in result.stdout, step
    for entry_point in ["gpu_preflight.py", "gpu_parity.py", "gpu_memory.py", "trainer_overhead.py", "grpo_math.py"]:
        assert entry_point in result.stdout, entry_point
    assert not (tmp_path / "results").exists(), "a dry run writes no results"


def test_unknown_step_is_refused_with_the_valid_ones():
    result = run_suite("--dry-run", "--only", "parity,nonsense")
    assert result.returncode == 2
    assert "nonsense" in result.stderr and "accelerate_single" in result.stderr
