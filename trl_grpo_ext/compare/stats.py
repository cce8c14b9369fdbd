"""Mean and 95% confidence interval over seeds (Student t), and the paired difference of two variants.

With n seeds the interval is mean +- t(0.975, n - 1) * s / sqrt(n), s the sample standard deviation (n - 1 in the
denominator). With one seed there is no interval: `ci95` is None, never a made-up width.
"""

from __future__ import annotations

import math

# t quantiles at 0.975 by degrees of freedom (two-sided 95%), from the standard table.
T_975 = {
    1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228,
    11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 16: 2.120, 17: 2.110, 18: 2.101, 19: 2.093, 20: 2.086,
    21: 2.080, 22: 2.074, 23: 2.069, 24: 2.064, 25: 2.060, 26: 2.056, 27: 2.052, 28: 2.048, 29: 2.045, 30: 2.042,
    40: 2.021, 60: 2.000, 120: 1.980,
}  # fmt: skip


def t_quantile_975(dof: int) -> float:
    """t(0.975, dof): scipy's when installed, else the table (beyond 30, the next tabled dof below, conservative)."""
    if dof < 1:
        raise ValueError(f"degrees of freedom {dof} must be >= 1.")
    try:
        from scipy.stats import t
    except ImportError:
        if dof > 1000:
            return 1.960
        return T_975[max(k for k in T_975 if k <= dof)]
    return float(t.ppf(0.975, dof))


def mean_ci(values: list[float]) -> dict:
    """{"mean": x, "ci95": [lo, hi] or None (fewer than 2 values), "n": n}; None values are left out."""
    values = [v for v in values if v is not None and not math.isnan(v)]
    n = len(values)
    if n == 0:
        return {"mean": None, "ci95": None, "n": 0}
    mean = sum(values) / n
    if n < 2:
        return {"mean": mean, "ci95": None, "n": n}
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = t_quantile_975(n - 1) * sd / math.sqrt(n)
    return {"mean": mean, "ci95": [mean - half, mean + half], "n": n}


def paired_difference(variant: dict[int, float], baseline: dict[int, float]) -> dict:
    """`mean_ci` of variant - baseline over the seeds both have (values keyed by seed), plus `significant`: the
    interval excludes 0 (None when there is no interval)."""
    seeds = sorted(s for s in variant.keys() & baseline.keys() if variant[s] is not None and baseline[s] is not None)
    result = mean_ci([variant[s] - baseline[s] for s in seeds])
    lo_hi = result["ci95"]
    result["significant"] = None if lo_hi is None else bool(lo_hi[0] > 0 or lo_hi[1] < 0)
    return result


# Seeds below which a comparison states no verdict: a bootstrap over n seeds sees at most n distinct values per
# resample, and with fewer than 5 its intervals are far too narrow (2 seeds: 3 distinct resampled means).
MIN_SEEDS_FOR_VERDICT = 5
BOOTSTRAP_RESAMPLES = 4000


def bootstrap_grid(values: list[list[float]], resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0) -> dict:
    """Mean and 95% percentile interval of a (seeds x prompts) grid of per-prompt figures (pass@1 of each held-out
    problem under each seed), by a two-way bootstrap: each resample draws the seeds with replacement and, separately,
    the prompts with replacement, and takes the mean of the drawn cells. Both sources of spread count, and the
    interval stays inside the range of the figures (a mean of pass rates stays in [0, 1], a difference of two in
    [-1, 1]). One seed: prompts only. {"mean", "ci95", "n": seeds, "prompts"}; `ci95` None when there is nothing to
    resample."""
    import numpy as np

    grid = np.asarray(values, dtype=float)
    if grid.size == 0:
        return {"mean": None, "ci95": None, "n": 0, "prompts": 0}
    seeds, prompts = grid.shape
    result = {"mean": float(grid.mean()), "ci95": None, "n": seeds, "prompts": prompts}
    if seeds * prompts < 2:
        return result
    rng = np.random.default_rng(seed)
    rows = rng.integers(0, seeds, size=(resamples, seeds))
    cols = rng.integers(0, prompts, size=(resamples, prompts))
    # mean over drawn rows and columns = mean over drawn rows of (row values at the drawn columns)
    col_means = np.stack([grid[:, c].mean(axis=1) for c in cols])  # (resamples, seeds)
    means = np.take_along_axis(col_means, rows, axis=1).mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    result["ci95"] = [float(low), float(high)]
    return result


def bootstrap_seeds(values: list[float], resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0) -> dict:
    """`bootstrap_grid` of one figure per seed (a training metric): the interval over seeds only, inside the range
    of the values. None values are left out; one value: no interval."""
    kept = [v for v in values if v is not None and not math.isnan(v)]
    if len(kept) < 2:
        return mean_ci(kept)
    stat = bootstrap_grid([[v] for v in kept], resamples, seed)
    return {"mean": stat["mean"], "ci95": stat["ci95"], "n": stat["n"]}


def verdict(difference: dict, seeds: int, higher: str = "higher", lower: str = "lower") -> str:
    """A plain sentence for a paired difference: too few seeds, no separable difference, or its direction."""
    if seeds < MIN_SEEDS_FOR_VERDICT:
        return f"too few seeds for a verdict ({seeds} < {MIN_SEEDS_FOR_VERDICT})"
    low, high = difference["ci95"] or (None, None)
    if low is None or low <= 0 <= high:
        return "no separable difference"
    return higher if low > 0 else lower


def paired_seed_difference(variant: dict[int, float], baseline: dict[int, float]) -> dict:
    """`bootstrap_seeds` of variant - baseline over the seeds both have (values keyed by seed), plus `significant`:
    the interval excludes 0 — None below MIN_SEEDS_FOR_VERDICT seeds, where the interval is no evidence."""
    seeds = sorted(s for s in variant.keys() & baseline.keys() if variant[s] is not None and baseline[s] is not None)
    result = bootstrap_seeds([variant[s] - baseline[s] for s in seeds])
    lo_hi = result["ci95"]
    enough = lo_hi is not None and result["n"] >= MIN_SEEDS_FOR_VERDICT
    result["significant"] = bool(lo_hi[0] > 0 or lo_hi[1] < 0) if enough else None
    return result
