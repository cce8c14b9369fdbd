"""pass@k of a trained model and of its base side by side, for every k up to the samples per prompt, and the k from
which the base is ahead.

RL fine-tuning tends to raise pass@1 and to narrow what the model can reach: at large k the base model can solve
more prompts than the trained one (Yue et al. 2025, "Does Reinforcement Learning Really Incentivize Reasoning
Capacity in LLMs Beyond the Base Model?", arXiv 2504.13837). Both models are evaluated on the same prompts with the
same n, so each k's difference is paired by prompt: its interval is the percentile bootstrap over prompts of the
per-prompt differences (`intervals.bootstrap_mean_ci`).

`base_ahead_from_k` is the smallest k such that the base's pass@k is above the trained model's at k and at every
larger k up to n, None when the base is not ahead at n; `base_ahead_at` lists every k where the base is ahead.
"""

from __future__ import annotations

from collections.abc import Sequence

from .core import PromptResult
from .estimators import pass_at_k
from .intervals import bootstrap_mean_ci

AHEAD_MARGIN = 1e-12  # a difference of rounding is no lead


def per_prompt_pass_at_k(results: Sequence[PromptResult], k: int) -> list[float]:
    return [pass_at_k(r.n, r.correct, k) for r in results]


def base_ahead_from(trained: Sequence[float], base: Sequence[float]) -> int | None:
    """Smallest k (1-based) with base[j] > trained[j] for every j from k - 1 to the end; None if there is none."""
    start = None
    for k in range(len(trained), 0, -1):
        if base[k - 1] - trained[k - 1] <= AHEAD_MARGIN:
            break
        start = k
    return start


def compare_with_base(trained: Sequence[PromptResult], base: Sequence[PromptResult], seed: int = 0) -> dict:
    """{"k": [1..n], "trained": [pass@k], "base": [...], "difference": [{"mean", "ci95", "n"} of trained - base],
    "base_ahead_from_k": k or None, "base_ahead_at": [k, ...], "n_prompts", "n_samples", "interval"}."""
    if [r.index for r in trained] != [r.index for r in base]:
        raise ValueError("the trained and base results must cover the same rows, in the same order.")
    sizes = {r.n for r in trained} | {r.n for r in base}
    if len(sizes) != 1:
        raise ValueError(f"the trained and base results must have the same samples per prompt; got {sorted(sizes)}.")
    (n,) = sizes
    ks = list(range(1, n + 1))
    trained_curve, base_curve, difference = [], [], []
    for k in ks:
        ours, theirs = per_prompt_pass_at_k(trained, k), per_prompt_pass_at_k(base, k)
        trained_curve.append(sum(ours) / len(ours))
        base_curve.append(sum(theirs) / len(theirs))
        difference.append(bootstrap_mean_ci([a - b for a, b in zip(ours, theirs)], seed))
    return {
        "k": ks,
        "trained": trained_curve,
        "base": base_curve,
        "difference": difference,
        "base_ahead_from_k": base_ahead_from(trained_curve, base_curve),
        "base_ahead_at": [k for k, a, b in zip(ks, trained_curve, base_curve) if b - a > AHEAD_MARGIN],
        "n_prompts": len(trained),
        "n_samples": n,
        "interval": f"difference: 95% percentile bootstrap over prompts (paired), seed {seed}",
    }


def shown_ks(n: int) -> list[int]:
    """1, 2, 4, ... up to n, and n itself: the rows of the printed table (the JSON has every k)."""
    ks = [1 << i for i in range(n.bit_length()) if 1 << i <= n]
    return ks if ks[-1] == n else [*ks, n]


def comparison_table(comparison: dict, trained_name: str, base_name: str) -> str:
    """The side-by-side table at k = 1, 2, 4, ..., n, and a sentence on where the base is ahead."""
    lines = ["| k | pass@k trained | pass@k base | trained - base | 95% interval |", "|---|---|---|---|---|"]
    for k in shown_ks(comparison["n_samples"]):
        diff = comparison["difference"][k - 1]
        interval = "n/a" if diff["ci95"] is None else f"[{diff['ci95'][0]:+.4f}, {diff['ci95'][1]:+.4f}]"
        lines.append(
            f"| {k} | {comparison['trained'][k - 1]:.4f} | {comparison['base'][k - 1]:.4f} | {diff['mean']:+.4f} "
            f"| {interval} |"
        )
    start, n = comparison["base_ahead_from_k"], comparison["n_samples"]
    if start is None:
        verdict = f"The base model ({base_name}) is not ahead at k = {n}"
        ahead = comparison["base_ahead_at"]
        verdict += f"; it is ahead at k = {', '.join(map(str, ahead))}." if ahead else " nor at any smaller k."
    else:
        verdict = f"The base model ({base_name}) is ahead of {trained_name} from k = {start} on, up to k = {n}."
    return "\n".join(lines) + f"\n\n{comparison['n_prompts']} prompts x {n} samples each. {verdict}"
