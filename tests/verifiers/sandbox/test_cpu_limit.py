"""The candidate's CPU rlimit is derived in one place (`cpu_limit_s`), and a row's limits are bounded by the verifier's.

No sandbox runs here: these are the numbers the sandboxes are given. tests/verifiers/code/test_cpp.py runs a C++
program under a row's `time_limit` far above the verifier's `timeout_s`.
"""

from __future__ import annotations

import dataclasses

import pytest
from code_verifier_helpers import make_code_verifier

from trl_grpo_ext.verifiers.code.clock import CandidateClock
from trl_grpo_ext.verifiers.code.formats import parse_reference
from trl_grpo_ext.verifiers.code.native import CaseLimits
from trl_grpo_ext.verifiers.sandbox.process import Limits, cpu_limit_s


@pytest.mark.parametrize(
    ("time_s", "cpu_s"),
    [(0.1, 2), (0.5, 2), (1, 3), (1.0, 3), (1.01, 4), (2, 5), (2.5, 6), (2.999, 7), (3.0, 7), (10, 21), (10.5, 22)],
)
def test_cpu_limit_is_a_whole_second_past_the_time_the_clock_may_credit_and_charge(time_s, cpu_s):
    # The clock credits at most time_s of transport, so the CPU time at which it ends a run is at most 2 x time_s.
    assert cpu_limit_s(time_s) == cpu_s
    assert Limits(time_s=time_s).cpu_rlimit_s == cpu_s
    assert Limits(time_s=time_s).rlimits(nproc=False)["RLIMIT_CPU"] == (cpu_s, cpu_s + 1)
    assert CaseLimits(time_s, 256).rlimits()["RLIMIT_CPU"] == [cpu_s, cpu_s + 1]


@pytest.mark.parametrize("time_s", [0.1, 0.5, 1.0, 2.5, 10.0])
def test_the_rlimit_never_ends_a_run_before_the_clock_does(time_s):
    # A candidate answering the judge's requests is credited their transport: its own time reaches time_s only once
    # its CPU time reaches time_s plus the largest credit. Killed by the rlimit before that, it would end as a
    # crash ("the candidate sandbox ended") rather than a timeout.
    clock = CandidateClock(None, time_s)
    clock.calls, clock.cpu_s = 10**12, 10.0 * time_s
    assert cpu_limit_s(time_s) >= time_s + clock.credit_s() + 1


def test_limits_derive_the_cpu_limit_from_their_time_whenever_it_changes():
    assert dataclasses.replace(Limits(time_s=10.0), time_s=2.5).cpu_rlimit_s == 6


def test_limits_keep_a_cpu_limit_given_by_name():
    # The Python tool's session spans many calls of time_s each: its CPU limit is its own.
    limits = Limits(time_s=10.0, cpu_s=60)
    assert limits.cpu_rlimit_s == 60
    assert limits.rlimits(nproc=False)["RLIMIT_CPU"] == (60, 61)


def test_the_code_verifier_derives_each_pool_cpu_limit_the_same_way():
    verifier = make_code_verifier(2.5, compile_timeout_s=0.5, checker_timeout_s=3)
    try:
        pools = [verifier.limits, verifier.compile_limits, verifier.checker_limits]
        assert [limits.cpu_rlimit_s for limits in pools] == [6, 2, 7]
        assert verifier.limits.rlimits(nproc=False)["RLIMIT_CPU"] == (6, 7)
    finally:
        verifier.close()


POOL = Limits(time_s=2.0, memory_mb=512)


@pytest.mark.parametrize(
    ("row", "time_s", "memory_mb"),
    [
        ({}, 2.0, 512),  # the verifier's own limits
        ({"time_limit": 1.5, "memory_limit": 256}, 1.5, 256),  # a row may tighten them
        ({"time_limit": 2, "memory_limit": 512}, 2.0, 512),
        ({"time_limit": 2.001, "memory_limit": 513}, 2.0, 512),  # never loosen them
        ({"time_limit": 1e6, "memory_limit": 1e6}, 2.0, 512),
    ],
)
def test_a_rows_limits_are_bounded_by_the_verifiers(row, time_s, memory_mb):
    _, cases = parse_reference({"tests": [{"input": "1\n", "output": "1\n"}], **row})
    limits = CaseLimits.for_row(cases.options, POOL)
    assert (limits.time_s, limits.memory_mb) == (time_s, memory_mb)
    assert limits.rlimits()["RLIMIT_CPU"][0] <= POOL.cpu_rlimit_s  # within what the pool's sandbox may grant
