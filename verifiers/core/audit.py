"""The live verifier audit, run with each batch beside the real completions and never trained on:

- canaries (`canaries=k`): completions built from k of the batch's own references whose verdict is known by
  construction (`Verifier.canaries`), scored by the same verifier. Logged as `<name>/canary_false_positive` (wrong
  canaries paid) and `<name>/canary_false_negative` (right canaries not paid in full); a wrong canary paid is also
  logged with its text.
- a second opinion (`second_opinion=True`): another grader's verdict on the batch's real completions
  (`Verifier.second_opinion`, math-verify for `math`), logged as `<name>/second_opinion_disagreement` (share of the
  completions both graded on which they differ) and `<name>/second_opinion_only_ours` (share we pay and it refuses:
  where a hole a policy found would show first).

With `log_path`, each wrong canary paid and each disagreement is appended to that JSONL file, so that what a run
found can be read after it.
"""

from __future__ import annotations

import itertools
import json
import logging
import random
import threading
import time
from pathlib import Path
from typing import Any

from .contract import VerificationResult
from .failures import LOGGED_CHARS

logger = logging.getLogger("trl_grpo_ext.verifiers.audit")


class VerifierAudit:
    """Canaries of `canaries` distinct references of each batch (drawn with a generator seeded by `seed` and the batch's
    number in this process), scored in one `verify_batch` call; and, with `second_opinion`, another grader's verdicts
    on the batch."""

    def __init__(
        self, name: str, verifier: Any, canaries: int = 0, second_opinion: bool = False, log_path: Any = None
    ):
        if isinstance(canaries, bool) or not isinstance(canaries, int) or canaries < 0:
            raise ValueError(f"audit_canaries={canaries!r} must be an integer >= 0 (0: no canaries).")
        for option, value, method in (("audit_canaries", canaries, "canaries"),
                                      ("second_opinion", second_opinion, "second_opinion")):  # fmt: skip
            if value and not callable(getattr(verifier, method, None)):
                raise ValueError(
                    f"{option}={value!r} needs a verifier with a `{method}` method (the 'math' verifier has one); "
                    f"verifier {name!r} has none. Leave {option} off for it."
                )
        if not isinstance(second_opinion, bool):
            raise ValueError(f"second_opinion={second_opinion!r} must be True or False.")
        self.name, self.verifier, self.per_batch, self.second_opinion, self.seed = (
            name, verifier, canaries, second_opinion, 0
        )  # fmt: skip
        self.log_path = Path(log_path) if log_path is not None else None
        self._batches = itertools.count()  # next() is atomic: batches may be verified on several threads
        self._log_lock = threading.Lock()

    def run(self, texts: list[str | None], references: list[Any], results: list[VerificationResult]) -> dict:
        """The batch's audit metrics: `texts` are the completions as the verifier read them (None: not asked)."""
        batch = next(self._batches)
        metrics: dict[str, float] = {}
        if self.per_batch:
            start = time.perf_counter()
            metrics.update(self._canaries(batch, references))
            metrics["canary_time_s"] = time.perf_counter() - start
        if self.second_opinion:
            start = time.perf_counter()
            metrics.update(self._second_opinion(batch, texts, references, results))
            metrics["second_opinion_time_s"] = time.perf_counter() - start
        return metrics

    def _canaries(self, batch: int, references: list[Any]) -> dict[str, float]:
        rng = random.Random(f"{self.seed}:{batch}")
        distinct = list(dict.fromkeys(str(ref) for ref in references if ref is not None))
        completions, kinds, refs = [], [], []
        for reference in rng.sample(distinct, min(self.per_batch, len(distinct))):
            wrong, right = self.verifier.canaries(reference, rng)
            for kind, made in (("wrong", wrong), ("right", right)):
                completions += made
                kinds += [kind] * len(made)
                refs += [reference] * len(made)
        if not completions:
            return {}
        results = self.verifier.verify_batch(completions, refs)
        paid = [(c, r, res) for c, r, res, k in zip(completions, refs, results, kinds) if k == "wrong" and res.score]
        for completion, reference, result in paid[:1]:
            logger.warning(
                "verifier %r paid %s to a wrong canary (%d of %d this batch; a false positive on this run's data): "
                "completion %s, reference %s, reason %r",
                self.name, result.score, len(paid), kinds.count("wrong"), f"{completion!r:.{LOGGED_CHARS}}",
                f"{reference!r:.{LOGGED_CHARS}}", result.reason,
            )  # fmt: skip
        self._write([{"kind": "canary_paid", "batch": batch, "completion": c, "reference": r, "score": res.score,
                      "reason": res.reason} for c, r, res in paid])  # fmt: skip
        refused = sum(k == "right" and res.score != 1.0 for k, res in zip(kinds, results))
        metrics = {}
        if "wrong" in kinds:
            metrics["canary_false_positive"] = len(paid) / kinds.count("wrong")
        if "right" in kinds:
            metrics["canary_false_negative"] = refused / kinds.count("right")
        return metrics

    def _second_opinion(self, batch: int, texts, references, results) -> dict[str, float]:
        asked = [
            i for i, (text, result) in enumerate(zip(texts, results)) if text is not None and result.score is not None
        ]
        pairs = list(dict.fromkeys((texts[i], str(references[i])) for i in asked))
        verdicts = dict(zip(pairs, self.verifier.second_opinion([p[0] for p in pairs], [p[1] for p in pairs])))
        both = [(i, verdicts[(texts[i], str(references[i]))]) for i in asked]
        both = [(i, theirs) for i, theirs in both if theirs is not None]
        if not both:
            return {}
        differ = [(i, theirs) for i, theirs in both if (results[i].score > 0) != theirs]
        self._write([{"kind": "disagreement", "batch": batch, "completion": texts[i], "reference": references[i],
                      "score": results[i].score, "reason": results[i].reason, "second_opinion": theirs}
                     for i, theirs in differ])  # fmt: skip
        return {
            "second_opinion_disagreement": len(differ) / len(both),
            "second_opinion_only_ours": sum(not theirs for _, theirs in differ) / len(both),
        }

    def _write(self, rows: list[dict]) -> None:
        if self.log_path is None or not rows:
            return
        with self._log_lock:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            with self.log_path.open("a") as log:
                for row in rows:
                    log.write(json.dumps(row, default=repr) + "\n")
