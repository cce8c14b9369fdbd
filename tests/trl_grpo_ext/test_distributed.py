"""Several processes: each computes its advantages from the rewards gathered across all processes, exactly as stock
does, so the concatenated slices equal what one process computes from the same rewards."""

from __future__ import annotations

import json

import pytest
import torch
from launch import launch_two_processes as launch

from trl_grpo_ext.trainer.advantages import compute_advantages, estimator_properties


def launch_two_processes(tmp_path, model_dir, estimator):
    launch("record_advantages.py", str(tmp_path), model_dir, estimator)
    return [json.loads((tmp_path / f"rank{rank}.json").read_text()) for rank in (0, 1)]


@pytest.mark.slow
@pytest.mark.parametrize("estimator", ["grpo", "rloo", "batch_std", "opo", "reinforce_pp"])
def test_two_processes_compute_the_advantages_of_one(tmp_path, tiny_model_dir, estimator):
    rank0, rank1 = launch_two_processes(tmp_path, tiny_model_dir, estimator)
    assert len(rank0) == len(rank1) == 2
    for step0, step1 in zip(rank0, rank1):
        assert (step0["num_processes"], step0["process_index"], step1["process_index"]) == (2, 0, 1)
        assert step0["rewards"] == step1["rewards"], "both processes see the same gathered rewards"
        rewards = torch.tensor(step0["rewards"])
        assert rewards.numel() == 8 and len(step0["advantages"]) == 4
        lengths = torch.tensor(step0["lengths"]) if estimator_properties(estimator).needs_lengths else None
        one_process = compute_advantages(rewards, group_size=4, estimator=estimator, lengths=lengths)
        two_processes = torch.tensor(step0["advantages"] + step1["advantages"])
        torch.testing.assert_close(two_processes, one_process, rtol=0, atol=0)
        assert two_processes.abs().sum() > 0
