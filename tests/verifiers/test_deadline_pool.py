"""The deadline pool: hard per-item deadlines from any thread or event loop, killed workers replaced, none leaked."""

import asyncio
import operator
import os
import threading
import time

import pytest

from trl_grpo_ext.verifiers.deadline_pool import DeadlinePool

MARGIN_S = 3.0  # scheduling slack on a shared 2-core machine


@pytest.fixture(scope="module")
def pool():
    with DeadlinePool(n_workers=2) as p:
        yield p


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


def test_results_come_back_in_input_order(pool):
    outcomes = pool.map(operator.add, [(i, 10 * i) for i in range(20)], timeout_s=10)
    assert [o.status for o in outcomes] == ["ok"] * 20
    assert [o.value for o in outcomes] == [11 * i for i in range(20)]


def test_runs_in_other_processes(pool):
    assert pool.run(os.getpid, (), timeout_s=10).value != os.getpid()


def test_timeout_kills_and_replaces_the_worker(pool):
    before = set(pool.worker_pids())
    start = time.monotonic()
    outcomes = pool.map(time.sleep, [(60,), (0.01,)], timeout_s=1.0)
    elapsed = time.monotonic() - start
    assert [o.status for o in outcomes] == ["timeout", "ok"]
    assert elapsed < 1.0 + MARGIN_S
    after = set(pool.worker_pids())
    assert len(after) == 2 and before != after
    killed = before - after
    assert killed and not any(_alive(pid) for pid in killed)
    assert pool.run(operator.mul, (6, 7), timeout_s=30).value == 42  # the replacement works


def test_exceptions_are_reported_not_raised(pool):
    outcome = pool.run(operator.truediv, (1, 0), timeout_s=10)
    assert outcome.status == "error"
    assert "ZeroDivisionError" in outcome.error


def test_unpicklable_result_is_an_error(pool):
    outcome = pool.run(threading.Lock, (), timeout_s=10)
    assert outcome.status == "error"
    assert "could not send the result back" in outcome.error


def test_a_worker_that_dies_is_reported_and_replaced(pool):
    outcome = pool.run(os._exit, (3,), timeout_s=10)
    assert (outcome.status, outcome.error) == ("error", "worker process died")
    assert pool.run(operator.add, (1, 1), timeout_s=30).value == 2


