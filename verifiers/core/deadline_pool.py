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

Each worker is a fresh interpreter (`python -c`, through `subprocess`) talking pickles over two pipes, not a
`multiprocessing` child: forking a threaded trainer can deadlock, and 'spawn'/'forkserver' children re-import the
caller's `__main__` (a training script without an `if __name__ == "__main__":` guard would start training again
in every worker, and code run from stdin cannot start workers at all). `initializer` runs once per worker (e.g. to
import sympy), so items do not pay for it; an item's deadline starts when it is handed to a ready worker.

Thread safety: idle workers sit in a queue; a caller takes workers from it, so concurrent callers share the pool
fairly and never use the same worker at once. A caller whose items wait for a worker looks at the queue every
`WAITING_POLL_S`, so a worker another caller releases serves them at once: it waits neither for its own slow items to
end nor for a replacement worker to finish starting. POSIX only (the pipes are passed as inherited file descriptors).
"""

from __future__ import annotations

import asyncio
import atexit
import os
import pickle
import queue
import signal
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Any

from .affinity import KeyOwners

# Time a new worker may take to import its libraries before the pool gives up on it.
STARTUP_TIMEOUT_S = 120.0
# The wall-clock backstop, as a multiple of the CPU budget: generous, so that only a worker that got less than a tenth
# of a core (blocked, stopped, or on a machine overloaded tenfold) reaches it.
WALL_LIMIT_FACTOR = 10.0
# Shortest pause between two reads of a running worker's CPU time (the kernel counts it in 10 ms ticks).
MIN_POLL_S = 0.02
# How often a caller with items waiting for a worker looks for one that another caller has released (a release
# wakes only the caller whose item ended).
WAITING_POLL_S = 0.05
# With `affinity`, how many of the oldest waiting items a free worker looks through for one of its own keys: enough
# for the rest of a GRPO group (found one after another), few enough that a batch of thousands of items costs no
# quadratic scan.
AFFINITY_LOOKAHEAD = 16

_CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_HAS_PROC = os.path.exists(f"/proc/{os.getpid()}/stat")


@dataclass(frozen=True)
class TaskOutcome:
    """Result of one item. `status` is one of:

    - "ok": `value` holds the return value;
    - "error": the function raised (`error` holds the text, `error_type` the exception class name);
    - "timeout": the item used more than its CPU budget, and was killed if it had not finished;
    - "crashed": the worker died before the deadline, twice (the item is retried once on a fresh worker), or the pool
      was closed while the item ran; `error` says how (exit code or signal);
    - "stalled": the worker hit the wall-clock backstop without using its CPU budget (blocked, or starved by load).

    `cpu_s` is the item's CPU time as measured, `elapsed_s` its wall-clock time.
    """

    status: str
    value: Any = None
    error: str = ""
    elapsed_s: float = 0.0
    error_type: str = ""
    cpu_s: float = 0.0


def process_cpu_seconds(pid: int) -> float | None:
    """CPU time (user + system, all threads) used so far by process `pid`, from /proc; None where it cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
        fields = stat[stat.rindex(b")") + 2 :].split()  # the name in parentheses may contain spaces
        return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS  # utime and stime, fields 14 and 15
    except (OSError, ValueError, IndexError):
        return None


def _worker_main(
    reader: Connection, writer: Connection, initializer: Callable[[], None] | None, memory_limit_mb: int | None
) -> None:
    """Worker loop: receive (fn, args), send (status, payload, the item's CPU time, this process's CPU time so far)
    with status "ok" or "error"; exit on None or a closed pipe."""
    if memory_limit_mb:
        try:
            import resource

            limit = memory_limit_mb * 1024 * 1024
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        except (ImportError, ValueError, OSError):  # not every platform allows it; the deadline still holds
            pass
    if initializer is not None:
        initializer()
    writer.send(("ready", None, 0.0, time.process_time()))
    while True:
        try:
            message = reader.recv()
        except (EOFError, OSError):  # the parent went away
            return
        if message is None:
            return
        fn, args = message
        start = time.process_time()
        try:
            status, payload = "ok", fn(*args)
        except BaseException as exc:  # report everything (MemoryError, RecursionError) instead of dying
            status, payload = "error", (type(exc).__name__, f"{type(exc).__name__}: {exc}")
        now = time.process_time()
        try:
            writer.send((status, payload, now - start, now))
        except (pickle.PicklingError, TypeError, AttributeError) as exc:  # an unpicklable return value
            text = f"could not send the result back: {type(exc).__name__}: {exc}"
            writer.send(("error", (type(exc).__name__, text), now - start, now))
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
        self.failed = False  # it ended, or said something else than "ready", before it started
        self.start_by = time.monotonic() + STARTUP_TIMEOUT_S
        self.cpu_s = 0.0  # this process's CPU time when it last reported: the start of the next item's budget

    def send(self, message: Any) -> None:
        self.writer.send(message)

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


