"""The `math` verifier on real completions of SmolLM2-135M-Instruct, labelled by hand (data/README.md).

The corpus (data/smollm2_completions.jsonl, written by benchmarks/record_completions.py) holds 304 completions of the
built-in arithmetic prompts, each with "label": true where a careful human grader accepts the final answer.
A completion labelled false must never be paid (score 1.0): that is a reward the policy can learn to exploit.
A completion labelled true and not paid is a miss: counted against a bound measured when the corpus was recorded.
Both lists are printed (run with -s to see them).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trl_grpo_ext.verifiers import MathVerifier

CORPUS = Path(__file__).parent / "data" / "smollm2_completions.jsonl"
# Misses (labelled true, not paid) with the final-answer model (docs/verifiers.md): 2 of 40, both close
# calls (0-based line 76, "Entity: 1" then unrelated prose; 275, "6-0 is actually 6."), and 0 of the 264 completions
# labelled false paid. Before it, at commit 4d5eb74: 5 misses and 16 paid. Lower this bound when a miss is fixed.
MAX_MISSES = 2


def load_corpus() -> list[dict]:
    with open(CORPUS, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


@pytest.fixture(scope="module")
def scored():
    rows = load_corpus()
    verifier = MathVerifier(n_workers=2)
    try:
        results = verifier.verify_batch([r["completion"] for r in rows], [r["reference"] for r in rows])
    finally:
        verifier.close()
    return [(dict(row, line=i), result) for i, (row, result) in enumerate(zip(rows, results))]


def describe(items) -> str:
    lines = []
    for row, result in items:
        lines.append(
            f"- line {row['line']} [{row['source']}] reference {row['reference']!r}, score {result.score}, reason {result.reason!r}, "
            f"extracted {result.extracted!r}\n  completion: {row['completion']!r}"
            + (f"\n  label note: {row['note']}" if row.get("note") else "")
        )
    return "\n".join(lines) if lines else "  (none)"


def test_corpus_is_labelled():
    rows = load_corpus()
    assert len(rows) == 304
    for row in rows:
        assert set(row) >= {"source", "prompt", "completion", "reference", "seed", "label", "note"}, row
        assert isinstance(row["label"], bool), row
        assert row["label"] or row["note"], f"a completion labelled false has no note: {row}"


def test_no_false_positive(scored):
    paid_wrong = [(row, result) for row, result in scored if not row["label"] and result.score == 1.0]
    labelled_false = sum(1 for row, _ in scored if not row["label"])
    report = (
        f"false positives (labelled false, paid 1.0): {len(paid_wrong)} of {labelled_false}\n{describe(paid_wrong)}"
    )
    print("\n" + report)
    assert not paid_wrong, report


def test_misses_within_bound(scored):
    missed = [(row, result) for row, result in scored if row["label"] and result.score != 1.0]
    labelled_true = sum(1 for row, _ in scored if row["label"])
    report = (
        f"misses (labelled true, not paid): {len(missed)} of {labelled_true} (bound {MAX_MISSES})\n{describe(missed)}"
    )
    print("\n" + report)
    assert len(missed) <= MAX_MISSES, report
