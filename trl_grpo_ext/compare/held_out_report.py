"""The held-out part of a comparison's report: pass@1 of every run on problems no run trains on, per variant, at the
end of training and along the completions generated, against the base model, stock and the null-reward control.

Every figure is a mean over (seeds x held-out problems) of each problem's pass@1, with a two-way bootstrap interval
(`stats.bootstrap_grid`); a paired figure is the same over the per-problem differences of two runs of the same seed
(or a run and the untrained model of its seed). The area under the curve is the mean pass@1 over the budget: the
trapezoid rule over the evaluation points, from the base model at 0 completions to the end, divided by the budget.
"""

from __future__ import annotations

from pathlib import Path

from trl_grpo_ext.compare.held_out import base_run_id, read_curve
from trl_grpo_ext.compare.plan import CONTROL, STOCK
from trl_grpo_ext.compare.stats import MIN_SEEDS_FOR_VERDICT, bootstrap_grid, verdict

FINAL = "final"
MAX_POINT_COLUMNS = 3


def read_grids(output_dir: Path, runs) -> tuple[dict, dict, list[int]]:
    """({variant: {seed: {point: per-prompt pass@1}}}, {seed: base per-prompt pass@1}, the points shared by every
    run). The end of a run is keyed by its budget (or FINAL without one)."""
    grids: dict[str, dict[int, dict]] = {}
    for spec, _ in runs:
        points = spec.get("eval_points") or []
        curve = read_curve(output_dir, f"{spec['name']}-seed{spec['seed']}", points)
        if not curve:
            continue
        end = spec.get("budget_completions") or FINAL
        by_point = {
            entry["point"] if entry["point"] is not None else end: entry["per_prompt_pass@1"] for entry in curve
        }
        grids.setdefault(spec["name"], {})[spec["seed"]] = by_point
    bases = {}
    for seed in sorted({spec["seed"] for spec, _ in runs}):
        curve = read_curve(output_dir, base_run_id(seed), [])
        if curve:
            bases[seed] = curve[0]["per_prompt_pass@1"]
    shared = None
    for by_seed in grids.values():
        for by_point in by_seed.values():
            keys = set(by_point)
            shared = keys if shared is None else shared & keys
    points = sorted(p for p in shared or () if p != FINAL)
    return grids, bases, points


def area_under_curve(per_point: dict, base: list[float], points: list[int]) -> list[float] | None:
    """Per problem, the mean pass@1 over [0, last point] (trapezoids from the base model at 0), or None."""
    if not points or any(p not in per_point for p in points):
        return None
    xs, ys = [0, *points], [base, *(per_point[p] for p in points)]
    total = []
    for problem in range(len(base)):
        area = sum((xs[i + 1] - xs[i]) * (ys[i][problem] + ys[i + 1][problem]) / 2 for i in range(len(xs) - 1))
        total.append(area / xs[-1])
    return total


def end_of(per_point: dict, points: list[int]):
    return per_point.get(points[-1]) if points else per_point.get(FINAL)


def paired(mine: dict[int, list], theirs: dict[int, list]) -> dict:
    seeds = sorted(set(mine) & set(theirs))
    return bootstrap_grid([[a - b for a, b in zip(mine[s], theirs[s])] for s in seeds])


def held_out_results(grids: dict, bases: dict, points: list[int]) -> dict:
    """Per variant: the curve (mean and interval at each point), the end, the area under the curve, and the paired
    differences from the base model, stock and the first control, each with its verdict."""
    ends = {
        name: {s: end for s, p in by_seed.items() if (end := end_of(p, points)) is not None}
        for name, by_seed in grids.items()
    }
    areas = {
        name: {s: area_under_curve(p, bases[s], points) for s, p in by_seed.items() if s in bases}
        for name, by_seed in grids.items()
    }
    controls = [name for name in grids if name.startswith(CONTROL + ":")]
    out = {}
    for name, by_seed in grids.items():
        seeds = len(by_seed)
        entry = {
            "curve": [
                {"completions": p, **bootstrap_grid([by_seed[s][p] for s in by_seed if p in by_seed[s]])}
                for p in points
            ],
            "end": bootstrap_grid(list(ends[name].values())),
        }
        area = {s: a for s, a in areas[name].items() if a is not None}
        if area:
            entry["area_under_curve"] = bootstrap_grid(list(area.values()))
        others = [("base", dict(bases))] if bases else []
        others += [(other, ends[other]) for other in (STOCK, *controls[:1]) if other in ends and other != name]
        for label, theirs in others:
            difference = paired(ends[name], theirs)
            difference["verdict"] = verdict(difference, min(seeds, difference["n"]))
            entry[f"vs_{label}"] = difference
        out[name] = entry
    if bases:
        out = {"base": {"end": bootstrap_grid(list(bases.values())), "curve": []}, **out}
    return out


