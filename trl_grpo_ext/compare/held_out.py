"""Held-out evaluation at the end of a comparison run: the trained policy on the task's held-out split (the built-in
task's fixed held-out fifth, or `eval_split` of `eval_dataset`), with the run's own generation settings and
verifiers, through the evaluation core. Writes `<output_dir>/<run_id>.eval.json` (main process)."""

from __future__ import annotations

import json
from pathlib import Path

from trl_grpo_ext.compare.plan import RunSpec, Task


def evaluate_held_out(trainer, task: Task, run: RunSpec, rewards: list, path: Path) -> None:
    """Evaluate the trained model on every process of the run (prompts split, results gathered once)."""
    from trl_grpo_ext.evaluation import EvalVerifier, evaluate_dataset
    from trl_grpo_ext.evaluation.sampling import TransformersSampler, generation_settings
    from trl_grpo_ext.evaluation.tasks import held_out_split, load_eval_rows

    split = held_out_split(task)
    if split is None:
        return
    _, rows = load_eval_rows(task, split, task.eval_max_prompts)
    model = trainer.accelerator.unwrap_model(trainer.model).eval()
    settings = generation_settings(run.settings)
    sampler = TransformersSampler(model, trainer.processing_class, settings, seed=run.seed)
    # The reward functions' own verifiers (already warm), in the order of reward_verifiers.
    verifiers = [
        EvalVerifier(name, reward.verifier, task.reference_column)
        for name, reward in zip(task.reward_verifiers, rewards)
    ]
    ks = sorted(set(task.eval_k))
    results, summary = evaluate_dataset(
        rows, sampler, verifiers, task.eval_num_samples, ks, seed=run.seed, show_progress=False,
        prompts_per_call=task.eval_prompts_per_call,
    )  # fmt: skip
    if trainer.accelerator.is_main_process:
        payload = {"split": split, "summary": summary, "per_prompt": [r.to_json() for r in results]}
        path.write_text(json.dumps(payload) + "\n")


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
