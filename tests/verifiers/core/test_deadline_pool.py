"""The deadline pool: hard per-item CPU-time deadlines from any thread or event loop, the same verdicts under load,
crashes told apart from timeouts, killed workers replaced, none leaked."""

import asyncio
import functools
import operator
import os
import subprocess
import sys
import threading
import time

import pytest
from pool_helpers import burn_cpu, mark_then_burn, signal_and_wait, sleep_then_time, wait_for_files

from trl_grpo_ext.verifiers.core.deadline_pool import DeadlinePool

MARGIN_S = 3.0  # scheduling slack on a shared 2-core machine
KILL_SLACK_S = 0.5  # CPU time an item may use past its budget before the pool notices (it looks every 20 ms at most)


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


def test_items_from_a_generator_start_while_it_finds_the_next_ones(pool, tmp_path):
    """An iterator of items is consumed as the workers run: the first item is running before the generator has found
    the last (the generator waits for the first item's mark before it finds the last: a pool that read every item
    first would never let it see the mark), timeouts still hold, and the outcomes come back in order."""
    first_ran = tmp_path / "first"
    seen_before_the_last = []

    def items():
        yield (str(first_ran),)
        for i in range(1, 5):
            yield (None, (), 60.0) if i == 3 else (None,)  # the fourth item stalls
        seen_before_the_last.append(wait_for_files([first_ran], timeout_s=10))
        yield (None,)

    pool.wait_until_ready()  # items are sent between two items the generator finds, to workers that have started
    outcomes = pool.map(signal_and_wait, items(), timeout_s=1.0, wall_limit_s=2.0)
    assert [o.status for o in outcomes] == ["ok", "ok", "ok", "stalled", "ok", "ok"]
    assert seen_before_the_last == [True]


def test_runs_in_other_processes(pool):
    assert pool.run(os.getpid, (), timeout_s=10).value != os.getpid()


def test_timeout_kills_and_replaces_the_worker(pool):
    before = set(pool.worker_pids())
    outcomes = pool.map(burn_cpu, [(60,), (0.01,)], timeout_s=1.0)
    assert [o.status for o in outcomes] == ["timeout", "ok"]
    assert 1.0 <= outcomes[0].cpu_s < 1.0 + KILL_SLACK_S
    assert "CPU time" in outcomes[0].error
    after = set(pool.worker_pids())
    assert len(after) == 2 and before != after
    killed = before - after
    assert len(killed) == 1 and not any(_alive(pid) for pid in killed)  # killed once, not retried
    assert pool.run(operator.mul, (6, 7), timeout_s=30).value == 42  # the replacement works


def test_exceptions_are_reported_not_raised(pool):
    outcome = pool.run(operator.truediv, (1, 0), timeout_s=10)
    assert outcome.status == "error"
    assert "ZeroDivisionError" in outcome.error


def test_unpicklable_result_is_an_error(pool):
    outcome = pool.run(threading.Lock, (), timeout_s=10)
    assert outcome.status == "error"
    assert "could not send the result back" in outcome.error


def test_sleeping_uses_no_cpu_budget(pool):
    outcome = pool.run(time.sleep, (1.5,), timeout_s=0.5)
    assert outcome.status == "ok" and outcome.elapsed_s >= 1.5 and outcome.cpu_s < 0.5


def test_a_worker_stuck_without_cpu_is_stalled_at_the_wall_clock_backstop(pool):
    outcome = pool.run(time.sleep, (60,), timeout_s=0.5, wall_limit_s=1.0)
    assert outcome.status == "stalled" and "backstop" in outcome.error
    assert outcome.elapsed_s < 1.0 + MARGIN_S
    assert pool.run(operator.add, (1, 1), timeout_s=30).value == 2


def test_the_default_backstop_is_ten_times_the_budget(pool, monkeypatch):
    import trl_grpo_ext.verifiers.core.deadline_pool as deadline_pool

    assert deadline_pool.WALL_LIMIT_FACTOR == 10.0
    monkeypatch.setattr(deadline_pool, "WALL_LIMIT_FACTOR", 4.0)  # the factor is read at each call
    outcome = pool.run(time.sleep, (60,), timeout_s=0.25)
    assert outcome.status == "stalled" and outcome.elapsed_s < 1.0 + MARGIN_S


def test_a_worker_that_exits_is_retried_once_then_crashed(pool, tmp_path):
    from pool_helpers import exit_after_recording

    outcome = pool.run(exit_after_recording, (str(tmp_path), 3), timeout_s=10)
    assert outcome.status == "crashed"
    assert outcome.error == "the worker process died (exit code 3), and again on a fresh worker (exit code 3)"
    assert len(os.listdir(tmp_path)) == 2  # two different worker processes tried it
    assert pool.run(operator.add, (1, 1), timeout_s=30).value == 2


