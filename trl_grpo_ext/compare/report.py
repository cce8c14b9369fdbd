"""Reporting a comparison from what is on disk: `results.md`, `results.json` and the PNG curves.

Inputs are `manifest.json` (the plan and the task) and one `<run>-seed<s>.jsonl` per finished run, so `replot` redraws
a finished or interrupted comparison without training. Per run, `summarize` reduces the logged steps to metrics;
per variant, `stats.mean_ci` gives the mean and 95% interval over seeds, and `stats.paired_difference` the
difference from the stock run of the same seed.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from trl_grpo_ext.compare.held_out import read_held_out
from trl_grpo_ext.compare.held_out_report import held_out_markdown, held_out_results, plot_held_out, read_grids
from trl_grpo_ext.compare.plan import STOCK
from trl_grpo_ext.compare.stats import MIN_SEEDS_FOR_VERDICT, bootstrap_seeds, paired_seed_difference
from trl_grpo_ext.usage import UsageError

# (name in results.json, column title, format)
METRICS = (
    ("final_reward", "final reward", ".4f"),
    ("best_reward", "best reward", ".4f"),
    ("kl", "KL", ".4f"),
    ("entropy", "entropy", ".4f"),
    ("step_time_s", "step time (s)", ".4f"),
    ("tokens_per_s", "tokens/s", ".0f"),
    ("peak_memory_mb", "peak memory (MB)", ".0f"),
)
# Against generation cost (`--x_axis completions` or `both`): what each run generated, and its reward at the budget
# every run reached (dynamic sampling, for one, generates more per step by design).
COMPLETION_METRICS = (
    ("completions", "completions generated", ".0f"),
    ("reward_at_budget", "reward at the common budget", ".4f"),
)
X_AXES = ("steps", "completions", "both")
# Held-out evaluation columns, first after the variant when the runs were evaluated: `eval_pass@k`, `eval_maj@k`.
HELD_OUT_PREFIXES = ("eval_pass@", "eval_maj@")


def metric_columns(per_run: list[dict], x_axis: str = "both") -> list[tuple[str, str, str]]:
    """(key, title, format) of every reported metric: the held-out ones the runs have (pass@k by k, then maj@k),
    then those of `report_metrics(x_axis)`."""
    found = {key for run in per_run for key in run["metrics"] if key.startswith(HELD_OUT_PREFIXES)}
    ordered = sorted(found, key=lambda key: (not key.startswith("eval_pass@"), int(key.split("@")[1])))
    return [(key, "held-out " + key.removeprefix("eval_"), ".4f") for key in ordered] + list(report_metrics(x_axis))


# Summary metrics that measure the machine, not the training.
MACHINE_METRICS = ("step_time_s", "tokens_per_s", "peak_memory_mb")
# Logged values that measure the machine, not the training: two identical runs may differ in them.
MACHINE_KEYS = ("step_time", "peak_memory_mb")
# A verifier reward's timings, `<name>/verify_time_s` and its `_p50`, `_p95`, `_max` (verifiers.md).
MACHINE_KEY_SUFFIX = "/verify_time_s"


def is_machine_key(key: str) -> bool:
    """Whether a logged value measures the machine (a time, memory) rather than the training."""
    return key in MACHINE_KEYS or MACHINE_KEY_SUFFIX in key


def final_window(steps: int) -> int:
    """Steps that "final" averages over: the last tenth of the run, at least 1."""
    return max(1, steps // 10)


def report_metrics(x_axis: str = "both") -> tuple:
    """The metrics a report shows: per step (`steps`), per completion generated (`completions`), or `both`."""
    if x_axis not in X_AXES:
        raise UsageError(f"x_axis={x_axis!r} is not valid. Valid choices: {', '.join(X_AXES)}.")
    return {"steps": METRICS, "completions": METRICS[:1] + COMPLETION_METRICS, "both": METRICS + COMPLETION_METRICS}[
        x_axis
    ]


def common_budget(runs) -> int:
    """The completions every run generated: the smallest total over the runs."""
    return min(rows[-1]["rollouts"] for _, rows in runs)


def reward_at_budget(rows: list[dict], budget: int, window: int) -> float | None:
    """Mean reward of the last `window` steps that ended within `budget` completions generated."""
    within = [r["reward"] for r in rows if r["rollouts"] <= budget][-window:]
    return sum(within) / len(within) if within else None


def summarize(rows: list[dict], window: int | None = None, budget: int | None = None) -> dict[str, float | None]:
    """One run's metrics. Final reward, KL, entropy: mean over the last `window` steps (`final_window`); best reward:
    the highest `window`-step moving average; step time: median seconds; tokens/s: tokens seen over the summed step
    times; peak memory: the largest recorded, in MB; completions: generated in all; reward at the budget: the mean
    reward of the last `window` steps within `budget` completions (when given)."""
    if not rows:
        return {}
    window = window or final_window(len(rows))

    def final(metric: str) -> float | None:
        values = [r[metric] for r in rows[-window:] if r.get(metric) is not None]
        return sum(values) / len(values) if values else None

    rewards = [r["reward"] for r in rows]
    moving = [sum(rewards[i - window : i]) / window for i in range(window, len(rewards) + 1)]
    step_times = sorted(r["step_time"] for r in rows if r.get("step_time") is not None)
    tokens = rows[-1].get("num_tokens")
    return {
        "final_reward": final("reward"),
        "best_reward": max(moving),
        "kl": final("kl"),
        "entropy": final("entropy"),
        "step_time_s": step_times[len(step_times) // 2] if step_times else None,
        "tokens_per_s": tokens / sum(step_times) if tokens and step_times and sum(step_times) > 0 else None,
        "peak_memory_mb": max(r.get("peak_memory_mb", 0.0) for r in rows),
        "steps": rows[-1]["step"],
        "rollouts": rows[-1]["rollouts"],
        "completions": rows[-1]["rollouts"],
        "reward_at_budget": None if budget is None else reward_at_budget(rows, budget, window),
    }


def read_runs(output_dir: Path) -> tuple[dict, list[tuple[dict, list[dict]]]]:
    """The manifest, and (run spec, logged rows) for every run of it that has a JSONL file, in plan order."""
    if not (output_dir / "manifest.json").exists():
        raise UsageError(f"{output_dir} has no manifest.json: it is not the --output_dir of a comparison.")
    manifest = json.loads((output_dir / "manifest.json").read_text())
    runs = []
    for spec in manifest["runs"]:
        path = output_dir / f"{spec['name']}-seed{spec['seed']}.jsonl"
        if path.exists():
            held_out = read_held_out(path.with_suffix(".eval.json"))
            spec = {**spec, "held_out": held_out} if held_out else spec
            runs.append((spec, [json.loads(line) for line in path.read_text().splitlines() if line.strip()]))
    return manifest, runs


def variant_names(runs) -> list[str]:
    return list(dict.fromkeys(spec["name"] for spec, _ in runs))


def same_training_logs(rows: list[dict], other: list[dict]) -> bool:
    """Equal step by step in every logged key the two share (the extension logs a few more), machine keys aside."""
    if len(rows) != len(other):
        return False
    for row, theirs in zip(rows, other):
        shared = {key for key in row.keys() & theirs.keys() if not is_machine_key(key)}
        if any(row[k] != theirs[k] for k in shared):
            return False
    return True


def identical_to_baseline(runs, name: str) -> bool:
    """Whether every seed of `name` logged what its baseline's run of that seed logged (`same_training_logs`), and
    scored the same held-out figures."""
    mine = {spec["seed"]: (spec, rows) for spec, rows in runs if spec["name"] == name}
    baseline = next(spec.get("baseline", STOCK) for spec, _ in runs if spec["name"] == name)
    theirs = {spec["seed"]: (spec, rows) for spec, rows in runs if spec["name"] == baseline}
    if baseline == name or not mine:
        return False
    return all(
        seed in theirs
        and same_training_logs(rows, theirs[seed][1])
        and spec.get("held_out") == theirs[seed][0].get("held_out")
        for seed, (spec, rows) in mine.items()
    )


def results(runs, x_axis: str = "both") -> dict:
    """The `results.json` payload: per variant and metric the mean, 95% interval and seeds; every run's metrics."""
    budget = common_budget(runs)
    per_run = [
        {
            "variant": spec["name"],
            "seed": spec["seed"],
            "metrics": {**spec.get("held_out", {}), **summarize(rows, budget=budget)},
        }
        for spec, rows in runs
    ]
    columns = metric_columns(per_run, x_axis)
    variants = {}
    for name in variant_names(runs):
        metrics = [r["metrics"] for r in per_run if r["variant"] == name]
        variants[name] = {key: bootstrap_seeds([m.get(key) for m in metrics]) for key, _, _ in columns}
    return {"variants": variants, "runs": per_run, "completion_budget": budget}


