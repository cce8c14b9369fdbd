"""The candidate's clock: its deadline counts its own time, never the machine's load nor the judge's work.

With a cgroup per candidate (sandbox/cgroups.py), the candidate is charged for

- the CPU time of all its processes (the cgroup's usage), and
- the time it spends idle by its own choice: sampled every `SAMPLE_S`, an interval in which no thread of the candidate
  and no thread of the judge is running or waiting for a CPU (sleeping, blocked on a lock, stopped) is charged in
  full. A candidate waiting for the judge (which runs the test code) is not idle: the judge is busy.

It reaches its deadline (`timeout`, score 0) when that total reaches `timeout_s`. A candidate that is runnable but
gets no CPU (a machine overloaded by other work) uses neither: it runs until the wall-clock backstop,
`BACKSTOP_FACTOR` x `timeout_s` (at least `BACKSTOP_MIN_S`), which is the machine's fault, not the candidate's:
`stalled`, score None. Without a cgroup (`cgroup=False`, asked for by name) the deadline is the wall clock, as the
only clock left.

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

SAMPLE_S = 0.05  # how often a running candidate's state is read (a few /proc files)
BACKSTOP_FACTOR = 10.0  # only a candidate that got less than a tenth of its time reaches the backstop
BACKSTOP_MIN_S = 30.0
# The candidate's CPU time a request of the judge costs its harness, at least (docs/code_verifier.md: measured here
# on `add(i, 1)`, an int in and out: 19 us at a load average of 2, 19 - 33 us at 7 - 9; a candidate's own minimal
# loop, 4.3 us).
CALL_ALLOWANCE_S = 12e-6


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

    def wait_s(self) -> float:
        """How long to wait for the candidate before the next look at its clock."""
        if self.cgroup is None:
            return max(0.0, self.start + self.budget_s - time.monotonic())
        return SAMPLE_S

    def own_time_s(self) -> float:
        return self.cpu_s - self.credit_s() + self.idle_s if self.cgroup is not None else time.monotonic() - self.start

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
        if now - self.start >= self.backstop_s:  # its time, the transport included, decides whose fault it is
            return "timeout" if self.cpu_s + self.idle_s >= self.budget_s else "stalled"
        return None

    def _busy(self) -> bool:
        if self.cgroup.runnable():
            return True
        return self.judged and (self.judge_pid is None or _process_runnable(self.judge_pid))

    def describe(self) -> str:
        return (
            f"the candidate used {self.own_time_s():.2f} s of its {self.budget_s:g} s in "
            f"{time.monotonic() - self.start:.1f} s of wall-clock time, the backstop: the machine gave it no CPU"
        )


def _process_runnable(pid: int) -> bool:
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return False
    return any(thread_runnable(int(tid)) for tid in threads)
