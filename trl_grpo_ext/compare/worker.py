"""One run of a comparison, in its own process: `python -m trl_grpo_ext.compare.worker SPEC_JSON`.

Started by `run.py` once per run (under `accelerate launch`, once per process of the launch). It trains stock
`GRPOTrainer` or `GRPOExtTrainer` and writes every logged step, one JSON object per line, to `<output_dir>/<run>.jsonl`
(main process only), with the completions spent so far (`rollouts`) and the peak memory.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from trl_grpo_ext.compare.held_out import evaluate_held_out
from trl_grpo_ext.compare.plan import STOCK, RunSpec, Task, import_verifier_modules, run_config_kwargs


def build_rewards(task: Task) -> list:
    from trl_grpo_ext.verifiers import as_reward_function

    import_verifier_modules(task)
    return [as_reward_function(name, reference_column=task.reference_column) for name in task.reward_verifiers]


def load_task_dataset(task: Task, seed: int):
    """The built-in arithmetic set, or the task's dataset with a `prompt` column (a chat: the system prompt, then the
    question as the user's message) and its reference column. `dataset_name`: a folder written by `save_to_disk`,
    a folder of data files or a Hub name (`load_dataset`)."""
    from trl_grpo_ext.datasets import arithmetic_dataset

    if task.dataset_name is None:  # the built-in task never trains on its held-out problems
        return arithmetic_dataset(seed=seed, split="train")
    return as_prompt_dataset(load_raw_dataset(task, task.dataset_train_split), task)


def load_raw_dataset(task: Task, split: str):
    """The task's dataset as stored, split `split` (a `save_to_disk` folder holding one dataset has no splits), with
    its prompt and reference columns checked."""
    from datasets import DatasetDict, load_dataset, load_from_disk

    path = Path(task.dataset_name)
    saved = any((path / marker).exists() for marker in ("dataset_info.json", "state.json", "dataset_dict.json"))
    if path.is_dir() and saved:
        dataset = load_from_disk(str(path))
        if isinstance(dataset, DatasetDict):
            dataset = dataset[split]
    else:
        dataset = load_dataset(task.dataset_name, task.dataset_config, split=split)
    missing = [c for c in (task.prompt_column, task.reference_column) if c not in dataset.column_names]
    if missing:
        raise ValueError(
            f"dataset {task.dataset_name!r} has no column(s) {missing}; its columns are {dataset.column_names}. "
            "Set prompt_column and reference_column in the --config file."
        )
    return dataset


def as_prompt_dataset(dataset, task: Task):
    """Rows {"prompt": ..., <reference column>: ...}: a text prompt becomes a chat (system prompt, then the user's
    question); a prompt that is already a conversation is kept."""

    def reshape(row: dict) -> dict:
        prompt = row[task.prompt_column]
        if isinstance(prompt, str):
            system = [{"role": "system", "content": task.system_prompt}] if task.system_prompt else []
            prompt = [*system, {"role": "user", "content": prompt}]
        return {"prompt": prompt, task.reference_column: row[task.reference_column]}

    return dataset.map(reshape, remove_columns=dataset.column_names)


def train_one(run: RunSpec, task: Task, model: str, output_dir: Path, threads: int) -> None:
    """Train one run in this process and write its logged metrics to `<output_dir>/<run_id>.jsonl`."""
    import warnings

    import torch
    import transformers
    from transformers import PrinterCallback
    from trl import GRPOConfig, GRPOTrainer

    from trl_grpo_ext import GRPOExtConfig, GRPOExtTrainer
    from trl_grpo_ext.launch import end_training

    transformers.logging.set_verbosity_error()
    warnings.filterwarnings("ignore", module=r"(trl|transformers|accelerate|torch)(\.|$)")
    torch.set_num_threads(threads)
    config_cls, trainer_cls = (GRPOConfig, GRPOTrainer) if run.trainer == STOCK else (GRPOExtConfig, GRPOExtTrainer)
    config = config_cls(**run_config_kwargs(run, output_dir))
    rewards = build_rewards(task)
    trainer = trainer_cls(
        model=model, reward_funcs=rewards, args=config, train_dataset=load_task_dataset(task, run.seed)
    )
    recorder = metrics_recorder(output_dir / f"{run.run_id}.jsonl", generation_schedule(config))
    trainer.add_callback(recorder)
    trainer.remove_callback(PrinterCallback)  # the JSONL file has every log
    try:
        trainer.train()
        evaluate_held_out(trainer, task, run, rewards, output_dir / f"{run.run_id}.eval.json")
    finally:
        recorder.close()
        for reward in rewards:
            reward.verifier.close()
    end_training(trainer)


def generation_schedule(config) -> tuple[int, int]:
    """(completions per generation, micro-steps per generation): TRL generates `generation_batch_size` completions
    (all processes) every `steps_per_generation * num_iterations` micro-steps."""
    return config.generation_batch_size, config.steps_per_generation * config.num_iterations


def completions_generated(step: int, accumulation: int, schedule: tuple[int, int]) -> int:
    """Completions generated by the end of optimizer step `step`, for a trainer that logs no count of its own."""
    per_generation, micro_steps = schedule
    return -(-step * accumulation // micro_steps) * per_generation


def metrics_recorder(path: Path, schedule: tuple[int, int]):
    """A TrainerCallback writing each training log of the main process as one JSON line, with the completions
    generated so far (`rollouts`: the trainer's `num_completions_generated` where it logs one, as with dynamic
    sampling, else `completions_generated`) and the peak memory."""
    from transformers import TrainerCallback

    class MetricsRecorder(TrainerCallback):
        file = None

        def on_log(self, args, state, control, logs=None, **kwargs):
            if not state.is_world_process_zero or not logs or "reward" not in logs:
                return  # another process, or the end-of-training summary
            if self.file is None:
                self.file = open(path, "w")
            rollouts = logs.get("num_completions_generated")
            if rollouts is None:
                rollouts = completions_generated(state.global_step, args.gradient_accumulation_steps, schedule)
            row = {"step": state.global_step, "rollouts": int(rollouts), **logs}
            self.file.write(json.dumps({**row, "peak_memory_mb": peak_memory_mb()}) + "\n")
            self.file.flush()

        def close(self):
            if self.file is not None:
                self.file.close()

    return MetricsRecorder()


def peak_memory_mb() -> float:
    """Peak accelerator memory allocated by this process where there is one, else the process's peak RSS."""
    import torch

    if torch.cuda.is_available():
        return torch.cuda.max_memory_allocated() / 2**20
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB


if __name__ == "__main__":
    spec = json.loads(sys.argv[1])
    train_one(RunSpec(**spec["run"]), Task(**spec["task"]), spec["model"], Path(spec["output_dir"]), spec["threads"])
