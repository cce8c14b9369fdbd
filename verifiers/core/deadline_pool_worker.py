"""The worker side of `DeadlinePool`: what runs inside each worker interpreter.

The parent (`deadline_pool_handle.py`) starts a fresh interpreter that calls `run_worker` with the two pipe ends it
inherited, then sends `(initializer, memory_limit_mb)`. The worker caps its address space, runs the initializer once,
says "ready", and then runs one `(fn, args)` at a time. It measures each item's CPU time (`time.process_time()` around
the call) and sends it with the result, so that the parent judges an item over its budget a "timeout" even when it
finished: the verdict never depends on when the parent looked. Killing a runaway item is the parent's job.

Nothing here runs in the parent, and nothing of the parent's side is used here (standard library only).
"""

from __future__ import annotations

import pickle
import time
from collections.abc import Callable
from multiprocessing.connection import Connection


def run_worker(read_fd: int, write_fd: int) -> None:
    """Entry point of a worker interpreter: the file descriptors of its two pipes to the parent."""
    reader, writer = Connection(read_fd, writable=False), Connection(write_fd, readable=False)
    initializer, memory_limit_mb = reader.recv()
    serve_items(reader, writer, initializer, memory_limit_mb)


def serve_items(
    reader: Connection, writer: Connection, initializer: Callable[[], None] | None, memory_limit_mb: int | None
) -> None:
    """Worker loop: receive (fn, args), send (status, payload, the item's CPU time, this process's CPU time so far)
    with status "ok" or "error"; exit on None or a closed pipe."""
    if memory_limit_mb:
        limit_memory(memory_limit_mb)
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


def limit_memory(memory_limit_mb: int) -> None:
    """Cap this process's address space, so that a runaway expression fails with MemoryError instead of swapping."""
    try:
        import resource

        limit = memory_limit_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    except (ImportError, ValueError, OSError):  # not every platform allows it; the deadline still holds
        pass
