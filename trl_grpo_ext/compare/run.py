"""Running a comparison: each run in a fresh process, resumable, under one progress bar.

`run_all` trains the runs of a plan that are not finished yet. A run is finished when `<run_id>.done.json` holds its
spec: a second invocation with the same plan trains nothing, and a changed run (other settings or steps) is trained
again. Under `accelerate launch`, every process of the launch runs `run_all` on the same plan and starts its part of
each run, which inherits the launch's process-group variables (on a port of its own per run); only the main process
writes files and prints.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

from trl_grpo_ext.compare.plan import RunSpec, Task

# A launcher starts one run and returns its process; tests replace it.
Launcher = Callable[[RunSpec, dict, Path, dict], "subprocess.Popen"]


def launch_process(run: RunSpec, spec: dict, log_path: Path, env: dict) -> subprocess.Popen:
    """Start `trl_grpo_ext.compare.worker` for one run, its output going to `log_path`."""
    with open(log_path, "w") as log:
        command = [sys.executable, "-m", "trl_grpo_ext.compare.worker", json.dumps(spec)]
        return subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)


def process_rank() -> tuple[int, int]:
    """(rank, world size) of this process under `accelerate launch` (or torchrun); (0, 1) otherwise."""
    return int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))


def is_finished(run: RunSpec, output_dir: Path) -> bool:
    marker = output_dir / f"{run.run_id}.done.json"
    return marker.exists() and json.loads(marker.read_text()).get("run") == json.loads(json.dumps(asdict(run)))


def prepare_model(task: Task, output_dir: Path, seed: int, warmup_steps: int = 30) -> str:
    """The task's model; for the built-in task, the tiny model after the format-only warm-up, saved once per seed
    so that every run of that seed (and stock's reference model) loads it. Other processes of a launch wait."""
    if not task.builtin:
        return task.model_name_or_path or _tiny_model()
    path = output_dir / f"model-seed{seed}"
    if process_rank()[0] == 0 and not (path / "config.json").exists():
        from transformers.utils.logging import disable_progress_bar

        from trl_grpo_ext.data.datasets import arithmetic_format_warmup
        from trl_grpo_ext.models.tiny_model import build_tiny_model

        disable_progress_bar()  # "Writing model shards" would break the comparison's own progress bar
        model, tokenizer = build_tiny_model(seed=seed)
        arithmetic_format_warmup(model, tokenizer, steps=warmup_steps, seed=seed)
        tmp = path.with_name(path.name + ".tmp")
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        os.replace(tmp, path)
    deadline = time.monotonic() + 600
    while not (path / "config.json").exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"the main process did not save the warmed-up model to {path} within 600 s")
        time.sleep(0.5)
    return str(path)


def _tiny_model() -> str:
    from trl_grpo_ext.models.tiny_model import tiny_model_path

    return tiny_model_path()


def run_all(
    runs: list[RunSpec],
    task: Task,
    output_dir: Path,
    threads: int = 1,
    launcher: Launcher = launch_process,
) -> list[RunSpec]:
    """Train every unfinished run of the plan, one at a time; write `manifest.json`. Returns the runs trained."""
    from tqdm.auto import tqdm

    rank, world_size = process_rank()
    main = rank == 0
    output_dir.mkdir(parents=True, exist_ok=True)
    (output_dir / "logs").mkdir(exist_ok=True)
    todo = [run for run in runs if not is_finished(run, output_dir)]
    if main:
        manifest = {"task": asdict(task), "runs": [asdict(run) for run in runs]}
        (output_dir / "manifest.json").write_text(json.dumps(manifest, indent=2))
        done = len(runs) - len(todo)
        print(f"{len(runs)} runs planned, {done} already finished in {output_dir}, {len(todo)} to train.", flush=True)
    total = sum(run.max_steps for run in runs)
    bar = tqdm(
        total=total,
        initial=total - sum(run.max_steps for run in todo),
        unit="step",
        desc="compare",
        disable=not main or not todo,
        dynamic_ncols=True,
    )
    env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
    base_port = int(os.environ.get("MASTER_PORT", 29500))
    evaluate_base_models(runs, task, output_dir, threads, launcher, env)
    try:
        for run in todo:
            index = runs.index(run)
            if world_size > 1:
                # A fresh rendezvous port per run (the previous run's may still be closing), on which the run's rank 0
                # hosts the store: torchrun's agent store, the default, listens only on the launch's own port.
                env["MASTER_PORT"] = str(base_port + 1 + index)
                env["TORCHELASTIC_USE_AGENT_STORE"] = "False"
            seconds = train_run(run, task, output_dir, threads, launcher, env, bar if main else None)
            if main:
                (output_dir / f"{run.run_id}.done.json").write_text(
                    json.dumps({"run": asdict(run), "wall_s": seconds}, indent=2)
                )
                bar.write(finished_line(run, output_dir, seconds, index, len(runs)))
    finally:
        bar.close()
    return todo


