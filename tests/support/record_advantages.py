"""Launched by tests under several processes: trains GRPOExtTrainer for two steps and writes, per process and step,
the rewards gathered from all processes, the completion lengths and this process's slice of advantages.

Usage: accelerate launch ... record_advantages.py OUTPUT_DIR MODEL_DIR ESTIMATOR
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch
from trainer_helpers import digit_reward, make_config, prompt_dataset

from trl_grpo_ext import GRPOExtConfig, GRPOExtTrainer
from trl_grpo_ext.trainer.launch import end_training


class RecordingTrainer(GRPOExtTrainer):
    records: list[dict] = []

    def _generate_and_score_completions(self, inputs):
        output = super()._generate_and_score_completions(inputs)
        self.records.append(
            {
                "process_index": self.accelerator.process_index,
                "num_processes": self.accelerator.num_processes,
                "rewards": self._gathered_rewards_per_func[:, 0].tolist(),
                "lengths": self.accelerator.gather(output["completion_mask"].sum(dim=1)).tolist(),
                "advantages": output["advantages"].tolist(),
            }
        )
        return output


def main(output_dir: str, model_dir: str, estimator: str) -> None:
    torch.set_num_threads(1)
    config = make_config(
        GRPOExtConfig,
        Path(output_dir) / "trainer",
        advantage_estimator=estimator,
        per_device_train_batch_size=4,
        num_generations=4,
        max_steps=2,
    )
    trainer = RecordingTrainer(model_dir, [digit_reward], args=config, train_dataset=prompt_dataset())
    trainer.train()
    path = Path(output_dir) / f"rank{trainer.accelerator.process_index}.json"
    path.write_text(json.dumps(trainer.records))
    end_training(trainer)


if __name__ == "__main__":
    main(*sys.argv[1:4])
