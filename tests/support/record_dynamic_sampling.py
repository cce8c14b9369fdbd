"""Launched by tests under several processes: trains GRPOExtTrainer with dynamic sampling and writes, per process
and step, every generation round as gathered from all processes and this process's slice of the batch trained on,
and the prompt stream's final state (retirements included).

Usage: accelerate launch ... record_dynamic_sampling.py OUTPUT_DIR MODEL_DIR ESTIMATOR
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from sampling_helpers import solved_when_even_reward
from trainer_helpers import make_config, prompt_dataset

from trl_grpo_ext import GRPOExtConfig, GRPOExtTrainer
from trl_grpo_ext.trainer.launch import end_training

SLICE_FIELDS = ("prompt_ids", "prompt_mask", "completion_ids", "completion_mask", "advantages", "ref_per_token_logps")


class RecordingTrainer(GRPOExtTrainer):
    steps: list[dict] = []
    rounds: list[dict] = []

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        generation_round = self._prompt_rounds.generation_round

        def recording_round(rows):
            gathered = generation_round(rows)
            self.rounds.append({field: value.cpu() for field, value in gathered.items()})
            return gathered

        self._prompt_rounds.generation_round = recording_round

    def _generate_and_score_completions(self, inputs):
        output = super()._generate_and_score_completions(inputs)
        if self.model.training:
            local = {field: output[field].cpu() for field in SLICE_FIELDS if field in output}
            self.steps.append({"rounds": self.rounds, "local": local, "items": output["num_items_in_batch"].cpu()})
            RecordingTrainer.rounds = []
        return output


def main(output_dir: str, model_dir: str, estimator: str) -> None:
    torch.set_num_threads(1)
    config = make_config(
        GRPOExtConfig,
        Path(output_dir) / "trainer",
        advantage_estimator=estimator,
        dynamic_sampling=True,
        per_device_train_batch_size=6,  # 3 groups of 4 per round: the middle one spans both processes
        num_generations=4,
        beta=0.04,
        max_steps=3,
        retire_solved_after=1,
    )
    trainer = RecordingTrainer(model_dir, [solved_when_even_reward], args=config, train_dataset=prompt_dataset())
    trainer.train()
    record = {"steps": trainer.steps, "stream": trainer._prompt_stream.state()}
    torch.save(record, Path(output_dir) / f"rank{trainer.accelerator.process_index}.pt")
    end_training(trainer)


if __name__ == "__main__":
    main(*sys.argv[1:4])
