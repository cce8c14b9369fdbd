"""The candidate's clock: its deadline counts its own time, never the machine's load nor the judge's work.

With a cgroup per candidate (sandbox/cgroups.py), the candidate is charged for

- the CPU time of all its processes (the cgroup's usage), and
- the time it spends idle by its own choice: sampled every `SAMPLE_S`, an interval in which no thread of the candidate
  and no thread of the judge is running or waiting for a CPU (sleeping, blocked on a lock, stopped) is charged in
  full. A candidate waiting for the judge (which runs the test code) is not idle: the judge is busy.

A thread in uninterruptible sleep counts as running only while it pages or waits for the disk (sandbox/cgroups.py,
`thread_runnable`); any other such sleep (a parent held in `vfork`) is the candidate's idle time.

It reaches its deadline (`timeout`, score 0) when that total reaches `timeout_s`. A candidate that is runnable but
gets no CPU uses neither: it runs until the wall-clock backstop, `BACKSTOP_FACTOR` x `timeout_s` (at least
`BACKSTOP_MIN_S`). There the machine is measured, not assumed (`MachineReading`): from the time the candidate had run
for `timeout_s` of wall-clock time, either the machine's CPUs were busy (`/proc/stat`: less than `SATURATED_IDLE` of
their time idle, steal counting as busy) or a CPU quota held the candidate's cgroup, or one above it, off the CPU
for at least `SATURATED_THROTTLED` of the interval. Then the machine failed it: `stalled`, score None. Otherwise the
CPU was there and the candidate did not use it: `timeout`, score 0. Without a cgroup (`cgroup=False`, asked for by
name) the deadline is the wall clock, as the only clock left.

The judge's work on the candidate's values (a test's `set(result)` of integers that share one hash) is charged too:
the judge child's CPU time beyond `JUDGE_FREE_FACTOR` x `timeout_s` counts as the candidate's (free: the test's own
work, and the decoding of the candidate's replies, which the judge bounds at `timeout_s` itself), so a value that
makes the judge compute ends in `timeout`, and the judge is then killed.

Transport is charged to nobody: each request the judge makes (a call, an attribute, a batch of a generator's items)
costs the candidate's harness a wake-up, a read, a decode, an encode and a write, whatever the candidate computes.
The judge counts its requests and tells the verifier (`calls`); the candidate's CPU time is credited
`CALL_ALLOWANCE_S` for each, never more than the CPU time it used, nor more than `timeout_s` in all. The count is the
judge's, so the candidate cannot raise it but by answering more requests of the test, each of which costs it at least
the allowance. At the backstop, a candidate whose time without the credit reached `timeout_s` is a `timeout`, never
`stalled`: the credit cannot turn its 0 into None.
"""

from __future__ import annotations

import os
import time

from ..sandbox.cgroups import CandidateGroup, thread_runnable

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
SAMPLE_S = 0.05  # how often a running candidate's state is read (a few /proc files)
BACKSTOP_FACTOR = 10.0  # only a candidate that got less than a tenth of its time reaches the backstop
BACKSTOP_MIN_S = 30.0
# The candidate's CPU time a request of the judge costs its harness, at least (docs/code_verifier_sandbox.md, The
# candidate's clock; measured here on `add(i, 1)`, an int in and out: 19 us at a load average of 2, 19 - 33 us at
# 7 - 9; a candidate's own minimal loop, 4.3 us). A constant: a calibration at start-up would follow the load of that
# moment as much as the host's speed (the same doc says why, and what a sound one needs).
CALL_ALLOWANCE_S = 12e-6
# The backstop's measure of the machine: saturated when its CPUs were idle less than this share of the interval, or
# the candidate's cgroup (or one above it) was throttled by a quota for at least this share of it.
SATURATED_IDLE = 0.10
SATURATED_THROTTLED = 0.5
# The judge child's CPU time on one job that is not charged to the candidate, in units of its `timeout_s`.
JUDGE_FREE_FACTOR = 2.0