def paired_differences(runs, payload: dict, x_axis: str = "both") -> dict[str, dict[str, dict]]:
    """variant -> metric -> `paired_difference` from its baseline, for every variant that is not a baseline."""
    baselines = {spec["name"]: spec.get("baseline", STOCK) for spec, _ in runs}
    columns = metric_columns(payload["runs"], x_axis)
    by_seed: dict[str, dict[str, dict[int, float]]] = {}
    for run in payload["runs"]:
        for key, _, _ in columns:
            by_seed.setdefault(run["variant"], {}).setdefault(key, {})[run["seed"]] = run["metrics"].get(key)
    out = {}
    for name, baseline in baselines.items():
        if name != baseline and baseline in by_seed:
            out[name] = {
                key: paired_seed_difference(by_seed[name][key], by_seed[baseline][key]) for key, _, _ in columns
            }
    return out


def fmt_interval(stat: dict, spec: str, signed: bool = False) -> str:
    if stat["mean"] is None:
        return "n/a"
    sign = "+" if signed else ""
    text = format(stat["mean"], sign + spec)
    if stat["ci95"] is None:
        return text
    return f"{text} [{format(stat['ci95'][0], sign + spec)}, {format(stat['ci95'][1], sign + spec)}]"


def describe_task(manifest: dict, runs) -> list[str]:
    task = manifest.get("task", {})
    model = task.get("model_name_or_path") or "the tiny model after its format warm-up (built locally)"
    data = task.get("dataset_name") or "the built-in single-digit arithmetic set (88 problems; 22 held out)"
    seeds = sorted({spec["seed"] for spec, _ in runs})
    steps = sorted({len(rows) for _, rows in runs})
    windows = ", ".join(f"{final_window(s)} of {s}" for s in steps)
    return [
        f"Model: {model}. Data: {data}. Rewards: {', '.join(task.get('reward_verifiers', ['math']))}.",
        f"Seeds: {', '.join(map(str, seeds))} ({len(seeds)}); logged steps per run: {', '.join(map(str, steps))}.",
        "",
        f'"Final" reward, KL and entropy average the last tenth of each run\'s steps ({windows} steps); best reward is '
        "the highest moving average over that many steps; step time is the median; tokens/s is the tokens seen "
        "over the summed step times; peak memory is CUDA's peak allocation, else the process's peak RSS.",
        "Each training cell: mean over seeds [95% percentile bootstrap interval over seeds, inside the range of the "
        "values]; with one seed there is no interval (only the value is shown).",
        *describe_held_out(task, runs),
    ]


