"""Mean over prompts with a 95% interval: the percentile bootstrap over prompts, seeded.

Prompts are the unit resampled (Efron's percentile bootstrap): each resample draws P prompts with replacement from
the P evaluated, and the interval is the 2.5th and 97.5th percentiles of the resampled means. The samples within a
prompt are not resampled, so the interval covers the uncertainty of which prompts were drawn from the task, with the
per-prompt estimate's own noise inside it. Same seed, same interval.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

DEFAULT_RESAMPLES = 10_000


def bootstrap_mean_ci(
    values: Sequence[float], seed: int = 0, resamples: int = DEFAULT_RESAMPLES, level: float = 0.95
) -> dict:
    """{"mean": x, "ci95": [lo, hi] or None (fewer than 2 prompts), "n": P}."""
    data = np.asarray([v for v in values if v is not None], dtype=np.float64)
    if data.size == 0:
        return {"mean": None, "ci95": None, "n": 0}
    mean = float(data.mean())
    if data.size < 2:
        return {"mean": mean, "ci95": None, "n": int(data.size)}
    rng = np.random.default_rng(seed)
    means = np.empty(resamples)
    chunk = max(1, 2_000_000 // data.size)  # bound the memory of one draw of indices
    for start in range(0, resamples, chunk):
        stop = min(resamples, start + chunk)
        means[start:stop] = data[rng.integers(0, data.size, size=(stop - start, data.size))].mean(axis=1)
    tail = (1.0 - level) / 2.0
    lo, hi = np.quantile(means, [tail, 1.0 - tail])
    return {"mean": mean, "ci95": [float(lo), float(hi)], "n": int(data.size)}
