"""The verdict cache (bounded by bytes, least recently used first), its option, and the per-batch metrics."""

import math
import sys
import threading

import pytest

from trl_grpo_ext.verifiers.core.cache import (
    ENTRY_OVERHEAD_BYTES,
    BatchStats,
    VerdictCache,
    batch_metrics,
    check_cache_mb,
    estimate_bytes,
    verdict_namespace,
)


def entry_size(key, value) -> int:
    return estimate_bytes(key) + estimate_bytes(value) + ENTRY_OVERHEAD_BYTES


def test_estimate_bytes_counts_every_string_of_a_key():
    key = ("ns", ("x^2", "y"), "z")
    expected = sys.getsizeof(key) + sys.getsizeof("ns") + sys.getsizeof(key[1])
    expected += sys.getsizeof("x^2") + sys.getsizeof("y") + sys.getsizeof("z")
    assert estimate_bytes(key) == expected
    assert estimate_bytes({"a": "bb"}) == sys.getsizeof({"a": "bb"}) + sys.getsizeof("a") + sys.getsizeof("bb")


def test_eviction_by_bytes_drops_the_least_recently_used():
    keys = [("k", str(i) * 10) for i in range(3)]
    value = (True, "symbolic")
    size = entry_size(keys[0], value)
    assert all(entry_size(k, value) == size for k in keys)
    cache = VerdictCache(max_bytes=2 * size)  # room for two entries, not three
    cache.put(keys[0], value)
    cache.put(keys[1], value)
    assert cache.get(keys[0]) == value  # keys[0] is now the most recently used
    cache.put(keys[2], value)
    assert cache.get(keys[1]) is None and cache.get(keys[0]) == value and cache.get(keys[2]) == value
    assert len(cache) == 2 and cache.bytes == 2 * size


def test_a_large_entry_evicts_as_many_as_it_needs_and_one_over_the_bound_is_not_stored():
    small = [(("s", str(i)), 1) for i in range(4)]
    small_size = entry_size(*small[0])
    cache = VerdictCache(max_bytes=4 * small_size)
    for key, value in small:
        cache.put(key, value)
    big_key = ("b", "x" * (small_size * 2))  # about three small entries' worth
    big_size = entry_size(big_key, 1)
    assert 2 * small_size < big_size <= 3 * small_size
    cache.put(big_key, 1)
    assert [cache.get(key) for key, _ in small] == [None, None, None, 1]
    assert cache.bytes == big_size + small_size
    cache.put(("huge", "x" * 5 * small_size), 1)
    assert cache.get(("huge", "x" * 5 * small_size)) is None and cache.bytes == big_size + small_size


def test_replacing_a_key_keeps_the_byte_count_exact():
    cache = VerdictCache(max_bytes=10_000)
    cache.put(("a",), "short")
    cache.put(("a",), "a much longer value than before")
    assert len(cache) == 1 and cache.bytes == entry_size(("a",), "a much longer value than before")
    cache.clear()
    assert len(cache) == 0 and cache.bytes == 0


def test_zero_bytes_stores_nothing():
    cache = VerdictCache(max_bytes=0)
    cache.put(("a",), 1)
    assert cache.get(("a",)) is None and len(cache) == 0


def test_concurrent_puts_keep_the_bound_and_the_count():
    value = (False, "different")
    size = entry_size(("t0", "0000"), value)
    cache = VerdictCache(max_bytes=50 * size)
    barrier = threading.Barrier(4)

    def fill(thread: int) -> None:
        barrier.wait()
        for i in range(500):
            cache.put((f"t{thread}", f"{i:04d}"), value)
            cache.get((f"t{(thread + 1) % 4}", f"{i:04d}"))

    threads = [threading.Thread(target=fill, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(cache) == 50 and cache.bytes == 50 * size


@pytest.mark.parametrize("value", [-1, "64", True, float("inf"), float("nan"), None])
def test_cache_mb_is_checked(value):
    with pytest.raises(
        ValueError, match=rf"math verifier option cache_mb={value!r} is not valid.*0 turns the cache off"
    ):
        check_cache_mb("math", value)


def test_cache_mb_accepts_zero_and_sizes():
    assert check_cache_mb("math", 0) == 0.0 and check_cache_mb("math", 0.5) == 0.5


def test_the_namespace_changes_with_whatever_can_change_a_verdict():
    base = verdict_namespace("math", "r1", {"rel_tol": 0.0, "abs_tol": 0.0}, ("sympy",))
    assert base == verdict_namespace("math", "r1", {"abs_tol": 0.0, "rel_tol": 0.0}, ("sympy",))  # order-free
    others = [
        verdict_namespace("math", "r2", {"rel_tol": 0.0, "abs_tol": 0.0}, ("sympy",)),
        verdict_namespace("math", "r1", {"rel_tol": 1e-4, "abs_tol": 0.0}, ("sympy",)),
        verdict_namespace("code", "r1", {"rel_tol": 0.0, "abs_tol": 0.0}, ("sympy",)),
        verdict_namespace("math", "r1", {"rel_tol": 0.0, "abs_tol": 0.0}, ()),
    ]
    assert len({base, *others}) == 5


def test_batch_metrics_exact_values():
    stats = BatchStats(
        items=8, duplicates=5, cache_lookups=4, cache_hits=1, item_seconds=[0.1 * i for i in range(1, 9)]
    )
    metrics = batch_metrics(2.5, stats)
    assert metrics["verify_time_s"] == 2.5
    assert metrics["dedup_rate"] == 5 / 8 and metrics["cache_hit_rate"] == 0.25
    # nearest rank: p50 is the 4th of 8 sorted times, p95 the 8th
    assert metrics["verify_time_s_p50"] == pytest.approx(0.4) and metrics["verify_time_s_p95"] == pytest.approx(0.8)
    assert metrics["verify_time_s_max"] == pytest.approx(0.8)
    twenty = BatchStats(items=20, item_seconds=list(range(20, 0, -1)))
    assert batch_metrics(1.0, twenty)["verify_time_s_p95"] == 19  # ceil(0.95 * 20) = 19th smallest
    assert batch_metrics(1.0, twenty)["verify_time_s_p50"] == 10


def test_batch_metrics_without_stats_or_lookups():
    assert batch_metrics(0.3, None) == {"verify_time_s": 0.3}
    no_lookups = batch_metrics(0.3, BatchStats(items=2, item_seconds=[0.1, 0.2]))
    assert "cache_hit_rate" not in no_lookups and no_lookups["dedup_rate"] == 0.0
    assert not any(math.isnan(v) for v in no_lookups.values())
