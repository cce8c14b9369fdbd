"""A `math` verifier shared by the tests of one module, as a function from (completion, reference) pairs to their
(completion, reference, score, reason) rows."""

from __future__ import annotations

import pytest

from trl_grpo_ext.verifiers import MathVerifier


@pytest.fixture(scope="module")
def score_pairs():
    verifier = MathVerifier(n_workers=1, cache_mb=0)

    def score(pairs: list[tuple[str, str]]) -> list[tuple[str, str, float | None, str]]:
        results = verifier.verify_batch([c for c, _ in pairs], [r for _, r in pairs])
        return [(c, r, res.score, res.reason) for (c, r), res in zip(pairs, results)]

    yield score
    verifier.close()
