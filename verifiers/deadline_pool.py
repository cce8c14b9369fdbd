"""A pool of warm worker processes that runs a picklable function with a hard deadline per item.

Why processes and not `signal.alarm`: an alarm only fires in the main thread of the main interpreter and cannot
interrupt C code (a long sympy or gmpy computation). Here each item runs in a separate process; when it passes its
deadline the worker is killed (SIGKILL) and a fresh one is started in its place. This holds whichever thread (or asyncio
task, through `amap`) calls the pool.

Each worker is a fresh interpreter (`python -c`, through `subprocess`) talking pickles over two pipes, not a
`multiprocessing` child: forking a threaded trainer can deadlock, and 'spawn'/'forkserver' children re-import the
caller's `__main__` (a training script without an `if __name__ == "__main__":` guard would start training again
in every worker, and code run from stdin cannot start workers at all). `initializer` runs once per worker (e.g. to
import sympy), so items do not pay for it; an item's deadline starts when it is handed to a ready worker.

Thread safety: idle workers sit in a queue; a caller takes workers from it, so concurrent callers share the pool
fairly and never use the same worker at once. POSIX only (the pipes are passed as inherited file descriptors).
"""

from __future__ import annotations

import asyncio
import atexit
import os
import pickle
import queue
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Any

# Time a new worker may take to import its libraries before the pool gives up on it.
STARTUP_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class TaskOutcome:
    """Result of one item: status is "ok" (value holds the return value), "timeout" or "error" (error holds text)."""

    status: str
    value: Any = None
    error: str = ""
    elapsed_s: float = 0.0


def _worker_main(
    reader: Connection, writer: Connection, initializer: Callable[[], None] | None, memory_limit_mb: int | None
) -> None:
    """Worker loop: receive (fn, args), send ("ok", value) or ("error", text); exit on None or a closed pipe."""
    if memory_limit_mb:
        try:
            import resource

            limit = memory_limit_mb * 1024 * 1024
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        except (ImportError, ValueError, OSError):  # not every platform allows it; the deadline still holds
            pass
    if initializer is not None:
        initializer()
    writer.send(("ready", None))
    while True:
        try:
            message = reader.recv()
        except (EOFError, OSError):  # the parent went away
            return
        if message is None:
            return
        fn, args = message
        try:
            reply = ("ok", fn(*args))
        except BaseException as exc:  # report everything (MemoryError, RecursionError) instead of dying
            reply = ("error", f"{type(exc).__name__}: {exc}")
        try:
            writer.send(reply)
        except (pickle.PicklingError, TypeError, AttributeError) as exc:  # an unpicklable return value
            writer.send(("error", f"could not send the result back: {type(exc).__name__}: {exc}"))
        except OSError:  # the parent went away
            return