def test_concurrent_callers_from_threads(pool):
    results = {}

    def call(k):
        results[k] = [o.value for o in pool.map(operator.mul, [(k, i) for i in range(10)], timeout_s=30)]

    threads = [threading.Thread(target=call, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert results == {k: [k * i for i in range(10)] for k in range(4)}


def test_deadline_holds_in_a_thread_while_another_thread_works(pool):
    timings = {}

    def slow():
        start = time.monotonic()
        timings["outcome"] = pool.run(time.sleep, (60,), timeout_s=1.0)
        timings["elapsed"] = time.monotonic() - start

    thread = threading.Thread(target=slow)
    thread.start()
    assert [o.value for o in pool.map(abs, [(-1,), (-2,)], timeout_s=30)] == [1, 2]
    thread.join(60)
    assert timings["outcome"].status == "timeout"
    assert timings["elapsed"] < 1.0 + MARGIN_S


def test_amap_under_asyncio(pool):
    async def main():
        ticks = 0

        async def ticker():
            nonlocal ticks
            while True:
                await asyncio.sleep(0.02)
                ticks += 1

        task = asyncio.create_task(ticker())
        outcomes = await pool.amap(time.sleep, [(0.5,), (60,)], timeout_s=1.0)
        task.cancel()
        return outcomes, ticks

    outcomes, ticks = asyncio.run(main())
    assert [o.status for o in outcomes] == ["ok", "timeout"]
    assert ticks > 10


def test_memory_limit_turns_a_runaway_allocation_into_an_error():
    with DeadlinePool(n_workers=1, memory_limit_mb=1024) as small:
        outcome = small.run(bytearray, (4 * 1024**3,), timeout_s=30)
        assert outcome.status == "error" and "MemoryError" in outcome.error
        assert small.run(operator.add, (2, 2), timeout_s=30).value == 4


def test_close_leaves_no_child_and_refuses_new_work():
    p = DeadlinePool(n_workers=2)
    p.map(time.sleep, [(60,), (0.01,)], timeout_s=0.5)
    pids = p.worker_pids()
    p.close()
    p.close()
    assert pids and not any(_alive(pid) for pid in pids)
    with pytest.raises(RuntimeError, match="closed"):
        p.run(operator.add, (1, 2))


def test_close_kills_a_worker_busy_in_another_thread():
    p = DeadlinePool(n_workers=1)
    p.run(abs, (1,), timeout_s=30)
    pid = p.worker_pids()[0]
    result = {}
    thread = threading.Thread(target=lambda: result.update(o=p.run(time.sleep, (60,), timeout_s=60)))
    thread.start()
    deadline = time.monotonic() + 30
    while not p._idle.empty() and time.monotonic() < deadline:  # until the thread holds the only worker
        time.sleep(0.01)
    time.sleep(0.2)
    p.close()
    thread.join(30)
    assert not thread.is_alive()
    assert result["o"].status == "error"
    assert not _alive(pid)


@pytest.mark.parametrize("n_workers", [0, -1, 1.5, "2"])
def test_bad_worker_count(n_workers):
    with pytest.raises(ValueError, match="n_workers"):
        DeadlinePool(n_workers=n_workers)


@pytest.mark.parametrize("timeout_s", [0, -1])
def test_bad_timeout(pool, timeout_s):
    with pytest.raises(ValueError, match="timeout_s"):
        pool.map(abs, [(1,)], timeout_s=timeout_s)


def test_wait_until_ready_returns_once_every_worker_has_run_its_initializer(tmp_path, monkeypatch):
    from pool_helpers import record_start

    monkeypatch.setenv("POOL_TEST_DIR", str(tmp_path))
    with DeadlinePool(n_workers=2, initializer=record_start) as p:
        p.wait_until_ready()
        assert sorted(os.listdir(tmp_path)) == sorted(str(pid) for pid in p.worker_pids())
        assert [outcome.value for outcome in p.map(operator.neg, [(1,), (2,)])] == [-1, -2]


def test_wait_until_ready_reports_a_worker_that_cannot_start():
    from pool_helpers import fail_to_start

    with DeadlinePool(n_workers=1, initializer=fail_to_start) as p:
        with pytest.raises(RuntimeError, match="did not start"):
            p.wait_until_ready()


@pytest.mark.parametrize(
    "local_world_size, share", [(None, 1), ("1", 1), ("2", 2), ("not a number", 1), ("1000", None)]
)
def test_default_worker_count_shares_the_cores_among_local_training_processes(monkeypatch, local_world_size, share):
    from trl_grpo_ext.verifiers.deadline_pool import default_worker_count

    cores = len(os.sched_getaffinity(0))
    if local_world_size is None:
        monkeypatch.delenv("LOCAL_WORLD_SIZE", raising=False)
    else:
        monkeypatch.setenv("LOCAL_WORLD_SIZE", local_world_size)
    assert default_worker_count() == (max(1, cores // share) if share else 1)


def test_a_replacement_still_starting_does_not_delay_the_deadlines_of_running_items():
    """After a timeout the pool starts a replacement; while it starts, the other worker's item keeps its deadline."""
    from pool_helpers import slow_start

    timeout_s = 2.0
    items = [(100.0,), (0.5,), (100.0,), (0.0,)]  # A times out; B finishes, then C runs on that worker and times out
    with DeadlinePool(n_workers=2, initializer=slow_start) as p:
        p.wait_until_ready()
        outcomes = p.map(time.sleep, items, timeout_s=timeout_s)
    a, b, c, d = outcomes
    assert (a.status, b.status, c.status, d.status) == ("timeout", "ok", "timeout", "ok")
    assert c.elapsed_s < timeout_s + 1.0  # not timeout + the 3 s start of A's replacement