def _child_main(read_fd: int, write_fd: int) -> None:
    """Entry point of a worker interpreter."""
    reader, writer = Connection(read_fd, writable=False), Connection(write_fd, readable=False)
    initializer, memory_limit_mb = reader.recv()
    _worker_main(reader, writer, initializer, memory_limit_mb)


@dataclass
class _Running:
    """An item in flight: its worker, when it was handed over, and when to look at the worker's CPU time next."""

    worker: _Worker
    index: int
    start: float
    check_at: float


class _Batch:
    """The state of one `map` call. `items` is a sequence, or an iterator whose items are taken one at a time while the
    workers compute (`source`)."""

    def __init__(
        self,
        fn: Callable[..., Any],
        items: Iterable[tuple],
        timeout_s: float,
        wall_limit_s: float,
        affinity: Callable[[tuple], Hashable] | None,
        owners: KeyOwners,
    ):
        self.fn, self.timeout_s, self.wall_limit_s = fn, timeout_s, wall_limit_s
        self.affinity, self.owners = affinity, owners  # with `affinity`: the worker of each key (the pool's)
        self.keys: dict[int, Hashable] = {}  # each item's key, computed once
        self.source: Iterator[tuple] | None = None if isinstance(items, Sequence) else iter(items)
        self.items: list[tuple] = [] if self.source is not None else list(items)
        self.outcomes: list[TaskOutcome | None] = [None] * len(self.items)
        self.pending = list(range(len(self.items)))[::-1]  # a stack: pop() yields items in input order
        self.running: dict[Connection, _Running] = {}
        self.deaths: dict[int, str] = {}  # item -> how its first worker died

    def pull(self) -> None:
        """Take the next item from the source (the caller's code runs meanwhile); it goes after every pending one."""
        try:
            item = next(self.source)  # type: ignore[arg-type]
        except StopIteration:
            self.source = None
            return
        self.items.append(item)
        self.outcomes.append(None)
        self.pending.insert(0, len(self.items) - 1)

    def over_budget(self) -> str:
        return f"exceeded {self.timeout_s:g} s of CPU time"

    def next_for(self, worker: _Worker) -> int | None:
        """The pending item `worker` runs next: the oldest, or with `affinity` the oldest of the worker's own keys, else
        the oldest of a key no worker has taken yet (it becomes the worker's), else the oldest of another worker's key
        once every item has been found (None until then: the next items found are likely of new keys, and keeping a
        key's items on one worker is worth a pull's wait; after that a free worker never waits for another's key)."""
        if self.affinity is None:
            return self.pending.pop()
        unowned = None
        for position in range(len(self.pending) - 1, max(-1, len(self.pending) - 1 - AFFINITY_LOOKAHEAD), -1):
            owner = self.owners.owner(self.key(self.pending[position]))
            if owner is worker:
                return self.pending.pop(position)
            if owner is None and unowned is None:
                unowned = position
        if unowned is None:
            return None if self.source is not None else self.pending.pop()
        self.owners.take(self.key(self.pending[unowned]), worker)
        return self.pending.pop(unowned)

    def key(self, index: int) -> Hashable:
        if index not in self.keys:
            self.keys[index] = self.affinity(self.items[index])  # type: ignore[misc]
        return self.keys[index]


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
        self._idle: queue.SimpleQueue[_Worker] = queue.SimpleQueue()
        self._all: set[_Worker] = set()
        self._lock = threading.Lock()
        self._owners = KeyOwners()  # for `map`'s affinity, across calls
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
        self._owners.disown(worker)
        with self._lock:
            self._all.discard(worker)
        if replace and not self._closed:
            self._idle.put(self._spawn())

    def _acquire(self, block: bool) -> _Worker | None:
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
        batch = _Batch(fn, items, timeout_s, wall_limit_s, affinity, self._owners)
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

    def _dispatch(self, batch: _Batch) -> None:
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
            batch.running[worker.reader] = _Running(worker, index, start, check_at=start + batch.timeout_s)

    def _collect(self, batch: _Batch, block: bool = True) -> None:
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

    def _check(self, batch: _Batch, conn: Connection, item: _Running, now: float) -> None:
        """Kill the item's worker at its CPU budget ("timeout") or at the wall-clock backstop ("stalled"); otherwise
        look again when the remaining budget could be used up at the earliest."""
        elapsed = now - item.start
        total = process_cpu_seconds(item.worker.process.pid) if _HAS_PROC else None
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

    def _died(self, batch: _Batch, worker: _Worker, index: int, start: float) -> None:
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