def test_a_segfault_is_a_crash_with_its_signal(pool):
    from pool_helpers import segfault

    outcome = pool.run(segfault, (), timeout_s=10)
    assert outcome.status == "crashed" and "signal 11 (SIGSEGV)" in outcome.error


def test_a_crash_on_the_first_worker_only_is_retried_to_a_result(pool, tmp_path):
    from pool_helpers import exit_on_first_attempt

    outcomes = pool.map(exit_on_first_attempt, [(str(tmp_path),)], timeout_s=10)
    assert [(o.status, o.value) for o in outcomes] == [("ok", "second attempt")]


def test_a_worker_killed_from_outside_is_a_crash_not_a_timeout(pool, tmp_path):
    from pool_helpers import wait_to_be_killed_on_first_attempt

    result = {}
    thread = threading.Thread(
        target=lambda: result.update(o=pool.run(wait_to_be_killed_on_first_attempt, (str(tmp_path),), timeout_s=10))
    )
    thread.start()
    assert wait_for_files([tmp_path / "pid"])  # the first attempt runs
    os.kill(int((tmp_path / "pid").read_text()), 9)
    thread.join(60)
    assert (result["o"].status, result["o"].value) == ("ok", "second attempt")  # retried on a fresh worker


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="pins the workers and the hogs to one core")
def test_near_deadline_verdicts_do_not_depend_on_load():
    """Items just under and just over a 1 s CPU budget get the same verdicts alone and on a core shared with busy
    processes; under load the one under the budget runs longer than the budget in wall-clock time, so a wall-clock
    deadline would have killed it."""
    budget, items = 1.0, [(0.8,), (1.3,)]
    core = {min(os.sched_getaffinity(0))}
    with DeadlinePool(n_workers=2) as p:
        p.wait_until_ready()
        alone = p.map(burn_cpu, items, timeout_s=budget, wall_limit_s=60)
        p.wait_until_ready()  # the worker killed at its deadline has been replaced
        hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
        try:
            for pid in p.worker_pids() + [hog.pid for hog in hogs]:
                os.sched_setaffinity(pid, core)
            loaded = p.map(burn_cpu, items, timeout_s=budget, wall_limit_s=60)
        finally:
            for hog in hogs:
                hog.kill()
                hog.wait()
    assert [o.status for o in alone] == [o.status for o in loaded] == ["ok", "timeout"]
    assert loaded[0].elapsed_s > budget
    assert all(budget <= o.cpu_s < budget + KILL_SLACK_S for o in (alone[1], loaded[1]))


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
        timings["outcome"] = pool.run(burn_cpu, (60,), timeout_s=1.0)
        timings["elapsed"] = time.monotonic() - start

    thread = threading.Thread(target=slow)
    thread.start()
    assert [o.value for o in pool.map(abs, [(-1,), (-2,)], timeout_s=30)] == [1, 2]
    thread.join(60)
    assert timings["outcome"].status == "timeout"
    assert timings["outcome"].cpu_s < 1.0 + KILL_SLACK_S


def test_amap_under_asyncio(pool, tmp_path):
    """The event loop keeps running while amap's items run: another coroutine sees the second item start (its
    mark) before amap has returned, which a blocked loop could not."""
    second_started = tmp_path / "second"

    async def main():
        items = [(None, 0.3), (str(second_started), 60)]
        outcomes = asyncio.ensure_future(pool.amap(mark_then_burn, items, timeout_s=1.0))
        while not second_started.exists() and not outcomes.done():
            await asyncio.sleep(0.005)
        seen_while_running = second_started.exists() and not outcomes.done()
        return await outcomes, seen_while_running

    outcomes, seen_while_running = asyncio.run(main())
    assert [o.status for o in outcomes] == ["ok", "timeout"]
    assert seen_while_running


def test_memory_limit_turns_a_runaway_allocation_into_an_error():
    with DeadlinePool(n_workers=1, memory_limit_mb=1024) as small:
        outcome = small.run(bytearray, (4 * 1024**3,), timeout_s=30)
        assert outcome.status == "error" and "MemoryError" in outcome.error
        assert small.run(operator.add, (2, 2), timeout_s=30).value == 4


def test_close_leaves_no_child_and_refuses_new_work():
    p = DeadlinePool(n_workers=2)
    p.map(burn_cpu, [(60,), (0.01,)], timeout_s=0.5)
    pids = p.worker_pids()
    p.close()
    p.close()
    assert pids and not any(_alive(pid) for pid in pids)
    with pytest.raises(RuntimeError, match="closed"):
        p.run(operator.add, (1, 2))


