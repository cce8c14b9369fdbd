"""The per-stage readings of `benchmarks/code_verifier.py --breakdown` (sandbox/stages.py), and the benchmark's batches.

The readings run only where candidates are forked (bubblewrap, as root); the batch shapes anywhere.
"""

from __future__ import annotations

import pytest
from benchmark_modules import load_benchmark
from code_verifier_helpers import make_code_verifier

from trl_grpo_ext.verifiers.code.clock import SAMPLE_S
from trl_grpo_ext.verifiers.sandbox import stages
from trl_grpo_ext.verifiers.sandbox.fork import forks_candidates

ADD = "def add(a, b):\n    return a + b\n"
ADD_TESTS = "assert add(1, 2) == 3\nassert add(2, 2) == 4\n"


@pytest.fixture
def recording(monkeypatch):
    monkeypatch.setattr(stages, "_records", None)
    stages.enable()
    yield
    monkeypatch.setattr(stages, "_records", None)


def test_nothing_is_recorded_unless_asked(monkeypatch):
    monkeypatch.setattr(stages, "_records", None)
    assert stages.new_events() is None
    stages.mark(None, "x")
    stages.done(None)
    assert stages.collect() == []


def test_each_candidate_has_every_stage_in_order(recording):
    verifier = make_code_verifier(10, workers=2)
    try:
        if not forks_candidates(verifier.isolation):
            pytest.skip("stage readings are taken where candidates are forked: bubblewrap, as root")
        # Four different programs: the verifier runs identical ones once.
        programs = [f"{ADD}# {i}\n" for i in (0, 1)] + [f"def add(a, b):\n    return a - b  # {i}\n" for i in (0, 1)]
        results = verifier.verify_batch(programs, [ADD_TESTS] * 4)
    finally:
        verifier.close()
    assert [r.score for r in results] == [1.0, 1.0, 0.0, 0.0]
    records = stages.collect()
    assert len(records) >= 4  # and the warm sandboxes the pool closed
    breakdown = load_benchmark("code_breakdown")
    judged = [r for r in records if "verdict" in r]
    assert len(judged) == 4
    for record in judged:
        for _, label, start, end in breakdown.STAGES:
            if "server_killed" in (start, end) and "server_killed" not in record:
                continue  # its init ended before the kill: nothing to kill
            assert start in record and end in record, (label, sorted(record))
            assert record[end] >= record[start] - 1e-6, (label, record[start], record[end])
        # The clock is looked at once per SAMPLE_S that passed, never more: the verdict wakes the verifier, not a poll.
        assert record["clock_samples"] <= (record["verdict"] - record["submitted"]) / SAMPLE_S + 1
        assert record["cpu_after_s"] > record["cpu_before_s"]
    labels = {row[1] for row in breakdown.stage_table(judged)}
    assert "judge round trip (submit to verdict)" in labels


def test_the_grpo_batch_repeats_what_it_says():
    benchmark = load_benchmark("code_verifier")
    codes, tests = benchmark.grpo_batch(5)
    assert len(codes) == len(tests) == 40
    assert benchmark.duplication_rate(codes, tests) == pytest.approx(3 / 8)
    unique = benchmark.unique_programs(benchmark.TRIVIAL, 10)
    assert benchmark.duplication_rate(unique, [benchmark.TESTS] * 10) == 0.0