class CandidateClock:
    """`expired()` is None while the candidate may run on, then "timeout" (its own time is spent) or "stalled"."""

    def __init__(self, cgroup: CandidateGroup | None, budget_s: float, judged: bool = True):
        self.cgroup = cgroup
        self.budget_s = budget_s
        self.start = self.last = time.monotonic()
        self.backstop_s = max(BACKSTOP_FACTOR * budget_s, BACKSTOP_MIN_S) if cgroup is not None else budget_s
        self.idle_s = 0.0
        self.cpu_s = 0.0  # since the start: what the sandbox used while it started ahead is not the candidate's
        self.cpu_at_start = cgroup.cpu_s() if cgroup is not None else 0.0
        self.judged = judged  # a judge process answers the candidate's calls (function tests; not stdio cases)
        self.judge_pid: int | None = None  # its threads count as busy; None: the judge has not said yet (busy)
        self.samples = 0  # looks at the clock so far (the benchmark's breakdown reports them)
        self.calls = 0  # the judge's requests so far, as it reported them: their transport is credited
        self.judge_cpu_at_start: float | None = None  # the judge child's CPU time when first read
        self.judge_cpu_s = 0.0
        self.machine: MachineReading | None = None  # taken once the candidate has run `budget_s` of wall-clock time
        self.saturation: str | None = None  # at a stall: how the machine was measured saturated

    def wait_s(self) -> float:
        """How long to wait for the candidate before the next look at its clock."""
        if self.cgroup is None:
            return max(0.0, self.start + self.budget_s - time.monotonic())
        return SAMPLE_S

    def own_time_s(self) -> float:
        if self.cgroup is None:
            return time.monotonic() - self.start
        return self.cpu_s - self.credit_s() + self.idle_s + self.judge_excess_s()

    def credit_s(self) -> float:
        """The transport of the judge's requests: CALL_ALLOWANCE_S each, at most the CPU time used and `budget_s`."""
        return min(self.calls * CALL_ALLOWANCE_S, self.cpu_s, self.budget_s)

    def count_calls(self, calls) -> None:
        """The judge's word on how many requests it has made (it only grows)."""
        if type(calls) is int and calls > self.calls:
            self.calls = calls

    def expired(self) -> str | None:
        self.samples += 1
        now = time.monotonic()
        if self.cgroup is None:
            return "timeout" if now - self.start >= self.budget_s else None
        cpu_s = self.cgroup.cpu_s() - self.cpu_at_start
        if not self._busy():  # idle since the last look, but for the CPU time it used meanwhile (charged already)
            self.idle_s += max(0.0, now - self.last - (cpu_s - self.cpu_s))
        self.cpu_s, self.last = cpu_s, now
        if self.own_time_s() >= self.budget_s:
            return "timeout"
        if self.machine is None and now - self.start >= self.budget_s:  # the interval the backstop judges
            self.machine = MachineReading(self.cgroup)
        if now - self.start >= self.backstop_s:  # its time, the transport included, then the machine decide
            if self.cpu_s + self.idle_s + self.judge_excess_s() >= self.budget_s:
                return "timeout"
            self.saturation = self.machine.saturation()
            return "stalled" if self.saturation is not None else "timeout"
        return None

    def judge_excess_s(self) -> float:
        """The judge child's CPU time on this job beyond `JUDGE_FREE_FACTOR` x `budget_s`: its work on the
        candidate's values."""
        if not self.judged or self.judge_pid is None:
            return 0.0
        if (used := _process_cpu_s(self.judge_pid)) is not None:
            if self.judge_cpu_at_start is None:
                self.judge_cpu_at_start = used
            self.judge_cpu_s = used - self.judge_cpu_at_start
        return max(0.0, self.judge_cpu_s - JUDGE_FREE_FACTOR * self.budget_s)

    def _busy(self) -> bool:
        if self.cgroup.runnable():
            return True
        return self.judged and (self.judge_pid is None or _process_runnable(self.judge_pid))

    def describe(self) -> str:
        return (
            f"the candidate used {self.own_time_s():.2f} s of its {self.budget_s:g} s in "
            f"{time.monotonic() - self.start:.1f} s of wall-clock time, the backstop: the machine gave it no CPU "
            f"({self.saturation or 'not measured'})"
        )


class MachineReading:
    """The machine's CPU counters (`/proc/stat`) and the candidate's cgroups' throttled time, read at a start;
    `saturation()` compares them with a second reading."""

    def __init__(self, cgroup: CandidateGroup):
        self.cgroup = cgroup
        self.start = time.monotonic()
        self.host = _host_cpu()
        self.throttled_s = _throttled_s(cgroup)

    def saturation(self) -> str | None:
        """How the machine was saturated since the start (a phrase), or None when it had CPU to spare or could not
        be read (a saturation is measured, never assumed)."""
        host = _host_cpu()
        elapsed = max(time.monotonic() - self.start, 1e-9)
        throttled = _throttled_s(self.cgroup) - self.throttled_s
        if throttled >= SATURATED_THROTTLED * elapsed:
            return f"a CPU quota held its cgroup off the CPU {throttled:.1f} s of {elapsed:.1f} s"
        if host is not None and self.host is not None and host[1] > self.host[1]:
            idle_share = (host[0] - self.host[0]) / (host[1] - self.host[1])
            if idle_share < SATURATED_IDLE:
                return f"the machine's CPUs were {idle_share:.0%} idle over {elapsed:.1f} s"
        return None


def _host_cpu() -> tuple[int, int] | None:
    """(idle, total) ticks of all the machine's CPUs (`/proc/stat`: idle and iowait are idle; steal is busy); None
    where it cannot be read."""
    try:
        with open("/proc/stat") as stat:
            fields = [int(v) for v in stat.readline().split()[1:9]]
    except (OSError, ValueError):
        return None
    return (fields[3] + fields[4], sum(fields)) if len(fields) == 8 else None


def _throttled_s(cgroup: CandidateGroup) -> float:
    try:
        return cgroup.throttled_s()
    except (OSError, ValueError):
        return 0.0


def _process_cpu_s(pid: int) -> float | None:
    """User and system CPU time of process `pid` (all its threads), None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rpartition(b")")[2].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def _process_runnable(pid: int) -> bool:
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return False
    return any(thread_runnable(int(tid)) for tid in threads)