def describe_held_out(task: dict, runs) -> list[str]:
    if not any(spec.get("held_out") for spec, _ in runs):
        return []
    split = task.get("eval_split") or "held_out"
    source = task.get("eval_dataset") or task.get("dataset_name") or "the built-in task"
    return [
        f"Held-out columns: each run's final policy on split {split!r} of {source}, which no run trains on: "
        f"{task.get('eval_num_samples', 8)} samples per prompt at the run's own generation settings (sampling seeded "
        "by the run's seed), scored by the reward verifiers; pass@k is the unbiased estimator (Chen et al. 2021) and "
        "maj@k the majority vote over the verifier's extracted answers, each averaged over prompts "
        "(trl_grpo_ext.evaluation). Per-prompt figures and bootstrap intervals over prompts: <run>.eval.json.",
    ]


# The training metrics of the table (the rest are in results.json).
TABLE_KEYS = ("final_reward", "kl", "entropy", "step_time_s", "completions", "reward_at_budget")


def markdown(manifest: dict, runs, x_axis: str = "both", held_out: list[str] = ()) -> str:
    payload = results(runs, x_axis)
    diffs = paired_differences(runs, payload, x_axis)
    baselines = {spec["name"]: spec.get("baseline", STOCK) for spec, _ in runs}
    specs = {spec["name"]: spec for spec, _ in runs}
    lines = ["# Comparison with stock TRL", "", *describe_task(manifest, runs), "", *held_out, "## Training", ""]
    if x_axis != "steps":
        lines += [
            f'Reward at the common budget: mean reward of the last steps (as many as for "final") that ended within '
            f"{payload['completion_budget']} completions generated, the total of the run that generated fewest.",
            "",
        ]
    columns = metric_columns(payload["runs"], x_axis)
    shown = [c for c in columns if c[0] in TABLE_KEYS]
    header = ["variant", "seeds", *(t for _, t, _ in shown), "differs from stock"]
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    identical = []
    for name, stats in payload["variants"].items():
        cells = [name, str(stats["final_reward"]["n"]), *(fmt_interval(stats[key], f) for key, _, f in shown)]
        if name not in diffs:
            cells.append("(baseline)")
        elif identical_to_baseline(runs, name):
            identical.append(name)
            machine = {k: d for k, d in diffs[name].items() if k in MACHINE_METRICS and d["significant"]}
            cells.append("identical logs" + (f"; {significance_cell(machine, columns)}" if machine else ""))
        else:
            cells.append(significance_cell(training_verdicts(diffs[name], bool(held_out)), columns))
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    for name, spec in specs.items():
        settings = ", ".join(f"{k}={v}" for k, v in spec["overrides"].items()) or "defaults"
        lines.append(f"- `{name}`: {spec['trainer']} trainer, {settings}.")
    for name in identical:
        lines.append(
            f"- `{name}` logged exactly what `{baselines[name]}` logged, at every step of every seed (every training "
            "metric and any held-out figures; step time and memory are the machine's): its curves lie on top of the "
            "baseline's."
        )
    if diffs:
        lines += ["", "## Paired differences from stock", ""]
        lines.append(
            "Variant minus stock on the same seed, mean over seeds [95% bootstrap interval over seeds]; * marks an "
            f"interval that excludes 0 with at least {MIN_SEEDS_FOR_VERDICT} seeds (each metric tested on its own). "
            "Every metric, held-out ones included: results.json."
        )
        lines += ["", "| variant | " + " | ".join(t for _, t, _ in shown) + " |", "|" + "---|" * (len(shown) + 1)]
        for name, metrics in diffs.items():
            cells = [
                fmt_interval(metrics[key], f, signed=True) + (" *" if metrics[key]["significant"] else "")
                for key, _, f in shown
            ]
            lines.append(f"| {name} vs {baselines[name]} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def training_verdicts(metrics: dict[str, dict], held_out_section: bool) -> dict[str, dict]:
    """The paired differences the training table judges: without the held-out ones where the held-out section gives
    their verdict, with problems resampled as well as seeds (a bootstrap over seeds alone would call a gain that one
    problem carries on every seed significant, and the two verdicts would disagree)."""
    if not held_out_section:
        return metrics
    return {key: d for key, d in metrics.items() if not key.startswith(HELD_OUT_PREFIXES)}


def significance_cell(metrics: dict[str, dict], columns: list[tuple[str, str, str]]) -> str:
    """The metrics whose paired interval excludes 0, with the direction; why there is no verdict otherwise."""
    titles = {key: title for key, title, _ in columns}
    if all(d["significant"] is None for d in metrics.values()):
        return f"too few seeds for a verdict (< {MIN_SEEDS_FOR_VERDICT})"
    found = [f"{titles[k]} {'higher' if d['mean'] > 0 else 'lower'}" for k, d in metrics.items() if d["significant"]]
    return ", ".join(found) if found else "none significant"


def replot(output_dir: str | os.PathLike, x_axis: str = "both") -> str:
    """Write `results.md`, `results.json` and the plots from the files of a comparison, against steps, completions
    generated, or both (`x_axis`); returns the Markdown."""
    from trl_grpo_ext.compare.plots import plot_curves

    output_dir = Path(output_dir)
    manifest, runs = read_runs(output_dir)
    if not runs:
        raise UsageError(f"{output_dir} holds no finished run (no <variant>-seed<s>.jsonl listed in manifest.json).")
    grids, bases, points = read_grids(output_dir, runs)
    held_out = held_out_results(grids, bases, points)
    completions = {spec["name"]: rows[-1]["rollouts"] for spec, rows in runs if rows}
    text = markdown(manifest, runs, x_axis, held_out_markdown(held_out, points, completions))
    (output_dir / "results.md").write_text(text)
    payload = {**results(runs, x_axis), "held_out": held_out, "held_out_points": points}
    (output_dir / "results.json").write_text(json.dumps(payload, indent=2) + "\n")
    plot_curves(runs, output_dir, x_axis)
    plot_held_out(held_out, points, output_dir)
    return text