def evaluate_base_models(runs: list[RunSpec], task: Task, output_dir: Path, threads: int, launcher, env) -> None:
    """Once per seed, when the runs are evaluated along the way: the untrained model on the held-out split, with the
    seed's first run's generation settings (`base-seed<s>.eval.json`), in one process; the others of a launch wait."""
    from trl_grpo_ext.compare.held_out import base_run_id, eval_path
    from trl_grpo_ext.compare.plan import STOCK, without_distributed_env
    from trl_grpo_ext.evaluation.tasks import held_out_split

    if held_out_split(task) is None or not any(run.eval_points for run in runs):
        return
    first = {}
    for run in runs:
        first.setdefault(run.seed, run)
    for seed, run in first.items():
        path = eval_path(output_dir, base_run_id(seed))
        if process_rank()[0] == 0 and not path.exists():
            base = RunSpec("base", STOCK, settings=run.settings, max_steps=0, seed=seed)
            spec = {"run": asdict(base), "task": asdict(task), "model": prepare_model(task, output_dir, seed),
                    "output_dir": str(output_dir), "threads": threads, "base": True}  # fmt: skip
            alone = {k: v for k, v in env.items() if not without_distributed_env.hides(k)}
            log_path = output_dir / "logs" / f"{base_run_id(seed)}.log"
            process = launcher(base, spec, log_path, alone)
            if process.wait() != 0:
                tail = log_path.read_text()[-4000:] if log_path.exists() else ""
                raise RuntimeError(f"the base model's evaluation, seed {seed}, failed; its log, {log_path}:\n{tail}")
        wait_for(path)


def wait_for(path: Path, timeout_s: float = 3600) -> None:
    """Until the main process of a launch has written `path`."""
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"the main process did not write {path} within {timeout_s:.0f} s")
        time.sleep(0.5)


def train_run(run, task, output_dir, threads, launcher, env, bar) -> float:
    """Start one run and wait for it, advancing `bar` (main process) as its JSONL file grows."""
    jsonl = output_dir / f"{run.run_id}.jsonl"
    if bar is not None:
        jsonl.unlink(missing_ok=True)  # an interrupted earlier attempt
    spec = {
        "run": asdict(run),
        "task": asdict(task),
        "model": prepare_model(task, output_dir, run.seed),
        "output_dir": str(output_dir),
        "threads": threads,
    }
    log_path = output_dir / "logs" / f"{run.run_id}{'' if process_rank()[0] == 0 else f'.rank{process_rank()[0]}'}.log"
    start = time.monotonic()
    process = launcher(run, spec, log_path, env)
    shown = 0
    while process.poll() is None:
        time.sleep(0.5)
        shown = _advance(bar, jsonl, shown)
    _advance(bar, jsonl, shown)
    if bar is not None:
        bar.update(run.max_steps - min(run.max_steps, _count_lines(jsonl)))  # a run that logged fewer steps
    if process.returncode != 0:
        tail = log_path.read_text()[-4000:] if log_path.exists() else ""
        raise RuntimeError(f"run {run.run_id} failed (exit status {process.returncode}); its log, {log_path}:\n{tail}")
    return time.monotonic() - start


def _count_lines(path: Path) -> int:
    try:
        with open(path, "rb") as file:
            return sum(1 for _ in file)
    except FileNotFoundError:
        return 0


def _advance(bar, jsonl: Path, shown: int) -> int:
    if bar is None:
        return shown
    lines = _count_lines(jsonl)
    if lines > shown:
        bar.update(lines - shown)
    return max(lines, shown)


def finished_line(run: RunSpec, output_dir: Path, seconds: float, index: int, total: int) -> str:
    rows = [json.loads(line) for line in (output_dir / f"{run.run_id}.jsonl").read_text().splitlines() if line]
    window = max(1, len(rows) // 10)
    rewards = [r["reward"] for r in rows[-window:]]
    final = f"final reward {sum(rewards) / len(rewards):.3f} (last {window} steps)" if rewards else "no steps logged"
    return f"[{index + 1}/{total}] {run.name} seed {run.seed}: {len(rows)} steps in {seconds:.0f} s, {final}"
