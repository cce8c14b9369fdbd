"""The parent's handle on one `DeadlinePool` worker process: start it, know when it is ready, read its CPU time,
tell how it died, stop or kill it.

Each worker is a fresh interpreter (`python -c`, through `subprocess`) running `deadline_pool_worker.run_worker`,
talking pickles over two pipes, not a `multiprocessing` child: forking a threaded trainer can deadlock, and
'spawn'/'forkserver' children re-import the caller's `__main__` (a training script without an
`if __name__ == "__main__":` guard would start training again in every worker, and code run from stdin cannot start
workers at all). POSIX only (the pipes are passed as inherited file descriptors).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

from .deadline_pool_worker import run_worker

# Time a new worker may take to import its libraries before the pool gives up on it.
STARTUP_TIMEOUT_S = 120.0

_CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_HAS_PROC = os.path.exists(f"/proc/{os.getpid()}/stat")


def process_cpu_seconds(pid: int) -> float | None:
    """CPU time (user + system, all threads) used so far by process `pid`, from /proc; None where it cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
        fields = stat[stat.rindex(b")") + 2 :].split()  # the name in parentheses may contain spaces
        return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS  # utime and stime, fields 14 and 15
    except (OSError, ValueError, IndexError):
        return None


class WorkerHandle:
    """One worker interpreter and the two pipe ends the parent holds."""

    def __init__(self, initializer: Callable[[], None] | None, memory_limit_mb: int | None):
        parent_read, child_write = os.pipe()
        child_read, parent_write = os.pipe()
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        entry = run_worker.__name__
        code = f"from {run_worker.__module__} import {entry}; {entry}({child_read}, {child_write})"
        self.process = subprocess.Popen(
            [sys.executable, "-c", code], pass_fds=(child_read, child_write), stdin=subprocess.DEVNULL, env=env
        )
        os.close(child_read)
        os.close(child_write)
        self.reader = Connection(parent_read, writable=False)
        self.writer = Connection(parent_write, readable=False)
        self.writer.send((initializer, memory_limit_mb))
        self.ready = False
        self.failed = False  # it ended, or said something else than "ready", before it started
        self.start_by = time.monotonic() + STARTUP_TIMEOUT_S
        self.cpu_s = 0.0  # this process's CPU time when it last reported: the start of the next item's budget

    def send(self, message: Any) -> None:
        self.writer.send(message)

    def total_cpu_s(self) -> float | None:
        """The process's CPU time so far, from /proc; None where /proc is missing (not Linux) or unreadable."""
        return process_cpu_seconds(self.process.pid) if _HAS_PROC else None

    def wait_ready(self, timeout: float | None = None) -> bool:
        """Whether the worker has started, waiting for it at most `timeout` seconds (None: until `STARTUP_TIMEOUT_S`
        after it was launched)."""
        if self.ready or self.failed:
            return self.ready
        left = self.start_by - time.monotonic()
        if self.reader.poll(max(0.0, left if timeout is None else min(timeout, left))):
            try:
                status, _, _, self.cpu_s = self.reader.recv()
                self.ready = status == "ready"
            except (EOFError, OSError):
                self.ready = False
            self.failed = not self.ready
        return self.ready

    def starting(self) -> bool:
        """Still within its start-up time, with no word from it yet."""
        return not (self.ready or self.failed) and time.monotonic() < self.start_by

    def death(self) -> str:
        """How the process ended, once its pipe is closed: "exit code 3", "signal 11 (SIGSEGV)"."""
        try:
            code = self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return "closed its pipe but did not exit"
        if code >= 0:
            return f"exit code {code}"
        try:
            return f"signal {-code} ({signal.Signals(-code).name})"
        except ValueError:
            return f"signal {-code}"

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:  # unkillable (uninterruptible I/O): leave it to the OS
            pass
        self.reader.close()
        self.writer.close()

    def stop(self) -> None:
        """Ask politely, then kill: a worker stuck in C code never reads the request."""
        try:
            self.writer.send(None)
            self.process.wait(timeout=1)
        except (OSError, ValueError, subprocess.TimeoutExpired):
            pass
        self.kill()
