"""Evaluating a dataset, alone or under `accelerate launch`, and writing the results.

Prompts are dealt to processes round-robin (row i to process i mod P; with `prompts_per_call` C, chunk c of C
consecutive rows to process c mod P, so that the rows sampled together are the same for any P), each evaluates its own, and one
`all_gather_object` brings every result to every process; the gathered results are checked to hold each row exactly
once, whatever the row count and the process count. Only the main process writes files.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .core import EvalVerifier, PromptResult, Sampler, evaluate_prompts, summarize
from .votes import COMPLETION


def process_rank() -> tuple[int, int]:
    """(rank, world size) of the initialised torch process group; (0, 1) without one."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def shard(num_rows: int, rank: int, world_size: int, chunk: int = 1) -> list[int]:
    """The rows process `rank` evaluates: those of chunks rank, rank + P, rank + 2P, ... (chunk c: rows c*C to
    c*C + C - 1)."""
    return [
        row
        for start in range(rank * chunk, num_rows, world_size * chunk)
        for row in range(start, min(start + chunk, num_rows))
    ]


def gather_once(local: list[PromptResult], num_rows: int) -> list[PromptResult]:
    """Every process's results, in row order; RuntimeError unless each row 0..num_rows-1 appears exactly once."""
    import torch.distributed as dist

    _, world_size = process_rank()
    if world_size > 1:
        parts: list[Any] = [None] * world_size
        dist.all_gather_object(parts, local)
        local = [result for part in parts for result in part]
    results = sorted(local, key=lambda r: r.index)
    if [r.index for r in results] != list(range(num_rows)):
        raise RuntimeError(f"gathered {len(results)} results for {num_rows} rows: a row is missing or repeated.")
    return results


def evaluate_dataset(
    rows: Sequence[dict],
    sampler: Sampler,
    verifiers: Sequence[EvalVerifier],
    num_samples: int,
    ks: Sequence[int],
    greedy: bool = False,
    seed: int = 0,
    show_progress: bool = True,
    prompt_column: str = "prompt",
    prompts_per_call: int = 1,
    keep_completions: bool = False,
) -> tuple[list[PromptResult], dict]:
    """(per-prompt results in row order, summary), the same on every process. `prompts_per_call`: prompts sampled
    in one generate call (`TransformersSampler.sample_many`); `keep_completions`: each result keeps its completions
    with their verdicts (`core.score_prompt`)."""
    from tqdm.auto import tqdm

    rank, world_size = process_rank()
    mine = shard(len(rows), rank, world_size, prompts_per_call)
    with tqdm(total=len(mine), desc="evaluate", unit="prompt", disable=not show_progress or rank != 0) as bar:
        local = evaluate_prompts(
            rows, mine, sampler, verifiers, num_samples, ks, greedy, prompt_column, bar.update, prompts_per_call,
            keep_completions,
        )  # fmt: skip
    results = gather_once(local, len(rows))
    return results, {**summarize(results, ks, seed), "processes": world_size}


def write_results(output_dir: Path, results: Sequence[PromptResult], summary: dict) -> None:
    """`per_prompt.jsonl` (one line per row, in row order) and `summary.json`; `completions.jsonl` (one line per
    completion: `index`, then `sample_records`'s fields) when the results kept their completions."""
    output_dir.mkdir(parents=True, exist_ok=True)
    with open(output_dir / "per_prompt.jsonl", "w") as file:
        for result in results:
            file.write(json.dumps(result.to_json()) + "\n")
    if results and results[0].samples is not None:
        with open(output_dir / "completions.jsonl", "w") as file:
            for result in results:
                for record in result.samples:
                    file.write(json.dumps({"index": result.index, **record}) + "\n")
    (output_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")


def summary_table(summary: dict) -> str:
    """The summary as a Markdown table: metric, mean, 95% interval."""
    lines = ["| metric | mean | 95% interval |", "|---|---|---|"]
    notes = ""
    for key, stat in summary.items():
        if isinstance(stat, dict) and "mean" in stat and stat.get("unavailable"):
            lines.append(f"| {key} | unavailable | |")
            notes = f"\nmaj@k unavailable: {stat['unavailable']}."
        elif isinstance(stat, dict) and "mean" in stat and stat["mean"] is not None:
            interval = "n/a" if stat["ci95"] is None else f"[{stat['ci95'][0]:.4f}, {stat['ci95'][1]:.4f}]"
            lines.append(f"| {key} | {stat['mean']:.4f} | {interval} |")
    by_completion = (summary.get("maj_votes") or {}).get(COMPLETION, 0)
    if by_completion:
        notes += (
            f"\nmaj@k: on {by_completion} prompts the verifier extracted no answer, so the normalised completions "
            "voted (docs/evaluation.md)."
        )
    lines.append(
        f"\n{summary['n_prompts']} prompts x {summary['n_samples']} samples; {summary['interval']}; "
        f"{summary['unscored_samples']} samples without a verdict (counted as not correct)"
        + (
            f"; {summary['ungrouped_answer_pairs']} answer pairs maj@k got no verdict on (they vote apart)."
            if summary.get("ungrouped_answer_pairs")
            else "."
        )
        + notes
    )
    return "\n".join(lines)


def pass_rate_rows(results: Sequence[PromptResult], low: float, high: float) -> list[int]:
    """Rows whose pass rate correct / n lies in [low, high] (both ends included)."""
    if not 0.0 <= low <= high <= 1.0:
        raise ValueError(f"--keep_pass_rate {low},{high}: need 0 <= LO <= HI <= 1.")
    return [r.index for r in results if low <= r.correct / r.n <= high]
