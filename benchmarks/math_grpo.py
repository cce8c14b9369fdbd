"""GRPO-shaped batches and first-batch latency for `benchmarks/math_verifier.py` (`--grpo`, `--first-batch`).

A GRPO batch is not a list of unique pairs: G completions share one reference, many reach the same final answer,
and the prompts come back every epoch. Two sources of such batches, both with G = 8 completions per reference:

- `synthetic`: built from the public labelled pairs. For each distinct reference (347 of them), a group holds
  `distinct` different answers (default 4): the reference's own labelled predictions first (right and wrong ones),
  then predictions of other pairs, drawn at random (wrong answers of realistic shapes); its 8 slots hold each distinct
  answer once and copies of them, drawn uniformly, in the others. The duplication rate is then exactly
  (8 - distinct) / 8 per group (50 % by default). Epoch 2 draws its copies and its borrowed wrong answers again
  (another seed): the references' own predictions come back, as a policy's likely answers do.
- `demo`: the completions of `examples/demo.py` (the tiny model learning single-digit arithmetic) recorded at benchmark
  time from its first training steps (`record_demo`, into a temporary JSONL file, or `--rollouts FILE` to keep it),
  replayed step by step.

Batches are verified step by step (16 references x 8 completions per step); the `math` verifier keeps its verdict
cache across steps and epochs, as in training (it is cleared once, before epoch 1); `accuracy_reward` is called on each
completion, as in the unique-pairs benchmark.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

GROUP_SIZE = 8
REFERENCES_PER_STEP = 16
DEMO_STEPS = 24


def synthetic_groups(cases: list[dict], distinct: int, seed: int) -> list[tuple[str, list[str]]]:
    """(reference, its 8 completions) per distinct reference of the public pairs; see the module's docstring."""
    if not 1 <= distinct <= GROUP_SIZE:
        raise ValueError(f"--distinct={distinct} must be between 1 and {GROUP_SIZE}.")
    rng = random.Random(seed)
    own: dict[str, list[str]] = {}
    for case in cases:
        own.setdefault(case["gold"], [])
        if case["pred"] not in own[case["gold"]]:
            own[case["gold"]].append(case["pred"])
    all_preds = [case["pred"] for case in cases]
    groups = []
    for gold, preds in own.items():
        answers = preds[:distinct]
        while len(answers) < distinct:
            borrowed = rng.choice(all_preds)
            if borrowed not in answers:
                answers.append(borrowed)
        slots = answers + [rng.choice(answers) for _ in range(GROUP_SIZE - distinct)]
        rng.shuffle(slots)
        groups.append((gold, slots))
    return groups


def steps_of(groups: list[tuple[str, list[str]]]) -> list[tuple[list[str], list[str]]]:
    """Groups batched into training steps: (completions, references) of `REFERENCES_PER_STEP` groups each."""
    steps = []
    for start in range(0, len(groups), REFERENCES_PER_STEP):
        chunk = groups[start : start + REFERENCES_PER_STEP]
        steps.append(([c for _, slots in chunk for c in slots], [gold for gold, slots in chunk for _ in slots]))
    return steps


def duplication_rate(steps: list[tuple[list[str], list[str]]]) -> float:
    """Share of completions whose (completion, reference) an earlier completion of the same step had, raw text."""
    repeated = sum(len(c) - len(set(zip(c, r))) for c, r in steps)
    return repeated / sum(len(c) for c, _ in steps)


def record_demo(path: Path, steps: int = DEMO_STEPS) -> None:
    """Train `examples/demo.py` for `steps` steps and write every completion the verifier saw, with its reference and
    step, to `path` (JSONL)."""
    code = f"""
import json, sys
sys.path.insert(0, {str(Path(__file__).resolve().parents[1] / "examples")!r})
import demo, torch
from script_setup import quiet_libraries
from trl_grpo_ext import arithmetic_format_warmup
from trl_grpo_ext import build_tiny_model
args = demo.parse_args(["--max_steps", "{steps}", "--output_dir", {str(path.parent / "demo_out")!r}])
quiet_libraries(); torch.set_num_threads(args.threads); torch.manual_seed(args.seed)
model, tokenizer = build_tiny_model(num_layers=args.num_layers, hidden_size=args.hidden_size, seed=args.seed)
arithmetic_format_warmup(model, tokenizer, args.warmup_steps, args.seed)
trainer = demo.build_trainer(model, tokenizer, args, demo.make_progress_callback(args.max_steps, None))
verifier = trainer.reward_funcs[0].verifier
original, rows = verifier.verify_batch_with_stats, []
def recording(completions, references):
    step = len({{row["step"] for row in rows}})
    rows.extend({{"step": step, "completion": c, "reference": str(r)}} for c, r in zip(completions, references))
    return original(completions, references)
verifier.verify_batch_with_stats = recording
trainer.train()
verifier.close()
with open({str(path)!r}, "w") as f:
    f.writelines(json.dumps(row) + "\\n" for row in rows)
"""
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)


