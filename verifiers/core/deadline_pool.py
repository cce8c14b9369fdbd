"""A pool of warm worker processes that runs a picklable function with a hard deadline per item.

Why processes and not `signal.alarm`: an alarm only fires in the main thread of the main interpreter and cannot
interrupt C code (a long sympy or gmpy computation). Here each item runs in a separate process; when it passes its
deadline the worker is killed (SIGKILL) and a fresh one is started in its place. This holds whichever thread (or asyncio
task, through `amap`) calls the pool.

The deadline is CPU time, not wall-clock time. A verdict must not depend on how busy the machine is: with a
wall-clock deadline, a correct answer that needs 3 s of sympy times out (and scores 0) as soon as other processes
take half of the core. CPU time is what the computation itself costs, so the same input gets the same verdict on
an idle or a loaded machine. The worker measures each item's CPU time (`time.process_time()` around the call) and
reports it with the result: an item over its budget is a "timeout" even if it finished, so the verdict never depends
on when the parent looked. To kill a runaway item, the parent reads the worker's CPU time (utime + stime in
/proc/<pid>/stat, about 12 us) only once the item has run as long in wall-clock time as its remaining budget (one busy
thread cannot use CPU faster than that), so fast items cost no polling at all. Caveats: an item that runs several
busy threads is killed late (it is still scored "timeout"), and on a machine with SMT a busy sibling hyperthread
makes the same work take more CPU time. Where /proc is missing (not Linux), the kill falls back to wall-clock time.

A wall-clock backstop (`wall_limit_s`, default `WALL_LIMIT_FACTOR` x the budget) kills a worker that is stuck without
using its CPU: blocked on I/O or swap, stopped, or starved on a machine so overloaded that it got less than a tenth of
a core. That is not the answer's fault, so it is not a timeout: the status is "stalled", a failure of the machine.

A worker that dies before its deadline (killed from outside, a segfault, `os._exit`) is a failure, not a timeout: the
item is retried once on a fresh worker, and if that one dies too the status is "crashed" with the exit code or signal.

Where the pieces are: this module holds the pool (`DeadlinePool`: dispatch, deadlines, retries, thread safety);
`deadline_pool_batch.py` the state of one `map` call (`TaskOutcome`, which waiting item a free worker takes, with
`affinity`); `deadline_pool_handle.py` the parent's handle on one worker process (a fresh interpreter, not a
`multiprocessing` child: why is said there); `deadline_pool_worker.py` what runs inside the worker. `initializer`
runs once per worker (e.g. to import sympy), so items do not pay for it; an item's deadline starts when it is handed to
a ready worker.

Thread safety: idle workers sit in a queue; a caller takes workers from it, so concurrent callers share the pool
fairly and never use the same worker at once. A caller whose items wait for a worker looks at the queue every
`WAITING_POLL_S`, so a worker another caller releases serves them at once: it waits neither for its own slow items to
end nor for a replacement worker to finish starting. POSIX only (the pipes are passed as inherited file descriptors).
"""

from __future__ import annotations

import asyncio
import atexit
import os
import queue
import threading
import time
import weakref
from collections.abc import Callable, Hashable, Iterable, Sequence
from multiprocessing.connection import Connection, wait
from typing import Any

from .affinity import KeyOwners
from .deadline_pool_batch import Batch, RunningItem, TaskOutcome
from .deadline_pool_handle import STARTUP_TIMEOUT_S, WorkerHandle

# The wall-clock backstop, as a multiple of the CPU budget: generous, so that only a worker that got less than a tenth
# of a core (blocked, stopped, or on a machine overloaded tenfold) reaches it.
WALL_LIMIT_FACTOR = 10.0
# Shortest pause between two reads of a running worker's CPU time (the kernel counts it in 10 ms ticks).
MIN_POLL_S = 0.02
# How often a caller with items waiting for a worker looks for one that another caller has released (a release
# wakes only the caller whose item ended).
WAITING_POLL_S = 0.05


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