def fmt(stat: dict | None, signed: bool = False) -> str:
    if not stat or stat.get("mean") is None:
        return ""
    sign = "+" if signed else ""
    text = format(stat["mean"], sign + ".3f")
    if stat.get("ci95"):
        low, high = stat["ci95"]
        text += f" [{format(low, sign + '.3f')}, {format(high, sign + '.3f')}]"
    return text


def held_out_markdown(payload: dict, points: list[int], completions: dict[str, float | None]) -> list[str]:
    """The held-out table (one screen wide) and one sentence per variant."""
    if not payload:
        return []
    controls = [name for name in payload if name.startswith(CONTROL + ":")]
    against = [("base", "gain over base")] if "base" in payload else []
    against += [(STOCK, "vs stock")] + [(c, f"vs {c}") for c in controls[:1]]
    # Every point when they fit a screen, else the end only; the whole curve is in results.json and held_out.png.
    shown = points[:-1] if len(points) <= MAX_POINT_COLUMNS else []
    end = f"pass@1 at {points[-1]}" if points else "pass@1 at the end"
    header = ["variant", "seeds", "completions", *(f"pass@1 at {p}" for p in shown), end, "area under curve"]
    header += [title for _, title in against]
    lines = [
        "## Held-out pass@1",
        "",
        "Mean over seeds and held-out problems [95% two-way bootstrap interval: seeds and problems resampled]; a "
        "paired column is the per-problem difference from the base model, or from the run of the same seed. Area "
        "under curve: mean pass@1 over the budget (trapezoids from the base model at 0 completions). A verdict needs "
        f"{MIN_SEEDS_FOR_VERDICT} seeds or more.",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
    ]
    if "base" in payload:
        lines[2:2] = [f"The base model, before training (0 completions): {fmt(payload['base']['end'])}.", ""]
    for name, entry in payload.items():
        if name == "base":
            continue
        seeds = entry["end"]["n"]
        generated = f"{completions.get(name) or 0:.0f}"
        at = {point["completions"]: point for point in entry["curve"]}
        cells = [name, str(seeds), generated, *(fmt(at.get(p)) for p in shown)]
        cells += [fmt(entry["end"]), fmt(entry.get("area_under_curve"))]
        cells += [fmt(entry.get(f"vs_{label}"), signed=True) for label, _ in against]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    for name, entry in payload.items():
        said = [
            f"{title.removeprefix('vs ')}: {entry[f'vs_{label}']['verdict']}"
            for label, title in against
            if f"vs_{label}" in entry
        ]
        if said:
            lines.append(f"- `{name}`: " + "; ".join(said) + ".")
    return lines + [""]


def plot_held_out(payload: dict, points: list[int], output_dir: Path) -> Path | None:
    """held_out.png: pass@1 against completions generated, per variant, with its interval as a band."""
    curves = {name: entry for name, entry in payload.items() if name != "base" and entry["curve"]}
    if not curves or "base" not in payload:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    base = payload["base"]["end"]
    fig, ax = plt.subplots(figsize=(9, 4.5))
    for name, entry in curves.items():
        xs = [0] + [point["completions"] for point in entry["curve"]]
        stats = [base] + entry["curve"]
        means = [s["mean"] for s in stats]
        line = ax.plot(xs, means, marker="o", linestyle="--" if name == STOCK else "-", label=name)[0]
        bands = [s["ci95"] or [s["mean"], s["mean"]] for s in stats]
        ax.fill_between(xs, [b[0] for b in bands], [b[1] for b in bands], color=line.get_color(), alpha=0.15)
    ax.set(xlabel="completions generated", ylabel="held-out pass@1", ylim=(0, 1))
    ax.set_title("held-out pass@1 (bands: 95% bootstrap over seeds and problems)", loc="left")
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.tight_layout()
    path = output_dir / "held_out.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
