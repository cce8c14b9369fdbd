"""Transport: what a call and a large value cost a correct program, against plain execution.

Plain `python -c` runs 100,000 calls of `add` in about 0.1 s and returns a list of 10 million integers in about 0.4 s;
both pass at the default settings here too. Each call crosses two pipes (about 20 us of the candidate's CPU time for
its harness's read, decode, encode and write): the judge counts its requests, and the candidate's clock credits
`CALL_ALLOWANCE_S` for each (code/clock.py). A large value travels as JSON of up to the candidate's `memory_mb`. The
attacks on this credit (slow calls, a busy thread between calls, an endless loop of calls) are in test_attacks.py.
"""

from __future__ import annotations

import math
import os

import pytest
from benchmark_modules import load_benchmark
from code_verifier_helpers import assert_correct, make_code_verifier

from trl_grpo_ext.verifiers.code.clock import CALL_ALLOWANCE_S, CandidateClock
from trl_grpo_ext.verifiers.code.standalone import STANDALONE_DIR
from trl_grpo_ext.verifiers.code.verifier import CodeVerifier

DEFAULT_TIMEOUT_S = CodeVerifier.__init__.__defaults__[0]
ADD = "def add(a, b):\n    return a + b\n"
CALLS = 100_000
MANY_CALLS = {
    "asserts": f"for i in range({CALLS}):\n    assert add(i, 1) == i + 1\n",
    "unittest": "import unittest\n\nclass TestAdd(unittest.TestCase):\n    def test_many(self):\n"
    f"        for i in range({CALLS}):\n            self.assertEqual(add(i, 1), i + 1)\n",
}


@pytest.fixture(scope="module")
def verifier():
    v = make_code_verifier(DEFAULT_TIMEOUT_S, workers=1)
    yield v
    v.close()


@pytest.mark.slow  # over 8 s idle: the default suite stays under 10 minutes
@pytest.mark.parametrize("test", sorted(MANY_CALLS))
def test_a_hundred_thousand_calls_pass_at_the_default_timeout(verifier, test):
    assert_correct(verifier, ADD, MANY_CALLS[test])


def test_a_ten_million_element_return_value_passes_at_the_default_limits(verifier):
    """About 75 MiB of JSON: more than the 64 MiB a reply was limited to, less than the candidate's memory_mb."""
    assert_correct(verifier, "def f():\n    return list(range(10_000_000))\n", "assert len(f()) == 10_000_000\n")


def test_a_large_value_keeps_its_big_integers_and_its_types(verifier):
    """The encoder's fast path takes a list of plain scalars as it is: not one whose ints go beyond 2**62 (they
    travel in hex), nor one that mixes ints with strings or None; a NaN ahead of a big int does not hide it."""
    code = (
        "def f(k):\n    xs = list(range(100_000))\n    if k == 1: xs.append(2**70)\n"
        "    if k == 2: xs = [float('nan'), 2**70, -2**70] + xs\n    if k == 3: xs += ['a', None, True, 1.5]\n"
        "    return xs\n"
    )
    tests = (
        "assert f(0) == list(range(100_000))\nassert f(1)[-1] == 2**70 and type(f(1)[-1]) is int\n"
        "r = f(2)\nassert r[1:3] == [2**70, -2**70] and r[0] != r[0]\n"
        "assert f(3)[-4:] == ['a', None, True, 1.5] and type(f(3)[-2]) is bool\n"
    )
    assert_correct(verifier, code, tests)


# --- the clock's credit, on a cgroup whose readings the test sets ---------------------------------------------------


class FakeGroup:
    """A candidate's cgroup as the clock reads it: its CPU time, and whether any of its threads is runnable."""

    def __init__(self):
        self.cpu, self.running = 0.0, True

    def cpu_s(self):
        return self.cpu

    def runnable(self):
        return self.running


def test_the_credit_is_the_judges_count_of_calls_bounded_by_the_cpu_used_and_the_budget():
    group = FakeGroup()
    clock = CandidateClock(group, budget_s=2.0)
    group.cpu = 1.0
    clock.count_calls(50_000)
    assert clock.expired() is None
    assert math.isclose(clock.own_time_s(), 1.0 - 50_000 * CALL_ALLOWANCE_S)
    clock.count_calls(10**9)  # more calls than the CPU time used: the credit never goes below its CPU time
    assert clock.own_time_s() == 0.0
    group.cpu = 3.9  # nor beyond the budget: transport is free up to timeout_s of it
    assert clock.expired() is None and math.isclose(clock.own_time_s(), 1.9)
    group.cpu = 4.0
    assert clock.expired() == "timeout"


def test_the_count_only_grows_and_is_an_int():
    clock = CandidateClock(FakeGroup(), budget_s=1.0)
    for word in (5, 3, "99", 7.5, None, True, -1):
        clock.count_calls(word)
    assert clock.calls == 5


def test_at_the_backstop_a_candidate_that_used_its_budget_before_the_credit_is_a_timeout():
    """The credit only delays a timeout: a candidate whose own time without it reached its budget scores 0 at the
    backstop, never None, whatever the machine did (`stalled` is for a candidate a saturated machine gave no CPU)."""

    class Machine:
        def __init__(self, saturation):
            self.saturation = lambda: saturation

    for cpu, saturation, expected in (
        (1.5, "the machine's CPUs were 0% idle", "timeout"),
        (0.5, "the machine's CPUs were 0% idle", "stalled"),
        (0.5, None, "timeout"),
    ):
        group = FakeGroup()
        clock = CandidateClock(group, budget_s=1.0)
        clock.machine = Machine(saturation)  # as measured since the candidate had run for its budget
        group.cpu = cpu
        clock.count_calls(10**9)
        clock.start -= clock.backstop_s  # the backstop's time has passed
        assert clock.expired() == expected


def test_a_reply_line_may_be_as_long_as_the_candidates_memory():
    import sys

    sys.path.insert(0, str(STANDALONE_DIR))
    try:
        from judge_proxy import Session
        from protocol import MAX_MESSAGE_BYTES
    finally:
        sys.path.remove(str(STANDALONE_DIR))
    request_r, request_w = os.pipe()
    try:
        assert Session(request_w, request_r, 1.0, 1024).replies.max_bytes == 1024 << 20
        assert Session(request_w, request_r, 1.0, 16).replies.max_bytes == MAX_MESSAGE_BYTES
        assert Session(request_w, request_r, 1.0, None).replies.max_bytes == MAX_MESSAGE_BYTES
    finally:
        os.close(request_r)
        os.close(request_w)


# --- benchmarks/transport_cost.py: what a calibration of the allowances at start-up would measure -------------------


def test_the_transport_benchmark_measures_both_sides_of_a_real_harness():
    benchmark = load_benchmark("transport_cost")
    harness_s, judge_s = benchmark.one_start(batches=2, calls=200)
    assert 0 < harness_s < 0.01 and 0 < judge_s < 0.01, (harness_s, judge_s)  # per request: microseconds, not ms
    assert benchmark.script_constant("judge_proxy.py", "REPLY_ALLOWANCE_S") == 15e-6
    with pytest.raises(LookupError, match="NO_SUCH_NAME is not a constant of judge_proxy.py"):
        benchmark.script_constant("judge_proxy.py", "NO_SUCH_NAME")
