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