def demo_steps(path: Path) -> list[tuple[list[str], list[str]]]:
    rows = [json.loads(line) for line in path.open() if line.strip()]
    steps: dict[int, tuple[list[str], list[str]]] = {}
    for row in rows:
        completions, references = steps.setdefault(row["step"], ([], []))
        completions.append(row["completion"])
        references.append(row["reference"])
    return [steps[key] for key in sorted(steps)]


def load_demo_steps(rollouts: str | None) -> tuple[list[tuple[list[str], list[str]]], str]:
    """The demo's recorded steps: from `rollouts` if it exists, else recorded now (into `rollouts` when given)."""
    if rollouts and Path(rollouts).exists():
        return demo_steps(Path(rollouts)), f"read from {rollouts}"
    with tempfile.TemporaryDirectory() as folder:
        path = Path(rollouts) if rollouts else Path(folder) / "demo_rollouts.jsonl"
        start = time.perf_counter()
        record_demo(path)
        return demo_steps(path), f"recorded now ({DEMO_STEPS} demo steps, {time.perf_counter() - start:.0f} s)"


class CpuClock:
    """CPU seconds of this process and of a verifier's worker processes (from /proc), read before and after a pass:
    what a pass cost, whatever else the machine was running (wall-clock ratios swing with load)."""

    def __init__(self, verifier):
        self.pids = verifier._pool.worker_pids() if verifier._pool is not None else []

    def read(self) -> tuple[float, float]:
        from trl_grpo_ext.verifiers.core.deadline_pool_handle import process_cpu_seconds

        return time.process_time(), sum(process_cpu_seconds(pid) or 0.0 for pid in self.pids)

    def since(self, before: tuple[float, float]) -> str:
        process, workers = (after - start for after, start in zip(self.read(), before))
        return f"CPU {process:.3f} s in this process, {workers:.3f} s in the workers"


def time_math(epochs: list[list[tuple[list[str], list[str]]]], n_workers: int | None, timeout_s: float):
    """Seconds per epoch for the `math` verifier (cache cleared before epoch 1 only), the verdicts, the stats, and the
    CPU time of each epoch (`CpuClock`)."""
    from trl_grpo_ext.verifiers import get_verifier

    verifier = get_verifier("math", timeout_s=timeout_s, n_workers=n_workers)
    verifier.start()
    verifier.clear_cache()
    clock = CpuClock(verifier)
    seconds, verdicts, stats, cpu = [], [], [], []
    for steps in epochs:
        before = clock.read()
        start = time.perf_counter()
        for completions, references in steps:
            results, batch = verifier.verify_batch_with_stats(completions, references)
            verdicts.extend(r.score == 1.0 for r in results)
            stats.append(batch)
        seconds.append(time.perf_counter() - start)
        cpu.append(clock.since(before))
    verifier.close()
    return seconds, verdicts, stats, cpu


def time_accuracy_reward(epochs: list[list[tuple[list[str], list[str]]]], warm_up: Callable[[], None]):
    from trl.rewards import accuracy_reward

    warm_up()
    seconds, verdicts = [], []
    for steps in epochs:
        start = time.perf_counter()
        for completions, references in steps:
            for completion, reference in zip(completions, references):
                score = accuracy_reward([[{"role": "assistant", "content": completion}]], [reference])[0]
                verdicts.append(score == 1.0)
        seconds.append(time.perf_counter() - start)
    return seconds, verdicts


def first_batch_latency(cases: list[dict], background: bool, delay_s: float, n_workers: int | None) -> float:
    """In this (fresh) interpreter: build the reward function, wait `delay_s` (the trainer loading its model), then
    time the first batch (the first 64 public pairs)."""
    from trl_grpo_ext.verifiers import as_reward_function

    batch = cases[:64]
    reward = as_reward_function("math", start_workers=background, n_workers=n_workers)
    time.sleep(delay_s)
    start = time.perf_counter()
    reward(completions=[c["pred"] for c in batch], answer=[c["gold"] for c in batch])
    seconds = time.perf_counter() - start
    reward.verifier.close()
    return seconds


def first_batch_rounds(command: list[str], rounds: int, delay_s: float, marker: str) -> dict[tuple[str, float], list]:
    """`first_batch_latency` in a fresh interpreter (`command` + `--first-batch-child MODE:DELAY`) per mode (workers
    started on the first batch, or in the background) and delay (0, `delay_s`), `rounds` times: the seconds of each."""
    rows: dict[tuple[str, float], list] = {}
    for _ in range(rounds):
        for mode in ("lazy", "background"):
            for delay in (0.0, delay_s):
                child = [*command, "--first-batch-child", f"{mode}:{delay}"]
                done = subprocess.run(child, capture_output=True, text=True, check=True)
                value = next(line for line in done.stdout.splitlines() if line.startswith(marker))
                rows.setdefault((mode, delay), []).append(json.loads(value[len(marker) :]))
    return rows