class DeadlinePool:
    """Run `fn(*args)` for many items in `n_workers` processes, each item killed after `timeout_s` s of CPU time.

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
        self._idle: queue.SimpleQueue[WorkerHandle] = queue.SimpleQueue()
        self._all: set[WorkerHandle] = set()
        self._lock = threading.Lock()
        self._owners = KeyOwners()  # for `map`'s affinity, across calls
        self._closed = False
        for _ in range(n_workers):
            self._idle.put(self._spawn())
        # Leave no child behind even if the user never calls close().
        self._finalizer = weakref.finalize(self, DeadlinePool._shutdown, self._all, self._lock)
        atexit.register(self._finalizer)

    def _spawn(self) -> WorkerHandle:
        worker = WorkerHandle(self._initializer, self._memory_limit_mb)
        with self._lock:
            self._all.add(worker)
        return worker

    def _retire(self, worker: WorkerHandle, replace: bool) -> None:
        """Kill a worker (after a timeout or a crash) and put a fresh one in the idle queue."""
        worker.kill()
        self._owners.disown(worker)
        with self._lock:
            self._all.discard(worker)
        if replace and not self._closed:
            self._idle.put(self._spawn())

    def _acquire(self, block: bool) -> WorkerHandle | None:
        """An idle worker that has started, preferring one that is ready now. Without `block`, None when there is
        none: the caller goes back to enforcing the deadlines of its running items rather than wait for a
        replacement worker to finish starting (which takes as long as the initializer). With `block`, it waits for
        whichever comes first: a starting worker's start, or a worker another caller frees."""
        while True:
            if self._closed:
                raise RuntimeError("This DeadlinePool is closed; create a new one.")
            worker = self._take_started()
            if worker is not None or not block:
                return worker
            try:
                worker = self._idle.get(timeout=WAITING_POLL_S)
            except queue.Empty:
                continue
            if worker.wait_ready(WAITING_POLL_S):
                return worker
            if worker.starting():  # a replacement still starting: look again, a worker may be freed meanwhile
                self._idle.put(worker)
                continue
            # A worker that cannot start (broken environment, failing initializer) would fail again: stop here.
            self._retire(worker, replace=True)
            raise self._startup_error()

    def _take_started(self) -> WorkerHandle | None:
        """Take an idle worker whose start is over, without waiting; workers still starting go back in the queue."""
        starting: list[WorkerHandle] = []
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
        taken: list[WorkerHandle] = []
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

    def _release(self, worker: WorkerHandle) -> None:
        if self._closed:
            self._retire(worker, replace=False)
        else:
            self._idle.put(worker)

    def run(
        self, fn: Callable[..., Any], args: tuple = (), timeout_s: float = 5.0, wall_limit_s: float | None = None
    ) -> TaskOutcome:
        """Run one item under a budget of `timeout_s` seconds of CPU time once a worker is free."""
        return self.map(fn, [args], timeout_s, wall_limit_s)[0]

    def map(
        self,
        fn: Callable[..., Any],
        items: Iterable[tuple],
        timeout_s: float = 5.0,
        wall_limit_s: float | None = None,
        affinity: Callable[[tuple], Hashable] | None = None,
    ) -> list[TaskOutcome]:
        """Run `fn(*item)` for every item, in parallel; return one `TaskOutcome` per item, in input order.

        `items` may be an iterator (a generator that finds the items): each item is sent as soon as it comes and a
        worker is free, so the work of finding the next ones overlaps the workers' (an exception it raises stops the
        call, as in `map` of a list). Without free workers the items wait in order.

        Each item may use `timeout_s` seconds of CPU time, and at most `wall_limit_s` seconds of wall-clock time
        (default `WALL_LIMIT_FACTOR * timeout_s`: only a worker blocked or starved reaches it).

        `affinity` (called in this process, on each waiting item) gives an item's key: items with the same key go to
        the worker that took the first of them whenever it is free, so that what it cached for that key serves them
        (the math verifier keys on the reference, parsed once per worker). It only orders the waiting items; a free
        worker takes another key's item rather than wait, and outcomes, deadlines and retries are the same.
        """
        if not timeout_s or timeout_s <= 0:
            raise ValueError(f"timeout_s must be a positive number of seconds, got {timeout_s!r}.")
        if wall_limit_s is None:
            wall_limit_s = WALL_LIMIT_FACTOR * timeout_s
        if wall_limit_s < timeout_s:
            raise ValueError(f"wall_limit_s must be at least timeout_s ({timeout_s!r}), got {wall_limit_s!r}.")
        batch = Batch(fn, items, timeout_s, wall_limit_s, affinity, self._owners)
        try:
            while batch.pending or batch.running or batch.source is not None:
                self._dispatch(batch)
                if batch.source is not None:  # take the next item, then look at the workers without waiting
                    batch.pull()
                    self._collect(batch, block=False)
                else:
                    self._collect(batch)
        finally:
            for item in batch.running.values():  # interrupted (KeyboardInterrupt): do not leak busy workers
                self._retire(item.worker, replace=True)
        return batch.outcomes  # type: ignore[return-value]

    def _dispatch(self, batch: Batch) -> None:
        while batch.pending:
            # Block for a worker only when this caller has nothing in flight, so it never waits on itself (nor while
            # it has items of its own to find).
            worker = self._acquire(block=not batch.running and batch.source is None)
            if worker is None:
                return
            index = batch.next_for(worker)
            if index is None:  # nothing for this worker until the caller finds more items
                self._release(worker)
                return
            start = time.monotonic()
            try:
                worker.send((batch.fn, batch.items[index]))
            except OSError:  # the worker died while idle
                self._died(batch, worker, index, start)
                continue
            except Exception:  # fn or the item cannot be pickled: the caller's mistake
                self._retire(worker, replace=True)
                raise
            batch.running[worker.reader] = RunningItem(worker, index, start, check_at=start + batch.timeout_s)

    def _collect(self, batch: Batch, block: bool = True) -> None:
        """Wait for a reply or for the next look at a worker's CPU time, whichever comes first (without `block`: take
        the replies already there, and look at the workers due for a look)."""
        if not batch.running:
            return
        next_check = min(item.check_at for item in batch.running.values())
        timeout = max(0.0, next_check - time.monotonic()) if block else 0.0
        if batch.pending:  # a worker another caller releases must not sit idle while this caller's items wait
            timeout = min(timeout, WAITING_POLL_S)
        try:
            ready = wait(list(batch.running), timeout=timeout)
        except OSError:  # close() in another thread closed a pipe of this batch
            if not self._closed:
                raise
            ready = list(batch.running)  # each one's recv fails, and _died reports the closed pool
        now = time.monotonic()
        for conn in ready:
            item = batch.running.pop(conn)
            try:
                status, payload, cpu_s, item.worker.cpu_s = conn.recv()
            except (EOFError, OSError):  # the worker died before its deadline
                self._died(batch, item.worker, item.index, item.start)
                continue
            self._release(item.worker)
            elapsed = now - item.start
            if cpu_s > batch.timeout_s:  # finished, but late: the same verdict as if it had been killed
                outcome = TaskOutcome("timeout", error=batch.over_budget(), elapsed_s=elapsed, cpu_s=cpu_s)
            elif status == "ok":
                outcome = TaskOutcome("ok", value=payload, elapsed_s=elapsed, cpu_s=cpu_s)
            else:
                error_type, text = payload
                outcome = TaskOutcome("error", error=text, error_type=error_type, elapsed_s=elapsed, cpu_s=cpu_s)
            batch.outcomes[item.index] = outcome
        for conn, item in list(batch.running.items()):
            if item.check_at <= now and not self._reply_waiting(conn):  # read on the next round
                self._check(batch, conn, item, now)

    @staticmethod
    def _reply_waiting(conn: Connection) -> bool:
        """Whether a reply (or the EOF of a dead worker, or a pipe closed by close()) is there to read."""
        try:
            return conn.poll(0)
        except OSError:
            return True

    def _check(self, batch: Batch, conn: Connection, item: RunningItem, now: float) -> None:
        """Kill the item's worker at its CPU budget ("timeout") or at the wall-clock backstop ("stalled"); otherwise
        look again when the remaining budget could be used up at the earliest."""
        elapsed = now - item.start
        total = item.worker.total_cpu_s()
        used = elapsed if total is None else total - item.worker.cpu_s  # without /proc: wall-clock time
        if used >= batch.timeout_s:
            status, error = "timeout", batch.over_budget()
        elif elapsed >= batch.wall_limit_s:
            status = "stalled"
            error = (
                f"used {used:.2f} s of CPU time in {elapsed:.1f} s of wall-clock time, the backstop: "
                "the worker was blocked or the machine is overloaded"
            )
        else:
            pause = max(MIN_POLL_S, batch.timeout_s - used)
            item.check_at = min(now + pause, item.start + batch.wall_limit_s)
            return
        del batch.running[conn]
        batch.outcomes[item.index] = TaskOutcome(status, error=error, elapsed_s=elapsed, cpu_s=used)
        self._retire(item.worker, replace=True)

    def _died(self, batch: Batch, worker: WorkerHandle, index: int, start: float) -> None:
        """The worker died with the item, before its deadline: retry once on a fresh worker, then "crashed"."""
        how = worker.death()
        self._retire(worker, replace=True)
        first = batch.deaths.get(index)
        if self._closed:
            error = f"the pool was closed while the item ran (worker ended with {how})"
        elif first is None:
            batch.deaths[index] = how
            batch.pending.append(index)  # the top of the stack: it runs next
            return
        else:
            error = f"the worker process died ({first}), and again on a fresh worker ({how})"
        batch.outcomes[index] = TaskOutcome("crashed", error=error, elapsed_s=time.monotonic() - start)

    async def amap(
        self,
        fn: Callable[..., Any],
        items: Sequence[tuple],
        timeout_s: float = 5.0,
        wall_limit_s: float | None = None,
        affinity: Callable[[tuple], Hashable] | None = None,
    ) -> list[TaskOutcome]:
        """`map` for asyncio code: runs in a thread so the event loop keeps serving while workers compute."""
        return await asyncio.to_thread(self.map, fn, items, timeout_s, wall_limit_s, affinity)

    def worker_pids(self) -> list[int]:
        with self._lock:
            return [w.process.pid for w in self._all]

    def close(self) -> None:
        """Stop every worker (killing busy ones). Safe to call more than once."""
        self._closed = True
        self._finalizer()

    @staticmethod
    def _shutdown(workers: set[WorkerHandle], lock: threading.Lock) -> None:
        with lock:
            doomed = list(workers)
            workers.clear()
        for worker in doomed:
            worker.stop()

    def __enter__(self) -> DeadlinePool:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
