"""PNG curves of a comparison: per variant, the mean over seeds of each step's value (faint), its moving average
(solid; stock dashed, drawn on top) and, with two seeds or more, a band: the 95% interval over seeds of the moving
average. Curves that coincide are named in the legend and the title, so that no curve seems to be missing."""

from __future__ import annotations

from pathlib import Path

from trl_grpo_ext.compare.plan import STOCK
from trl_grpo_ext.compare.stats import bootstrap_seeds

PLOTS = (("reward", "step", "reward.png"), ("kl", "step", "kl.png"), ("reward", "rollouts", "rollouts.png"))


def moving_average(values: list[float], window: int) -> list[float]:
    """Mean of the last `window` values at each position (fewer at the start)."""
    out = []
    for i in range(len(values)):
        chunk = values[max(0, i - window + 1) : i + 1]
        out.append(sum(chunk) / len(chunk))
    return out


def seed_curves(runs, name: str, metric: str, x_key: str) -> tuple[list[float], list[list[float]]]:
    """The x values and one series per seed of `name`, cut to the steps every seed logged."""
    series = []
    for spec, rows in runs:
        if spec["name"] == name:
            points = [(r[x_key], r[metric]) for r in rows if r.get(metric) is not None]
            if points:
                series.append(points)
    if not series:
        return [], []
    length = min(len(s) for s in series)
    return [x for x, _ in series[0][:length]], [[y for _, y in s[:length]] for s in series]


def coinciding(curves: dict[str, tuple[list, list]]) -> dict[str, str]:
    """name -> the earlier name whose curve (x and every seed's y) it repeats exactly."""
    same = {}
    names = list(curves)
    for i, name in enumerate(names):
        for earlier in names[:i]:
            if earlier not in same and curves[name] == curves[earlier]:
                same[name] = earlier
                break
    return same


def plot_curves(runs, output_dir: Path, x_axis: str = "both") -> list[Path]:
    """reward.png and kl.png against steps (kl.png only when a run logged KL), rollouts.png against completions
    generated; `x_axis` ("steps", "completions" or "both") says which."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(dict.fromkeys(spec["name"] for spec, _ in runs))
    stock_like = {spec["name"] for spec, _ in runs if spec["trainer"] == STOCK}
    written = []
    wanted = {"steps": ("step",), "completions": ("rollouts",), "both": ("step", "rollouts")}[x_axis]
    for metric, x_key, filename in (plot for plot in PLOTS if plot[1] in wanted):
        curves = {name: seed_curves(runs, name, metric, x_key) for name in names}
        curves = {name: c for name, c in curves.items() if c[0]}
        if not curves:
            continue
        same = coinciding(curves)
        fig, ax = plt.subplots(figsize=(11, 4.5))
        window = 1
        # Stock last, so that its dashed line stays visible over a variant that coincides with it.
        for name in sorted(curves, key=lambda n: n in stock_like):
            xs, per_seed = curves[name]
            window = max(1, len(xs) // 10)
            seeds = len(per_seed)
            raw = [sum(col) / seeds for col in zip(*per_seed)]
            smoothed_per_seed = [moving_average(s, window) for s in per_seed]
            smoothed = [sum(col) / seeds for col in zip(*smoothed_per_seed)]
            note = f" (= {same[name]})" if name in same else ""
            dashed = name in stock_like
            line = ax.plot(
                xs,
                smoothed,
                linestyle="--" if dashed else "-",
                linewidth=2.2 if dashed else 1.6,
                label=f"{name}{note}: moving average ({window} steps), mean of {seeds} seed(s)",
                zorder=3 if dashed else 2,
            )[0]
            ax.plot(xs, raw, color=line.get_color(), alpha=0.25, linewidth=0.8, label=f"{name}{note}: per step")
            if seeds >= 2:
                bands = [bootstrap_seeds(list(col))["ci95"] for col in zip(*smoothed_per_seed)]
                ax.fill_between(
                    xs, [b[0] for b in bands], [b[1] for b in bands], color=line.get_color(), alpha=0.15,
                    label=f"{name}: 95% interval over seeds",
                )  # fmt: skip
        xlabel = "completions generated (rollouts)" if x_key == "rollouts" else "step"
        title = f"{metric} per {'rollout' if x_key == 'rollouts' else 'step'}"
        if same:
            title += "\n" + "; ".join(f"{a} coincides with {b} (drawn on top of each other)" for a, b in same.items())
        ax.set(xlabel=xlabel, ylabel=metric, title=title)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # outside: it grows with the variants
        fig.tight_layout()
        fig.savefig(output_dir / filename, dpi=110)
        plt.close(fig)
        written.append(output_dir / filename)
    return written
