"""What every sandboxed candidate process has, however it was started: its limits, its pipes, its start report.

Two kinds exist: a process started per candidate (`sandbox/pool.py`, `Sandbox`: bubblewrap or the rlimits level), and a child
forked per candidate by a fork server inside one long-lived bubblewrap sandbox (`sandbox/fork.py`). Both
run code/standalone/harness.py, which talks over the same pipes; this module holds what the verifier does with those pipes.

A sandbox proves it started: the harness's first message, before it waits for a candidate, is `{"started": true}`;
one that never sends it is a failure of the verifier (`SandboxError`), never a verdict on the candidate.
"""

from __future__ import annotations

import math
import os
import select
import time
from dataclasses import dataclass

from ..code.standalone.protocol import LineReader, ProtocolError, write_message
from .cgroups import CandidateGroup, CgroupTree

START_TIMEOUT_S = 60.0  # a sandbox that has not started by then (a machine under heavy load) is a failure
# How much of what a failing process said (its stderr's end, its error) a SandboxError quotes.
SAID_CHARS = 300


class SandboxError(RuntimeError):
    """A sandbox could not start or set itself up: the verifier failed, not the candidate."""


def cpu_limit_s(time_s: float) -> int:
    """RLIMIT_CPU (whole seconds) for a run whose clock (code/clock.py) allows `time_s` seconds of the candidate's own
    time. The clock credits the transport of the judge's requests, up to `time_s` in all, so a candidate answering
    calls may use twice `time_s` of CPU before its own time is spent: the rlimit is one whole second past that, so
    that the clock, which counts every process of the candidate, ends a run that takes too long (a `timeout`), and
    the rlimit is only each process's backstop (2 for 0.5 s, 3 for 1 s, 6 for 2.5 s)."""
    return math.ceil(2 * time_s) + 1


@dataclass(frozen=True)
class Limits:
    """What one sandbox run may use. `time_s`, the candidate's own time (code/clock.py), and the cgroup are enforced
    by the verifier, the rest by rlimits in the harness. RLIMIT_CPU is `cpu_s` where given (the Python tool gives its
    session's CPU in all, which spans many calls of `time_s` each), else `cpu_limit_s(time_s)`: `cpu_rlimit_s`."""

    time_s: float = 10.0
    cpu_s: int | None = None
    memory_mb: int = 1024
    processes: int = 64
    file_mb: int = 16
    tmp_mb: int = 64
    open_files: int = 256
    output_bytes: int = 8 << 20

    @property
    def cpu_rlimit_s(self) -> int:
        """RLIMIT_CPU's soft limit, whole seconds (the hard one is a second more)."""
        return self.cpu_s if self.cpu_s is not None else cpu_limit_s(self.time_s)

    @property
    def shm_mb(self) -> int:
        """The size of the candidate's own /dev/shm (a tmpfs: POSIX semaphores and shared memory, which
        `multiprocessing` needs): up to its memory. Its pages count against the candidate's cgroup, with the rest of its
        memory, so it adds nothing to what the candidate may hold in all."""
        return self.memory_mb

    def cgroup(self, tree: CgroupTree, with_init: bool = True) -> CandidateGroup:
        """A cgroup bounding the whole candidate: memory (its address space and its /tmp), processes (its own, and its
        init where that joins the group too) and, through the clock, CPU time."""
        pids = self.processes + (1 if with_init else 0)
        return tree.group(memory_bytes=(self.memory_mb + self.tmp_mb) << 20, pids=pids)

    def rlimits(self, nproc: bool) -> dict:
        mb = 1 << 20
        limits = {
            "RLIMIT_CPU": (self.cpu_rlimit_s, self.cpu_rlimit_s + 1),
            "RLIMIT_AS": (self.memory_mb * mb, self.memory_mb * mb),
            "RLIMIT_FSIZE": (self.file_mb * mb, self.file_mb * mb),
            "RLIMIT_NOFILE": (self.open_files, self.open_files),
            "RLIMIT_CORE": (0, 0),
        }
        if nproc:
            limits["RLIMIT_NPROC"] = (self.processes, self.processes)
        return limits


class SandboxProcess:
    """One started harness, waiting for its candidate. Used once, then `finish()` kills what is left.

    Pipes: `request_w` (init message, then the judge's requests), `reply_r` (the harness's replies), `stdout_r` (the
    candidate's stdout, read only in script mode). Subclasses say how the process ends: `wait`, `ended`, `finish`.
    """

    def __init__(self, limits: Limits):
        self.limits = limits
        self.started = False
        self.request_w = self.reply_r = self.stdout_r = -1
        self.cgroup: CandidateGroup | None = None  # the candidate's cgroup, where there is one (its clock)

    def wait_started(self, deadline: float) -> None:
        """Return once the harness has said it started; SandboxError (with what went wrong) otherwise."""
        if self.started:
            return
        reader = LineReader(self.reply_r, 1 << 10)
        try:
            ready = select.select([self.reply_r], [], [], max(0.0, deadline - time.monotonic()))[0]
            message = reader.read_message() if ready else None  # the harness writes nothing else before its init
        except (OSError, ProtocolError) as exc:
            message = {"error": str(exc)}
        if reader.buffer or not isinstance(message, dict) or message.get("started") is not True:
            why = "did not start in time" if not ready else f"ended before starting ({self._start_failure()})"
            self.finish()
            raise SandboxError(f"the sandbox {why}")
        self.started = True

    def _start_failure(self) -> str:
        """What the sandbox said or how it ended, when it ended before its start report."""
        raise NotImplementedError

    def send(self, message: dict) -> None:
        write_message(self.request_w, message)

    def close_request(self) -> None:
        """The init message was the only one (a script, a compile, a native program): close the request pipe."""
        self._close_fds(self.request_w)
        self.request_w = -1

    def hand_over_pipes(self) -> None:
        """The judge holds the request and reply pipes now: close this process's copies."""
        self._close_fds(self.request_w, self.reply_r)
        self.request_w = self.reply_r = -1

    def read_stdout(self, clock, sink=None, output_bytes: int | None = None) -> tuple[bytes, str | None]:
        """Everything the candidate prints until it closes stdout (written to the binary file `sink` instead, where
        one is given: b"" is returned); the second item is None, "output_limit" (more than `output_bytes`, else the
        pool's bound), or why the candidate's clock (code/clock.py) stopped it: "timeout", "stalled"."""
        chunks, size = [], 0
        limit = self.limits.output_bytes if output_bytes is None else output_bytes
        keep = chunks.append if sink is None else sink.write
        while True:
            if not select.select([self.stdout_r], [], [], clock.wait_s())[0]:
                if (stopped := clock.expired()) is not None:
                    return b"".join(chunks), stopped
                continue
            chunk = os.read(self.stdout_r, 1 << 16)
            if not chunk:
                return b"".join(chunks), None
            keep(chunk)
            size += len(chunk)
            if size > limit:
                return b"".join(chunks), "output_limit"

    def wait(self, deadline: float) -> int | None:
        """The candidate's exit status (negative: killed by that signal); None if it still runs at `deadline`."""
        raise NotImplementedError

    def ended(self) -> bool:
        """Whether the harness has already ended (a started sandbox must not end before its candidate)."""
        raise NotImplementedError

    def finish(self, grace_s: float = 0.0) -> None:
        """Kill the candidate and every process it started. Safe to call more than once."""
        raise NotImplementedError

    @staticmethod
    def _close_fds(*fds: int) -> None:
        for fd in fds:
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
