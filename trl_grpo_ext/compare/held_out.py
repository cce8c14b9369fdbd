"""Held-out evaluation of a comparison: the policy on the task's held-out split (the built-in task's fixed held-out
fifth, or `eval_split` of `eval_dataset`), with the run's own generation settings and verifiers, through the
evaluation core.

A run is evaluated at the end of training (`<run_id>.eval.json`) and, with `--eval_every_completions K`, each time it
has generated another K completions (`<run_id>.eval@<K*m>.json`); the base model once per seed
(`base-seed<s>.eval.json`), with the same sampling seeds, so that every curve starts from the same point. Each file
holds the completions the run had generated when it was evaluated. Written by the main process.
"""

from __future__ import annotations

import json
from pathlib import Path

from trl_grpo_ext.compare.plan import RunSpec, Task

BASE = "base"


def eval_path(output_dir: Path, run_id: str, point: int | None = None) -> Path:
    """The evaluation file of `run_id` at completion budget `point`, or at the end of its training (None)."""
    return output_dir / (f"{run_id}.eval.json" if point is None else f"{run_id}.eval@{point}.json")


def base_run_id(seed: int) -> str:
    return f"{BASE}-seed{seed}"


def evaluate_model(model, tokenizer, task: Task, settings: dict, seed: int, verifiers: list, is_main: bool) -> dict:
    """Evaluate `model` on every process (prompts split, results gathered once); the payload of an evaluation file
    (on every process; only `is_main` should write it)."""
    from trl_grpo_ext.evaluation import evaluate_dataset
    from trl_grpo_ext.evaluation.sampling import TransformersSampler, generation_settings
    from trl_grpo_ext.evaluation.tasks import held_out_split, load_eval_rows

    split = held_out_split(task)
    _, rows = load_eval_rows(task, split, task.eval_max_prompts)
    sampler = TransformersSampler(model.eval(), tokenizer, generation_settings(settings), seed=seed)
    ks = sorted({1, *task.eval_k})  # pass@1 draws every curve
    results, summary = evaluate_dataset(
        rows, sampler, verifiers, task.eval_num_samples, ks, seed=seed, show_progress=False,
        prompts_per_call=task.eval_prompts_per_call,
    )  # fmt: skip
    return {"split": split, "summary": summary, "per_prompt": [r.to_json() for r in results]}


def reward_verifiers(task: Task, rewards: list) -> list:
    """The reward functions' own verifiers (already warm), in the order of reward_verifiers."""
    from trl_grpo_ext.evaluation import EvalVerifier

    return [
        EvalVerifier(name, reward.verifier, task.reference_column)
        for name, reward in zip(task.reward_verifiers, rewards)
    ]


def evaluate_held_out(trainer, task: Task, run: RunSpec, rewards: list, path: Path, completions: int, step: int):
    """Evaluate the trainer's model now, write `path` (main process) with the completions generated so far and the
    step, and put the model back in the mode it was in. Torch's random state is restored afterwards: evaluating in
    the middle of a run leaves its training draws as they would have been."""
    import torch

    from trl_grpo_ext.evaluation.tasks import held_out_split

    if held_out_split(task) is None:
        return
    model = trainer.accelerator.unwrap_model(trainer.model)
    training = model.training
    devices = [torch.cuda.current_device()] if torch.cuda.is_available() else []
    with torch.random.fork_rng(devices=devices):
        payload = evaluate_model(
            model, trainer.processing_class, task, run.settings, run.seed, reward_verifiers(task, rewards),
            trainer.accelerator.is_main_process,
        )  # fmt: skip
    model.train(training)
    if trainer.accelerator.is_main_process:
        path.write_text(json.dumps({**payload, "completions": completions, "step": step}) + "\n")


def evaluate_base(task: Task, model_path: str, settings: dict, seed: int, rewards: list, path: Path) -> None:
    """The base model's evaluation file, at 0 completions (one process)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(model_path)
    tokenizer = AutoTokenizer.from_pretrained(model_path)
    payload = evaluate_model(model, tokenizer, task, settings, seed, reward_verifiers(task, rewards), True)
    path.write_text(json.dumps({**payload, "completions": 0, "step": 0}) + "\n")


def read_held_out(path: Path) -> dict[str, float]:
    """{"eval_pass@k": mean, "eval_maj@k": mean (k > 1)} of a run's evaluation file; {} when there is none."""
    if not path.exists():
        return {}
    summary = json.loads(path.read_text())["summary"]
    out = {}
    for key, stat in summary.items():
        if isinstance(stat, dict) and (key.startswith("pass@") or (key.startswith("maj@") and key != "maj@1")):
            out[f"eval_{key}"] = stat["mean"]
    return out


def read_curve(output_dir: Path, run_id: str, points: list[int]) -> list[dict]:
    """The run's evaluations in order of completions: {"point", "completions", "per_prompt_pass@1"} for each budget
    point evaluated, then the end of training (point None). Points without a file are left out."""
    curve = []
    for point in [*points, None]:
        path = eval_path(output_dir, run_id, point)
        if path.exists():
            payload = json.loads(path.read_text())
            per_prompt = [row["pass@1"] for row in payload["per_prompt"]]
            curve.append({"point": point, "completions": payload.get("completions"), "per_prompt_pass@1": per_prompt})
    return curve