def default_worker_count() -> int:
    """The usable CPU cores, shared among the training processes of this machine.

    `accelerate launch` and `torchrun` start one process per GPU and set LOCAL_WORLD_SIZE; each process builds its own
    verifier, so each gets its share of the cores instead of all of them (8 processes x 64 workers on 64 cores would
    leave the GPUs waiting on an oversubscribed CPU).
    """
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    try:
        local_processes = max(1, int(os.environ.get("LOCAL_WORLD_SIZE", "1")))
    except ValueError:
        local_processes = 1
    return max(1, cores // local_processes)


class _Worker:
    """One worker interpreter and the two pipe ends the parent holds."""

    def __init__(self, initializer: Callable[[], None] | None, memory_limit_mb: int | None):
        parent_read, child_write = os.pipe()
        child_read, parent_write = os.pipe()
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        code = f"from {__name__} import _child_main; _child_main({child_read}, {child_write})"
        self.process = subprocess.Popen(
            [sys.executable, "-c", code], pass_fds=(child_read, child_write), stdin=subprocess.DEVNULL, env=env
        )
        os.close(child_read)
        os.close(child_write)
        self.reader = Connection(parent_read, writable=False)
        self.writer = Connection(parent_write, readable=False)
        self.writer.send((initializer, memory_limit_mb))
        self.ready = False

    def send(self, message: Any) -> None:
        self.writer.send(message)

    def wait_ready(self) -> bool:
        if self.ready:
            return True
        if self.reader.poll(STARTUP_TIMEOUT_S):
            try:
                self.ready = self.reader.recv()[0] == "ready"
            except (EOFError, OSError):
                self.ready = False
        return self.ready

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


def _child_main(read_fd: int, write_fd: int) -> None:
    """Entry point of a worker interpreter."""
    reader, writer = Connection(read_fd, writable=False), Connection(write_fd, readable=False)
    initializer, memory_limit_mb = reader.recv()
    _worker_main(reader, writer, initializer, memory_limit_mb)


class DeadlinePool:
    """Run `fn(*args)` for many items in `n_workers` processes, each item killed after `timeout_s` seconds.

    ```python
    with DeadlinePool(n_workers=2, initializer=import_sympy) as pool:
        outcomes = pool.map(check, [(a, b), (c, d)], timeout_s=5.0)   # list[TaskOutcome], input order
    ```
    `fn`, `args` and `initializer` must be picklable (module-level functions). `memory_limit_mb` caps each
    worker's address space (a runaway expression then fails with MemoryError instead of swapping).
    """

    def __init__(
        self,
        n_workers: int | None = None,
        initializer: Callable[[], None] | None = None,
        memory_limit_mb: int | None = None,
    ):
        if n_workers is None:
            n_workers = default_worker_count()
        if not isinstance(n_workers, int) or n_workers < 1:
            raise ValueError(f"n_workers must be a positive integer, got {n_workers!r}.")
        self.n_workers = n_workers
        self._initializer = initializer
        self._memory_limit_mb = memory_limit_mb
        self._idle: queue.SimpleQueue[_Worker] = queue.SimpleQueue()
        self._all: set[_Worker] = set()
        self._lock = threading.Lock()
        self._closed = False
        for _ in range(n_workers):
            self._idle.put(self._spawn())
        # Leave no child behind even if the user never calls close().
        self._finalizer = weakref.finalize(self, DeadlinePool._shutdown, self._all, self._lock)
        atexit.register(self._finalizer)

    def _spawn(self) -> _Worker:
        worker = _Worker(self._initializer, self._memory_limit_mb)
        with self._lock:
            self._all.add(worker)
        return worker

    def _retire(self, worker: _Worker, replace: bool) -> None:
        """Kill a worker (after a timeout or a crash) and put a fresh one in the idle queue."""
        worker.kill()
        with self._lock:
            self._all.discard(worker)
        if replace and not self._closed:
            self._idle.put(self._spawn())

    def _acquire(self, block: bool) -> _Worker | None:
        """An idle worker that has started, preferring one that is ready now. Without `block`, None when there is
        none: the caller goes back to enforcing the deadlines of its running items rather than wait for a
        replacement worker to finish starting (which takes as long as the initializer)."""
        while True:
            if self._closed:
                raise RuntimeError("This DeadlinePool is closed; create a new one.")
            worker = self._take_started()
            if worker is not None or not block:
                return worker
            try:
                worker = self._idle.get(timeout=0.5)
            except queue.Empty:
                continue
            if worker.wait_ready():
                return worker
            # A worker that cannot start (broken environment, failing initializer) would fail again: stop here.
            self._retire(worker, replace=True)
            raise self._startup_error()

    def _take_started(self) -> _Worker | None:
        """Take an idle worker whose start is over, without waiting; workers still starting go back in the queue."""
        starting: list[_Worker] = []
        found = None
        try:
            for _ in range(self._idle.qsize()):
                try:
                    worker = self._idle.get_nowait()
                except queue.Empty:
                    break
                if worker.ready or worker.reader.poll(0):  # its "ready" message (or EOF, if it died) is waiting
                    found = worker
                    break
                starting.append(worker)
        finally:
            for worker in starting:
                self._idle.put(worker)
        if found is None or found.wait_ready():
            return found
        self._retire(found, replace=True)
        raise self._startup_error()

    @staticmethod
    def _startup_error() -> RuntimeError:
        return RuntimeError(
            f"a worker process did not start within {STARTUP_TIMEOUT_S:g} s (see its stderr above); "
            "check that the initializer and the function are importable in a fresh interpreter."
        )

    def wait_until_ready(self) -> None:
        """Block until every idle worker has started (imported its libraries and run the initializer).

        Workers start in the background as soon as the pool exists; this only waits for them. Busy workers are
        started by definition.
        """
        taken: list[_Worker] = []
        while True:
            try:
                taken.append(self._idle.get_nowait())
            except queue.Empty:
                break
        failed = [worker for worker in taken if not worker.wait_ready()]
        for worker in taken:
            if worker in failed:
                self._retire(worker, replace=True)
            else:
                self._idle.put(worker)
        if failed:
            raise self._startup_error()

    def _release(self, worker: _Worker) -> None:
        if self._closed:
            self._retire(worker, replace=False)
        else:
            self._idle.put(worker)

    def run(self, fn: Callable[..., Any], args: tuple = (), timeout_s: float = 5.0) -> TaskOutcome:
        """Run one item; blocks at most `timeout_s` once a worker is free."""
        return self.map(fn, [args], timeout_s)[0]

    def map(self, fn: Callable[..., Any], items: Sequence[tuple], timeout_s: float = 5.0) -> list[TaskOutcome]:
        """Run `fn(*item)` for every item, in parallel; return one `TaskOutcome` per item, in input order."""
        if not timeout_s or timeout_s <= 0:
            raise ValueError(f"timeout_s must be a positive number of seconds, got {timeout_s!r}.")
        outcomes: list[TaskOutcome | None] = [None] * len(items)
        pending = list(range(len(items)))[::-1]  # a stack: pop() yields items in input order
        running: dict[Connection, tuple[_Worker, int, float]] = {}
        try:
            while pending or running:
                self._dispatch(fn, items, pending, running)
                self._collect(running, outcomes, timeout_s)
        finally:
            for worker, _, _ in running.values():  # interrupted (KeyboardInterrupt): do not leak busy workers
                self._retire(worker, replace=True)
        return outcomes  # type: ignore[return-value]

    def _dispatch(self, fn, items, pending, running) -> None:
        while pending:
            # Block for a worker only when this caller has nothing in flight, so it never waits on itself.
            worker = self._acquire(block=not running)
            if worker is None:
                return
            index = pending.pop()
            try:
                worker.send((fn, items[index]))
            except Exception:
                self._retire(worker, replace=True)
                raise
            running[worker.reader] = (worker, index, time.monotonic())

    def _collect(self, running, outcomes, timeout_s: float) -> None:
        now = time.monotonic()
        next_deadline = min(start + timeout_s for _, _, start in running.values())
        ready = wait(list(running), timeout=max(0.0, next_deadline - now))
        now = time.monotonic()
        for conn in ready:
            worker, index, start = running.pop(conn)
            try:
                status, payload = conn.recv()
            except (EOFError, OSError):  # the worker died (e.g. killed by the OOM killer)
                outcomes[index] = TaskOutcome("error", error="worker process died", elapsed_s=now - start)
                self._retire(worker, replace=True)
                continue
            value, error = (payload, "") if status == "ok" else (None, payload)
            outcomes[index] = TaskOutcome(status, value=value, error=error, elapsed_s=now - start)
            self._release(worker)
        for conn, (worker, index, start) in list(running.items()):
            if now - start >= timeout_s:
                running.pop(conn)
                outcomes[index] = TaskOutcome("timeout", error=f"exceeded {timeout_s:g} s", elapsed_s=now - start)
                self._retire(worker, replace=True)

    async def amap(self, fn: Callable[..., Any], items: Sequence[tuple], timeout_s: float = 5.0) -> list[TaskOutcome]:
        """`map` for asyncio code: runs in a thread so the event loop keeps serving while workers compute."""
        return await asyncio.to_thread(self.map, fn, items, timeout_s)

    def worker_pids(self) -> list[int]:
        with self._lock:
            return [w.process.pid for w in self._all]

    def close(self) -> None:
        """Stop every worker (killing busy ones). Safe to call more than once."""
        self._closed = True
        self._finalizer()

    @staticmethod
    def _shutdown(workers: set[_Worker], lock: threading.Lock) -> None:
        with lock:
            doomed = list(workers)
            workers.clear()
        for worker in doomed:
            worker.stop()

    def __enter__(self) -> DeadlinePool:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
