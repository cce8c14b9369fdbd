"""Per-prompt estimators of held-out accuracy: unbiased pass@k and maj@k. Pure functions of counts and votes.

pass@k (Chen et al. 2021, arXiv 2107.03374): with n samples of which c are correct, the probability that at least
one of k samples drawn without replacement is correct, 1 - C(n-c, k) / C(n, k). Computed as the product
prod_{i=n-c+1}^{n} (1 - k/i), which never forms the binomials (they overflow a float beyond n of a few hundred).

maj@k: the majority vote of k samples is correct. Votes are answer classes (the verifier's extracted answers,
grouped by `equivalence.group_answers`); a sample without an extracted answer abstains. A tie between the largest
classes counts as the share of the tied classes that are correct (the expected result of breaking the tie uniformly
at random); a block where every sample abstains counts as wrong. With n samples, maj@k is the mean over the n // k
disjoint blocks of k consecutive samples: samples are drawn independently, so each block is an unbiased draw of a
k-sample vote.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence


def check_k(k: int, n: int, what: str = "k") -> None:
    """ValueError unless 1 <= k <= n."""
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= n:
        raise ValueError(f"{what}={k!r} must be an integer between 1 and the number of samples per prompt, {n}.")


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from n samples with c correct: 1 - C(n-c, k) / C(n, k), computed as a stable product."""
    check_k(k, n)
    if not 0 <= c <= n:
        raise ValueError(f"correct={c} must be between 0 and n={n}.")
    if n - c < k:  # every k-subset holds a correct sample
        return 1.0
    product = 1.0
    for i in range(n - c + 1, n + 1):
        product *= 1.0 - k / i
    return 1.0 - product


def vote(classes: Sequence[int | None], correct_classes: set[int]) -> tuple[int | None, float]:
    """(winning class, credit) of one majority vote. `classes`: each sample's answer class, None = no answer.

    The winner is the largest class (ties: the one seen first, for display); credit is 1 or 0, or, in a tie, the
    share of the tied classes that are correct. No answer at all: (None, 0.0).
    """
    counts = Counter(c for c in classes if c is not None)
    if not counts:
        return None, 0.0
    top = max(counts.values())
    tied = [c for c in dict.fromkeys(x for x in classes if x is not None) if counts[c] == top]
    return tied[0], sum(c in correct_classes for c in tied) / len(tied)


def maj_at_k(classes: Sequence[int | None], correct_classes: set[int], k: int) -> float:
    """maj@k: mean credit of the votes of the len(classes) // k disjoint blocks of k consecutive samples."""
    check_k(k, len(classes))
    blocks = len(classes) // k
    return sum(vote(classes[b * k : (b + 1) * k], correct_classes)[1] for b in range(blocks)) / blocks
