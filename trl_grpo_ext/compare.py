"""Train stock `GRPOTrainer` and configured `GRPOExtTrainer` variants on the same seed, data and model, and compare.

Each run trains in a fresh subprocess (so peak memory and random state are its own) and writes the metrics it logs,
one JSON object per step, to `<output_dir>/<run>.jsonl`; `manifest.json` lists the runs. The Markdown table and the
PNG plots are made from those files only, so `replot(output_dir)` redraws them from a finished comparison.

Task: the built-in single-digit arithmetic set, scored by the `math` verifier, on the embedded tiny model after the
format-only warm-up of `arithmetic_format_warmup` (the same starting point as `examples/demo.py`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

STOCK = "stock"
# Settings shared by every run (those of examples/demo.py); a run's `overrides` replace them.
BASE_SETTINGS: dict[str, Any] = dict(
    learning_rate=1e-3,
    beta=0.04,
    lr_scheduler_type="constant",
    num_generations=8,
    max_completion_length=1,
    temperature=1.0,
    logging_steps=1,
    save_strategy="no",
    report_to="none",
    bf16=False,
    disable_tqdm=True,
)
TABLE_METRICS = ("reward", "kl", "entropy", "step_time")


@dataclass
class RunSpec:
    """One training run: `trainer` is "stock" (trl.GRPOTrainer) or "ext" (GRPOExtTrainer)."""

    name: str
    trainer: str
    overrides: dict[str, Any] = field(default_factory=dict)
    max_steps: int = 200
    prompts_per_step: int = 32
    seed: int = 0


def parse_variant(text: str) -> tuple[str, dict[str, Any]]:
    """`"rloo:advantage_estimator=rloo,beta=0.04"` -> ("rloo", {"advantage_estimator": "rloo", "beta": 0.04}).

    Values are read as YAML scalars (numbers, booleans, null, strings). A bare name is a variant with no overrides.
    """
    import yaml

    name, _, settings = text.partition(":")
    if not name or name == STOCK or "=" in name:
        raise ValueError(f"--variant {text!r}: write NAME or NAME:key=value,...; NAME must not be {STOCK!r}.")
    overrides = {}
    for item in filter(None, settings.split(",")):
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"--variant {text!r}: {item!r} is not key=value.")
        overrides[key.strip()] = yaml.safe_load(value)
    return name, overrides


def plan_runs(
    variants: list[tuple[str, dict]], common: dict, max_steps: int, prompts_per_step: int, seed: int
) -> list[RunSpec]:
    """Stock first, then each variant; `common` overrides apply to all of them (stock included)."""
    runs = [RunSpec(STOCK, "stock", dict(common), max_steps, prompts_per_step, seed)]
    for name, overrides in variants:
        runs.append(RunSpec(name, "ext", {**common, **overrides}, max_steps, prompts_per_step, seed))
    return runs


def plan_group_sweep(
    group_sizes: list[int],
    variants: list[tuple[str, dict]],
    common: dict,
    rollouts: int,
    prompts_per_step: int,
    seed: int,
) -> list[RunSpec]:
    """For each G and each run of `plan_runs`: the same budget of `rollouts` completions, G * prompts_per_step per step."""
    runs = []
    for group_size in group_sizes:
        if group_size < 2:
            raise ValueError(f"group size {group_size} must be >= 2 (GRPO needs two completions per prompt).")
        steps = max(1, rollouts // (group_size * prompts_per_step))
        for run in plan_runs(variants, {**common, "num_generations": group_size}, steps, prompts_per_step, seed):
            run.name = f"{run.name}-G{group_size}"
            runs.append(run)
    return runs


def prepare_model(output_dir: Path, seed: int, warmup_steps: int = 30) -> str:
    """The tiny model after the format-only warm-up, saved once so every run (and stock's reference model) loads it."""
    from trl_grpo_ext.datasets import arithmetic_format_warmup
    from trl_grpo_ext.tiny_model import build_tiny_model

    path = output_dir / f"model-seed{seed}"
    if not (path / "config.json").exists():
        model, tokenizer = build_tiny_model(seed=seed)
        arithmetic_format_warmup(model, tokenizer, steps=warmup_steps, seed=seed)
        model.save_pretrained(path)
        tokenizer.save_pretrained(path)
    return str(path)


def run_all(runs: list[RunSpec], output_dir: Path, threads: int = 1) -> None:
    """Train each run in its own subprocess; write `manifest.json` and one JSONL per run."""
    output_dir.mkdir(parents=True, exist_ok=True)
    model_path = prepare_model(output_dir, runs[0].seed)
    env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
    for i, run in enumerate(runs, 1):
        print(
            f"[{i}/{len(runs)}] {run.name}: {run.trainer} trainer, {run.max_steps} steps, {run.overrides}", flush=True
        )
        spec = json.dumps({"run": asdict(run), "model": model_path, "output_dir": str(output_dir), "threads": threads})
        subprocess.run([sys.executable, "-m", "trl_grpo_ext.compare", spec], env=env, check=True)
    manifest = {"model": model_path, "runs": [asdict(run) for run in runs]}
    (output_dir / "manifest.json").write_text(json.dumps(manifest, indent=2))


def train_one(run: RunSpec, model_path: str, output_dir: Path, threads: int) -> None:
    """Train one run in this process and write its logged metrics to `<output_dir>/<name>.jsonl`."""
    import warnings

    import torch
    import transformers
    from transformers import PrinterCallback
    from trl import GRPOConfig, GRPOTrainer

    from trl_grpo_ext import GRPOExtConfig, GRPOExtTrainer
    from trl_grpo_ext.datasets import arithmetic_dataset
    from trl_grpo_ext.verifiers import as_reward_function

    transformers.logging.set_verbosity_error()
    warnings.filterwarnings("ignore", module=r"(trl|transformers|accelerate|torch)(\.|$)")
    torch.set_num_threads(threads)
    settings = {**BASE_SETTINGS, **run.overrides}
    settings["per_device_train_batch_size"] = settings["num_generations"] * run.prompts_per_step
    config_cls, trainer_cls = (GRPOConfig, GRPOTrainer) if run.trainer == STOCK else (GRPOExtConfig, GRPOExtTrainer)
    config = config_cls(
        output_dir=str(output_dir / "trainer" / run.name), max_steps=run.max_steps, seed=run.seed, **settings
    )
    reward = as_reward_function("math", reference_column="answer")
    trainer = trainer_cls(
        model=model_path,
        reward_funcs=[reward],
        args=config,
        train_dataset=arithmetic_dataset(seed=run.seed),
    )
    recorder = metrics_recorder(output_dir / f"{run.name}.jsonl", config.num_generations * run.prompts_per_step)
    trainer.add_callback(recorder)
    trainer.remove_callback(PrinterCallback)  # the JSONL file has every log; the console gets one line per run
    try:
        trainer.train()
        last = [row for row in trainer.state.log_history if "reward" in row][-1]
        print(f"    {trainer.state.global_step} steps, last step's reward {last['reward']:.3f}", flush=True)
    finally:
        recorder.close()
        reward.verifier.close()


def metrics_recorder(path: Path, rollouts_per_step: int):
    """A TrainerCallback writing each training log as one JSON line, with the rollouts spent and the peak memory."""
    from transformers import TrainerCallback

    class MetricsRecorder(TrainerCallback):
        def __init__(self):
            self.file = open(path, "w")

        def on_log(self, args, state, control, logs=None, **kwargs):
            if not logs or "reward" not in logs:
                return  # the end-of-training summary
            row = {"step": state.global_step, "rollouts": state.global_step * rollouts_per_step, **logs}
            self.file.write(json.dumps({**row, "peak_memory_mb": peak_memory_mb()}) + "\n")
            self.file.flush()

        def close(self):
            self.file.close()

    return MetricsRecorder()


def peak_memory_mb() -> float:
    """Peak accelerator memory allocated by this process where there is one, else the process's peak RSS."""
    import torch

    if torch.cuda.is_available():
        return torch.cuda.max_memory_allocated() / 2**20
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB


def read_runs(output_dir: Path) -> list[tuple[dict, list[dict]]]:
    """(run spec, logged rows) for every run of the manifest, in order."""
    manifest = json.loads((output_dir / "manifest.json").read_text())
    runs = []
    for spec in manifest["runs"]:
        path = output_dir / f"{spec['name']}.jsonl"
        runs.append((spec, [json.loads(line) for line in path.read_text().splitlines() if line.strip()]))
    return runs


def summarize(rows: list[dict], window: int | None = None) -> dict[str, float | None]:
    """Final = mean over the last `window` steps (default: a tenth of the run, at least 1); best reward = the highest
    `window`-step moving average; step time = median seconds; peak memory = the largest recorded, in MB."""
    if not rows:
        return {}
    window = window or max(1, len(rows) // 10)

    def final(metric: str) -> float | None:
        values = [r[metric] for r in rows[-window:] if r.get(metric) is not None]
        return sum(values) / len(values) if values else None

    rewards = [r["reward"] for r in rows]
    moving = [sum(rewards[i - window : i]) / window for i in range(window, len(rewards) + 1)]
    step_times = sorted(r["step_time"] for r in rows if r.get("step_time") is not None)
    return {
        "final_reward": final("reward"),
        "best_reward": max(moving),
        "kl": final("kl"),
        "entropy": final("entropy"),
        "step_time_s": step_times[len(step_times) // 2] if step_times else None,
        "peak_memory_mb": max(r.get("peak_memory_mb", 0.0) for r in rows),
        "steps": rows[-1]["step"],
        "rollouts": rows[-1]["rollouts"],
    }


def markdown_table(runs: list[tuple[dict, list[dict]]]) -> str:
    header = "| run | trainer | settings | steps | final reward | best reward | KL | entropy | step time (s) | peak memory (MB) |"
    lines = [header, "|" + "---|" * header.count(" | ") + "---|"]
    for spec, rows in runs:
        s = summarize(rows)
        settings = ", ".join(f"{k}={v}" for k, v in spec["overrides"].items()) or "defaults"
        cells = [spec["name"], spec["trainer"], settings, s.get("steps")]
        cells += [_fmt(s.get(k)) for k in ("final_reward", "best_reward", "kl", "entropy", "step_time_s")]
        cells.append(_fmt(s.get("peak_memory_mb"), ".0f"))
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    return "\n".join(lines) + "\n"


def _fmt(value: float | None, spec: str = ".4f") -> str:
    return "n/a" if value is None else format(value, spec)


def moving_average(values: list[float], window: int) -> list[float]:
    """Mean of the last `window` values at each position (fewer at the start)."""
    return [
        sum(values[max(0, i - window + 1) : i + 1]) / len(values[max(0, i - window + 1) : i + 1])
        for i in range(len(values))
    ]


def plot_curves(runs: list[tuple[dict, list[dict]]], output_dir: Path) -> list[Path]:
    """reward.png and kl.png against steps (kl.png only when a run logged KL), rollouts.png against rollouts spent.
    Each run: its per-step values faint, their moving average over a tenth of the run solid (stock dashed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    plots = [("reward", "step", "reward.png"), ("kl", "step", "kl.png"), ("reward", "rollouts", "rollouts.png")]
    for metric, x_key, filename in plots:
        if not any(r.get(metric) is not None for _, rows in runs for r in rows):
            continue
        fig, ax = plt.subplots(figsize=(7, 4))
        for spec, rows in runs:
            points = [(r[x_key], r[metric]) for r in rows if r.get(metric) is not None]
            if not points:
                continue
            xs, ys = zip(*points)
            line = ax.plot(xs, moving_average(list(ys), max(1, len(ys) // 10)), label=spec["name"])[0]
            line.set_linestyle("--" if spec["trainer"] == STOCK else "-")
            ax.plot(xs, ys, color=line.get_color(), alpha=0.2, linewidth=0.8)
        xlabel = "rollouts spent" if x_key == "rollouts" else "step"
        ax.set(xlabel=xlabel, ylabel=metric, title=f"{metric} per {xlabel} (moving average over a tenth of each run)")
        ax.legend()
        fig.tight_layout()
        fig.savefig(output_dir / filename, dpi=110)
        plt.close(fig)
        written.append(output_dir / filename)
    return written


def replot(output_dir: str | os.PathLike) -> str:
    """Rebuild `results.md` and the PNG plots from the JSONL files of a finished comparison; returns the table."""
    output_dir = Path(output_dir)
    runs = read_runs(output_dir)
    table = markdown_table(runs)
    (output_dir / "results.md").write_text(table)
    plot_curves(runs, output_dir)
    return table


if __name__ == "__main__":  # one run, in a subprocess of `run_all`
    spec = json.loads(sys.argv[1])
    train_one(RunSpec(**spec["run"]), spec["model"], Path(spec["output_dir"]), spec["threads"])