def test_close_kills_a_worker_busy_in_another_thread(tmp_path):
    p = DeadlinePool(n_workers=1)
    p.run(abs, (1,), timeout_s=30)
    pid = p.worker_pids()[0]
    result = {}
    running = tmp_path / "running"
    item = (str(running), (), 60.0)
    thread = threading.Thread(target=lambda: result.update(o=p.run(signal_and_wait, item, timeout_s=60)))
    thread.start()
    assert wait_for_files([running])  # the worker runs the thread's item
    p.close()
    thread.join(30)
    assert not thread.is_alive()
    assert result["o"].status == "crashed" and "closed" in result["o"].error
    assert not _alive(pid)


@pytest.mark.parametrize("n_workers", [0, -1, 1.5, "2"])
def test_bad_worker_count(n_workers):
    with pytest.raises(ValueError, match="n_workers"):
        DeadlinePool(n_workers=n_workers)


@pytest.mark.parametrize("timeout_s", [0, -1])
def test_bad_timeout(pool, timeout_s):
    with pytest.raises(ValueError, match="timeout_s"):
        pool.map(abs, [(1,)], timeout_s=timeout_s)


def test_a_backstop_shorter_than_the_budget_is_refused(pool):
    with pytest.raises(ValueError, match="wall_limit_s"):
        pool.map(abs, [(1,)], timeout_s=2.0, wall_limit_s=1.0)


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
    from trl_grpo_ext.verifiers.core.deadline_pool import default_worker_count

    cores = len(os.sched_getaffinity(0))
    if local_world_size is None:
        monkeypatch.delenv("LOCAL_WORLD_SIZE", raising=False)
    else:
        monkeypatch.setenv("LOCAL_WORLD_SIZE", local_world_size)
    assert default_worker_count() == (max(1, cores // share) if share else 1)


def test_a_replacement_still_starting_does_not_delay_the_deadlines_of_running_items():
    """After a kill the pool starts a replacement; while it starts, the other worker's item keeps its deadline.

    Sleeping items are killed at the wall-clock backstop, which (unlike CPU time) does not depend on the load."""
    from pool_helpers import slow_start

    wall_limit_s = 2.0
    items = [(100.0,), (0.5,), (100.0,), (0.0,)]  # A is killed; B finishes, then C runs on that worker and is killed
    with DeadlinePool(n_workers=2, initializer=slow_start) as p:
        p.wait_until_ready()
        outcomes = p.map(time.sleep, items, timeout_s=0.5, wall_limit_s=wall_limit_s)
    a, b, c, d = outcomes
    assert (a.status, b.status, c.status, d.status) == ("stalled", "ok", "stalled", "ok")
    assert c.elapsed_s < wall_limit_s + 1.0  # not the limit + the 3 s start of A's replacement


def test_a_worker_another_caller_releases_serves_waiting_items_at_once(pool, tmp_path):
    """A caller whose running items are all slow still hands its waiting items to a worker that another caller frees
    meanwhile, instead of waiting for its own items to end: one call's slow item delays no other call's items
    beyond what the pool's capacity takes.

    The other caller holds one worker until this call's slow item runs on the second; the slow item then waits for
    the fast items to have run, which they can only do on the freed worker while it is still running."""
    other_runs, slow_runs = tmp_path / "other", tmp_path / "slow"
    fast = [str(tmp_path / f"fast{i}") for i in range(3)]
    other = threading.Thread(
        target=pool.map, args=(signal_and_wait, [(str(other_runs), (str(slow_runs),))]), kwargs={"timeout_s": 120}
    )
    other.start()
    assert wait_for_files([other_runs])  # the other caller holds one of the two workers
    items = [(str(slow_runs), tuple(fast))] + [(mark,) for mark in fast]
    outcomes = pool.map(signal_and_wait, items, timeout_s=120)
    other.join(60)
    assert [(o.status, o.value) for o in outcomes] == [("ok", True)] * 4  # without the fix the slow item waited alone


def test_a_caller_takes_a_worker_freed_meanwhile_rather_than_wait_for_a_replacement_to_start():
    """After a timeout the killed worker's replacement takes its start-up time (6 s here); a caller that finds no
    started worker takes the first one another caller frees instead of waiting for that start."""
    with DeadlinePool(n_workers=2, initializer=functools.partial(time.sleep, 6.0)) as slow_starting:
        slow_starting.wait_until_ready()
        other = threading.Thread(target=slow_starting.map, args=(sleep_then_time, [(2.0,)]), kwargs={"timeout_s": 30})
        other.start()  # holds one worker for 2 s
        assert slow_starting.run(burn_cpu, (60,), timeout_s=0.3).status == "timeout"  # the other one is replaced
        freed_at = time.time() + max(0.0, 2.0 - 0.3)  # about when the first caller's worker is free again
        ended = slow_starting.run(sleep_then_time, (0,), timeout_s=30).value
        other.join(60)
    assert ended < freed_at + 2.5  # the replacement is ready about 6 s after the timeout
