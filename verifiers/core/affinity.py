"""Which worker of a `DeadlinePool` holds the caches of which key (the math verifier keys on the reference).

A worker keeps what it parsed; items that share a key cost less on the worker that met the key before. Owners persist
across `map` calls (the next step of a training run, the next epoch) for the most recent `MAX_KEYS` keys, and are
forgotten with their worker when it is killed or dies. Placement only: which worker runs an item never changes its
outcome.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable
from typing import Any

# As many keys as a math worker keeps parsed leaves (`parse_leaf`'s cache): an older owner's cache no longer holds it.
MAX_KEYS = 4096


class KeyOwners:
    """A bounded, thread-safe map from key to the worker that took it first."""

    def __init__(self, max_keys: int = MAX_KEYS):
        self._owners: dict[Hashable, Any] = {}
        self._max_keys = max_keys
        self._lock = threading.Lock()

    def owner(self, key: Hashable) -> Any:
        return self._owners.get(key)

    def take(self, key: Hashable, worker: Any) -> None:
        with self._lock:
            self._owners.pop(key, None)
            self._owners[key] = worker
            while len(self._owners) > self._max_keys:
                del self._owners[next(iter(self._owners))]

    def disown(self, worker: Any) -> None:
        """The worker was killed or died: its keys are free for the others (its caches died with it)."""
        with self._lock:
            self._owners = {key: owner for key, owner in self._owners.items() if owner is not worker}

    def __len__(self) -> int:
        return len(self._owners)
