"""A candidate cannot turn its 0 into None by stopping its own clock or by making the judge work for it.

- a thread in uninterruptible sleep that is not paging (a parent held in `vfork` while its child sleeps, from Python
  through ctypes or from C++) is the candidate's own time: `timeout`, 0, at its budget, not `stalled` at the backstop;
- at the backstop, the machine is measured: a stall is None only when the CPUs were busy or a quota throttled the
  candidate's cgroup; with CPU to spare it is the candidate's `timeout`;
- the judge's CPU time on a candidate's value beyond twice `timeout_s` is charged to the candidate: a list of
  integers sharing one hash, which makes the test's own `set(result)` quadratic, ends in `timeout`, 0, within
  seconds, and the judge child is killed.
"""

from __future__ import annotations

import shutil
import time

import pytest
from code_verifier_helpers import make_code_verifier

from trl_grpo_ext.verifiers.code import clock

TIMEOUT_S = 1.0
# Far below the backstop (30 s at least): the stall must be charged as it happens.
WITHIN_S = TIMEOUT_S + 8.0

PYTHON_VFORK = (
    "import ctypes\nlibc = ctypes.CDLL(None)\n"
    "def stall():\n    if libc.vfork() == 0:\n        libc.sleep(100)\n        libc._exit(0)\n"
)
CPP_VFORK = (
    "#include <cstdio>\n#include <unistd.h>\nint main() {\n"
    '  if (vfork() == 0) { sleep(100); _exit(0); }\n  puts("3");\n}\n'
)
ADD_ROW = [{"input": "1 2\n", "output": "3\n"}]


@pytest.fixture(scope="module")
def verifier():
    v = make_code_verifier(TIMEOUT_S)
    if v.isolation.cgroup is None:
        v.close()
        pytest.skip("without cgroups the deadline is the wall clock, which a stall cannot stop")
    yield v
    v.close()


def timed(verify, *args):
    start = time.monotonic()
    result = verify(*args)
    return result, time.monotonic() - start


@pytest.mark.parametrize(
    "code, tests",
    [
        (PYTHON_VFORK + "def add(a, b):\n    stall()\n    return a + b\n", "assert add(1, 2) == 3\n"),
        (PYTHON_VFORK + "stall()\nprint(3)\n", ADD_ROW),
    ],
    ids=["python_function", "python_stdio"],
)
def test_a_vfork_stall_in_python_is_a_timeout(verifier, code, tests):
    result, took = timed(verifier.verify, code, tests)
    assert (result.score, result.reason) == (0.0, "timeout"), result.reason
    assert took < WITHIN_S, took


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed (apt-get install g++)")
def test_a_vfork_stall_in_cpp_is_a_timeout(verifier):
    result, took = timed(verifier.verify, f"```cpp\n{CPP_VFORK}```", ADD_ROW)
    assert (result.score, result.reason) == (0.0, "timeout"), result.reason
    assert took < WITHIN_S, took


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed (apt-get install g++)")
def test_a_vfork_whose_child_exits_at_once_is_correct(verifier):
    program = CPP_VFORK.replace("sleep(100); ", "")
    assert (verifier.verify(f"```cpp\n{program}```", ADD_ROW).score) == 1.0


# 40,000 multiples of 2**61 - 1: all hash to 0, so the test's own set() compares each with all before it: about 18 s of
# CPU on the development machine, six times what the judge may spend before it is charged (half as many take about
# 5 s: close enough to the line that the judge may finish first, and `correct` is then the right answer).
COLLIDING = "def values():\n    return [i * (2**61 - 1) for i in range(1, 40001)]\n"


def test_the_judges_work_on_a_candidates_value_is_charged_to_it(verifier):
    result, took = timed(verifier.verify, COLLIDING, "assert len(set(values())) == 40000\n")
    if result.score is None and "the machine's CPUs were" in result.reason:
        # The judge needs 3 s of CPU in the 30 s before the backstop; a machine that did not give it that much was
        # measured saturated, and the rule's answer is then None (the clock's arithmetic is checked below).
        pytest.skip(f"the machine was saturated: {result.reason}")
    assert (result.score, result.reason) == (0.0, "timeout"), result.reason
    assert took < 3 * TIMEOUT_S + clock.BACKSTOP_FACTOR, took  # not ten times timeout_s of the judge's CPU


class BusyGroup:
    """A candidate's cgroup as the clock reads it: no CPU time of its own, always runnable (waiting on the judge)."""

    def cpu_s(self):
        return 0.0

    def runnable(self):
        return True


def test_the_judges_cpu_beyond_twice_the_budget_is_the_candidates(monkeypatch):
    judge_cpu = [5.0]  # the judge child's CPU time when the clock first reads it: its baseline
    monkeypatch.setattr(clock, "_process_cpu_s", lambda pid: judge_cpu[0])
    candidate = clock.CandidateClock(BusyGroup(), budget_s=1.0)
    candidate.judge_pid = 12345
    steps = []
    for used in (0.0, 1.5, 2.5, 2.9, 3.1):
        judge_cpu[0] = 5.0 + used
        steps.append(candidate.expired())
    assert steps == [None, None, None, None, "timeout"]
    assert candidate.own_time_s() == pytest.approx(1.1)


def test_the_same_values_with_distinct_hashes_pass(verifier):
    distinct = COLLIDING.replace("i * (2**61 - 1)", "i * 7")
    assert verifier.verify(distinct, "assert len(set(values())) == 40000\n").score == 1.0


class FakeGroup:
    def __init__(self, throttled):
        self.throttled = throttled

    def throttled_s(self):
        return self.throttled.pop(0)


def readings(monkeypatch, host, throttled):
    """A MachineReading whose /proc/stat and cgroup readings are `host` and `throttled`, one per read."""
    host = list(host)
    monkeypatch.setattr(clock, "_host_cpu", lambda: host.pop(0))
    return clock.MachineReading(FakeGroup(list(throttled)))


@pytest.mark.parametrize(
    "host, throttled, saturated",
    [
        (((100, 1000), (150, 2000)), (0.0, 0.0), True),  # 5% of the CPUs' time idle: busy
        (((100, 1000), (600, 2000)), (0.0, 0.0), False),  # half idle: the CPU was there
        (((100, 1000), (600, 2000)), (0.0, 1e6), True),  # a quota held the cgroup off the CPU
        (((100, 1000), (600, 2000)), (5.0, 5.0), False),  # throttled before, not over the interval
        ((None, None), (0.0, 0.0), False),  # /proc/stat unreadable: nothing measured, nothing blamed on the machine
    ],
    ids=["busy_cpus", "idle_cpus", "throttled", "throttled_before", "unmeasured"],
)
def test_the_backstop_measures_the_machine(monkeypatch, host, throttled, saturated):
    reading = readings(monkeypatch, host, throttled)
    assert (reading.saturation() is not None) is saturated
