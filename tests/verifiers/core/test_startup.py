"""Building a reward function starts the verifier's workers in the background; closing it, or dropping it, stops them."""

import gc
import time

import pytest

from trl_grpo_ext.verifiers import as_reward_function, register_verifier


def worker_processes(reward):
    pool = reward.verifier._pool
    return [] if pool is None else [worker.process for worker in list(pool._all)]


def test_workers_start_in_the_background_when_the_reward_function_is_built():
    start = time.perf_counter()
    reward = as_reward_function("math", n_workers=2)
    built_s = time.perf_counter() - start
    try:
        processes = worker_processes(reward)
        assert len(processes) == 2 and all(p.poll() is None for p in processes)
        assert built_s < 2.0  # a worker takes 3-5 s to import sympy and warm up: the build did not wait for that
        assert reward(completions=[r"\boxed{x+x}"], answer=["2x"]) == [1.0]
    finally:
        reward.verifier.close()
    assert all(p.poll() is not None for p in processes)


def test_start_workers_false_starts_them_on_the_first_batch():
    reward = as_reward_function("math", n_workers=1, start_workers=False)
    try:
        assert reward.verifier._pool is None
        assert reward(completions=[r"\boxed{3}"], answer=["3"]) == [1.0]  # in-process: still no worker
        assert reward.verifier._pool is None
        assert reward(completions=[r"\boxed{x+x}"], answer=["2x"]) == [1.0]
        assert len(worker_processes(reward)) == 1
    finally:
        reward.verifier.close()


def test_a_reward_function_dropped_unused_leaves_no_process():
    reward = as_reward_function("math", n_workers=2)
    processes = worker_processes(reward)
    assert len(processes) == 2
    del reward
    gc.collect()  # the reward function's closure refers to itself: a collection frees it
    for process in processes:
        process.wait(timeout=30)
    assert all(p.poll() is not None for p in processes)


@register_verifier("first_char_for_startup_tests")
def first_char_for_startup_tests(completion, reference):
    """Whether the completion starts with the reference (test helper)."""
    return float(completion.startswith(str(reference)))


def test_a_verifier_without_workers_builds_and_scores_as_before():
    metrics = {}
    reward = as_reward_function("first_char_for_startup_tests")  # its start() does nothing
    assert reward(completions=["ab", "b"], answer=["a", "a"], log_metric=metrics.__setitem__) == [1.0, 0.0]
    timing = {k for k in metrics if "verify_time" in k or "dedup" in k or "cache" in k}
    assert timing == {"first_char_for_startup_tests/verify_time_s"}  # no stats: only what the adapter measures


@pytest.mark.parametrize("value", ["yes", 1, None])
def test_start_workers_is_checked(value):
    with pytest.raises(ValueError, match=rf"start_workers={value!r} must be True .* or False"):
        as_reward_function("math", start_workers=value)
