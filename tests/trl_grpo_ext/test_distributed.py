"""Several processes: each computes its advantages from the rewards gathered across all processes, exactly as stock
does, so the concatenated slices equal what one process computes from the same rewards."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from trl_grpo_ext.advantages import compute_advantages

SUPPORT = Path(__file__).parents[1] / "support"


def launch_two_processes(tmp_path, model_dir, estimator):
    # --cpu would silently start one process; --multi_gpu with no GPU starts two on gloo.
    command = [
        sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2",
        "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no", "--main_process_port", "29517",
        str(SUPPORT / "record_advantages.py"), str(tmp_path), model_dir, estimator,
    ]  # fmt: skip
    env = {
        **os.environ,
        "PYTHONPATH": f"{SUPPORT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
        "OMP_NUM_THREADS": "1",
    }
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-4000:]
    return [json.loads((tmp_path / f"rank{rank}.json").read_text()) for rank in (0, 1)]


@pytest.mark.slow
@pytest.mark.parametrize("estimator", ["grpo", "rloo", "batch_std", "opo"])
def test_two_processes_compute_the_advantages_of_one(tmp_path, tiny_model_dir, estimator):
    rank0, rank1 = launch_two_processes(tmp_path, tiny_model_dir, estimator)
    assert len(rank0) == len(rank1) == 2
    for step0, step1 in zip(rank0, rank1):
        assert (step0["num_processes"], step0["process_index"], step1["process_index"]) == (2, 0, 1)
        assert step0["rewards"] == step1["rewards"], "both processes see the same gathered rewards"
        rewards = torch.tensor(step0["rewards"])
        assert rewards.numel() == 8 and len(step0["advantages"]) == 4
        lengths = torch.tensor(step0["lengths"]) if estimator == "opo" else None
        one_process = compute_advantages(rewards, group_size=4, estimator=estimator, lengths=lengths)
        two_processes = torch.tensor(step0["advantages"] + step1["advantages"])
        torch.testing.assert_close(two_processes, one_process, rtol=0, atol=0)
        assert two_processes.abs().sum() > 0
