"""The state of one `DeadlinePool.map` call: its items (found all at once or one at a time), which pending item a free
worker runs next (with `affinity`, one of the keys the worker already holds, through `affinity.KeyOwners`), the items
in flight, and the `TaskOutcome` of each item.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from .affinity import KeyOwners
from .deadline_pool_handle import WorkerHandle

# With `affinity`, how many of the oldest waiting items a free worker looks through for one of its own keys: enough
# for the rest of a GRPO group (found one after another), few enough that a batch of thousands of items costs no
# quadratic scan.
AFFINITY_LOOKAHEAD = 16


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


@dataclass
class RunningItem:
    """An item in flight: its worker, when it was handed over, and when to look at the worker's CPU time next."""

    worker: WorkerHandle
    index: int
    start: float
    check_at: float


class Batch:
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
        self.running: dict[Connection, RunningItem] = {}
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

    def next_for(self, worker: WorkerHandle) -> int | None:
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
