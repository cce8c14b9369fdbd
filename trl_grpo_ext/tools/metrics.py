"""Counters of the Python tool's calls in this process, read per training step by `GRPOExtTrainer`."""

from __future__ import annotations

import threading
from dataclasses import dataclass


@dataclass(frozen=True)
class ToolCounts:
    calls: int = 0
    machinery_errors: int = 0
    seconds: float = 0.0

    def __sub__(self, earlier: ToolCounts) -> ToolCounts:
        return ToolCounts(
            self.calls - earlier.calls,
            self.machinery_errors - earlier.machinery_errors,
            self.seconds - earlier.seconds,
        )

    def step_metrics(self, completions: int) -> dict[str, float]:
        """The metrics of one generation of `completions` completions in which these calls were made."""
        return {
            "tools/python/calls_per_completion": self.calls / max(completions, 1),
            "tools/python/errors": float(self.machinery_errors),
            "tools/python/time_s": self.seconds,
            "tools/python/time_per_call_s": self.seconds / self.calls if self.calls else 0.0,
        }


class ToolStats:
    """Calls, machinery errors (the tool's own failures, not the model's exceptions) and wall time, thread-safe."""

    def __init__(self):
        self._lock = threading.Lock()
        self._counts = ToolCounts()

    def record(self, seconds: float, machinery_error: bool) -> None:
        with self._lock:
            c = self._counts
            self._counts = ToolCounts(c.calls + 1, c.machinery_errors + int(machinery_error), c.seconds + seconds)

    def snapshot(self) -> ToolCounts:
        with self._lock:
            return self._counts


TOOL_STATS = ToolStats()
