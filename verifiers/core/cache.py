"""A verdict cache bounded by memory, and the per-batch statistics a verifier reports with its results.

GRPO asks the same questions again: G completions of one prompt often reach the same final answer, and the same
prompts come back every epoch. A verifier keeps what it decided in a `VerdictCache` and decides each distinct
question of a batch once.

The cache is least-recently-used and bounded by an estimate of the bytes it holds (`sys.getsizeof` of every string
and number of each key and value, plus a fixed overhead per entry), not by a count: one answer may be a few bytes or a
100 kB expression. Its keys start with a namespace (`verdict_namespace`) naming everything besides the content that
can change a verdict: the verifier, its options, its rules version and the versions of the libraries it relies on,
so that a cache is never read by a verifier that would decide differently. It is thread-safe: concurrent batches
(overlapped rewards, AsyncGRPOTrainer's threads) share it.

What a verifier may store is its decision on the content, never a failure of the machinery (a worker that crashed,
stalled or could not start: a retry may succeed) nor a timeout. A timeout is not cached because the deadline is CPU
time, the same on an idle or a loaded machine, but the same computation can still take more CPU time under load (a
busy SMT sibling, cache misses, the kernel's 10 ms ticks) and an item just over its budget may fit it on the next
try: caching one such verdict would make it permanent.
"""

from __future__ import annotations

import hashlib
import math
import sys
import threading
from collections import OrderedDict
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from typing import Any

# Per-entry bookkeeping of the OrderedDict (its node, the key tuple's header and the stored pair), measured with
# tracemalloc on CPython 3.11 at about 190 bytes (keys and values allocated beforehand); rounded up.
ENTRY_OVERHEAD_BYTES = 240
# A verifier option: the bound in MiB (0: no cache). 64 MiB holds about 64,000 verdicts of the public math pairs' size
# (1 kB each by `estimate_bytes`; 650 bytes measured with tracemalloc: the estimate errs high).
DEFAULT_CACHE_MB = 64


def check_cache_mb(verifier: str, value: Any) -> float:
    """The `cache_mb` option, checked: a non-negative number of MiB (0 turns the cache off)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0 or value == float("inf"):
        raise ValueError(
            f"{verifier} verifier option cache_mb={value!r} is not valid: give the size of the verdict cache in MiB, "
            f"a finite number >= 0 (0 turns the cache off; default {DEFAULT_CACHE_MB})."
        )
    return float(value)


def package_version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown"


def verdict_namespace(
    verifier: str, rules_version: str, options: Mapping[str, Any], libraries: Iterable[str] = ()
) -> str:
    """A short, stable name for everything besides the content that can change a verdict: the verifier, its rules
    version (bumped when its rules change), this package's version, the versions of `libraries`, and its options."""
    parts = [verifier, rules_version, package_version("trl-grpo-ext")]
    parts += [f"{lib}={package_version(lib)}" for lib in libraries]
    parts += [f"{key}={options[key]!r}" for key in sorted(options)]
    return f"{verifier}:{hashlib.sha1(chr(0).join(parts).encode()).hexdigest()[:16]}"


def estimate_bytes(value: Any, depth: int = 0) -> int:
    """Bytes held by `value`: `sys.getsizeof` of it and, for containers (tuple, list, dict, set, dataclass), of
    everything in them; objects shared with the rest of the process (small ints, None) are counted anyway."""
    size = sys.getsizeof(value)
    if depth > 8:  # verdicts are shallow; a deeper structure is counted at its top levels only
        return size
    if isinstance(value, (tuple, list, set, frozenset)):
        return size + sum(estimate_bytes(item, depth + 1) for item in value)
    if isinstance(value, dict):
        return size + sum(estimate_bytes(k, depth + 1) + estimate_bytes(v, depth + 1) for k, v in value.items())
    if hasattr(value, "__dataclass_fields__"):
        return size + sum(estimate_bytes(getattr(value, name), depth + 1) for name in value.__dataclass_fields__)
    return size


class VerdictCache:
    """LRU map from a question (a hashable key, normally a tuple of strings) to a verifier's decision, holding at most
    `max_bytes` by `estimate_bytes`. `max_bytes=0` stores nothing. Thread-safe."""

    def __init__(self, max_bytes: int):
        self.max_bytes = int(max_bytes)
        self._entries: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> Any | None:
        """The stored decision (and mark it recently used), or None."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            self._entries.move_to_end(key)
            return entry[0]

    def put(self, key: Hashable, value: Any, size: int | None = None) -> None:
        """Store a decision, evicting the least recently used ones until the total fits; one larger than the whole
        bound is not stored. `size`: the entry's bytes when the caller counts them itself (default: `estimate_bytes`
        of key and value, plus the bookkeeping)."""
        if not self.max_bytes:
            return
        if size is None:
            size = estimate_bytes(key) + estimate_bytes(value) + ENTRY_OVERHEAD_BYTES
        if size > self.max_bytes:
            return
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            self._entries[key] = (value, size)
            self._bytes += size
            while self._bytes > self.max_bytes:
                _, (_, evicted) = self._entries.popitem(last=False)
                self._bytes -= evicted

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._bytes = 0

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def bytes(self) -> int:
        """The estimated bytes held now."""
        return self._bytes


@dataclass
class BatchStats:
    """What one `verify_batch_with_stats` call did, returned with its results (never kept on the verifier, so that
    concurrent calls cannot mix them).

    items: items asked. duplicates: items whose question (after extraction and normalisation) another item of the same
    batch asked first; they are decided once. cache_hits / cache_lookups: questions answered by the verdict cache, of
    those looked up (the distinct questions that needed the expensive step). item_seconds: each item's own verification
    time (its extraction and normalisation, plus the expensive step it caused or shared), in input order.
    """

    items: int = 0
    duplicates: int = 0
    cache_lookups: int = 0
    cache_hits: int = 0
    item_seconds: list[float] = field(default_factory=list)

    @property
    def dedup_rate(self) -> float:
        return self.duplicates / self.items if self.items else 0.0

    @property
    def cache_hit_rate(self) -> float | None:
        """None when nothing was looked up (a batch decided without the expensive step, or the cache is off)."""
        return self.cache_hits / self.cache_lookups if self.cache_lookups else None


def batch_metrics(seconds: float, stats: BatchStats | None) -> dict[str, float]:
    """The verification metrics of one batch, logged as `<name>/<metric>`:

    - `verify_time_s`: the batch's wall-clock time in the verifier (any verifier);
    - `dedup_rate`: the share of items that repeated a question of the batch, decided once (`BatchStats`);
    - `cache_hit_rate`: the share of the batch's distinct expensive questions answered by the verdict cache (absent
      when none was looked up);
    - `verify_time_s_p50`, `verify_time_s_p95`, `verify_time_s_max`: each item's own verification time, nearest-rank
      percentiles (the smallest time that at least 50 % / 95 % of the items do not exceed).
    """
    metrics = {"verify_time_s": seconds}
    if stats is None or not stats.items:
        return metrics
    metrics["dedup_rate"] = stats.dedup_rate
    if stats.cache_hit_rate is not None:
        metrics["cache_hit_rate"] = stats.cache_hit_rate
    latencies = sorted(stats.item_seconds)
    if latencies:
        for label, share in (("p50", 0.50), ("p95", 0.95)):
            metrics[f"verify_time_s_{label}"] = latencies[max(0, math.ceil(share * len(latencies)) - 1)]
        metrics["verify_time_s_max"] = latencies[-1]
    return metrics
