"""The live verifier audit: each batch, canaries built from some of its own references (completions whose verdict is
known by construction, `Verifier.canaries`) are scored by the same verifier, beside the real completions and never
trained on. Their rates, logged as `<name>/canary_false_positive` (wrong canaries paid) and
`<name>/canary_false_negative` (right canaries not paid in full), say whether the reward can be trusted on this run's
data while it trains; a wrong canary paid is also logged with its text.
"""

from __future__ import annotations

import itertools
import logging
import random
import time
from typing import Any

from .failures import LOGGED_CHARS

logger = logging.getLogger("trl_grpo_ext.verifiers.audit")


class CanaryAudit:
    """Canaries of `references_per_batch` distinct references of each batch (drawn with a generator seeded by `seed`
    and the batch's number in this process), scored in one `verify_batch` call."""

    def __init__(self, name: str, verifier: Any, references_per_batch: int, seed: int = 0):
        if isinstance(references_per_batch, bool) or not isinstance(references_per_batch, int):
            raise ValueError(f"audit_canaries={references_per_batch!r} must be an integer >= 0 (0: no audit).")
        if references_per_batch < 0:
            raise ValueError(f"audit_canaries={references_per_batch!r} must be >= 0 (0: no audit).")
        if references_per_batch and not callable(getattr(verifier, "canaries", None)):
            raise ValueError(
                f"audit_canaries={references_per_batch} needs a verifier that builds canaries (a `canaries(reference, "
                f"rng)` method, as the 'math' verifier has); verifier {name!r} has none. Use audit_canaries=0."
            )
        self.name, self.verifier, self.per_batch, self.seed = name, verifier, references_per_batch, seed
        self._batches = itertools.count()  # next() is atomic: batches may be verified on several threads

    def run(self, references: list[Any]) -> dict[str, float]:
        """The batch's canary metrics (none when it has no usable reference)."""
        start = time.perf_counter()
        rng = random.Random(f"{self.seed}:{next(self._batches)}")
        distinct = list(dict.fromkeys(str(ref) for ref in references if ref is not None))
        completions, kinds, refs = [], [], []
        for reference in rng.sample(distinct, min(self.per_batch, len(distinct))):
            wrong, right = self.verifier.canaries(reference, rng)
            for kind, texts in (("wrong", wrong), ("right", right)):
                completions += texts
                kinds += [kind] * len(texts)
                refs += [reference] * len(texts)
        if not completions:
            return {}
        results = self.verifier.verify_batch(completions, refs)
        paid = [(c, r, res) for c, r, res, k in zip(completions, refs, results, kinds) if k == "wrong" and res.score]
        for completion, reference, result in paid[:1]:
            logger.warning(
                "verifier %r paid %s to a wrong canary (%d of %d this batch; a false positive on this run's data): "
                "completion %s, reference %s, reason %r",
                self.name,
                result.score,
                len(paid),
                kinds.count("wrong"),
                f"{completion!r:.{LOGGED_CHARS}}",
                f"{reference!r:.{LOGGED_CHARS}}",
                result.reason,
            )
        refused = sum(k == "right" and res.score != 1.0 for k, res in zip(kinds, results))
        metrics = {"canary_time_s": time.perf_counter() - start}
        if "wrong" in kinds:
            metrics["canary_false_positive"] = len(paid) / kinds.count("wrong")
        if "right" in kinds:
            metrics["canary_false_negative"] = refused / kinds.count("right")
        return metrics
