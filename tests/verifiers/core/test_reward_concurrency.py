"""Many group-sized calls of one verifier reward function at once, from threads (as AsyncGRPOTrainer's rollout process
makes them, through `asyncio.to_thread`): each call gets its own verdicts, a slow or failing item of one call delays
or fails no other call beyond what the pool's capacity takes, and the failure count stays exact."""

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from code_verifier_helpers import make_code_verifier

from trl_grpo_ext.verifiers import VerificationResult, Verifier, as_reward_function, register_verifier
from trl_grpo_ext.verifiers.code import verifier as code_verifier_module

# A comparison sympy cannot finish within seconds (tests/verifiers/math/test_verifier.py).
SLOW_MATH = (r"\boxed{\sqrt{2} f(x) (x+1)^{2000}}", r"\sqrt{2} f(x) (x+2)^{2000}")


def _run_at_once(calls):
    """Start every call at the same moment on a thread of its own; each call's (result or exception, end time)."""
    barrier = threading.Barrier(len(calls))

    def run(call):
        barrier.wait()
        try:
            outcome = call()
        except Exception as exc:
            outcome = exc
        return outcome, time.monotonic()

    with ThreadPoolExecutor(len(calls)) as threads:
        return list(threads.map(run, calls))


@register_verifier("fails_for_concurrency_tests")
class _FailsOnRequest(Verifier):
    """Fails (internal error) on the completion "fail" and raises from verify_batch on "raise" (test helper)."""

    def verify_batch(self, completions, references):
        time.sleep(0.05)  # let the calls overlap
        if "raise" in completions:
            raise RuntimeError("this batch breaks the verifier")
        return [
            VerificationResult(None, "internal_error: asked to fail")
            if c == "fail"
            else VerificationResult(float(c == r), "scored")
            for c, r in zip(completions, references)
        ]


def test_failure_count_is_exact_under_concurrent_calls():
    """Nine failed batches at once with max_failed_batches=3: exactly three calls raise, one per three batches."""
    reward = as_reward_function("fails_for_concurrency_tests", max_failed_batches=3)
    outcomes = _run_at_once([lambda: reward(completions=["fail"] * 4, answer=["x"] * 4)] * 9)
    raised = [o for o, _ in outcomes if isinstance(o, RuntimeError)]
    assert len(raised) == 3
    assert all("3 batches in a row" in str(exc) for exc in raised)
    assert all(o == [None] * 4 for o, _ in outcomes if not isinstance(o, Exception))


def test_one_calls_failure_stays_in_that_call():
    reward = as_reward_function("fails_for_concurrency_tests", max_failed_batches=2)
    calls = [lambda: reward(completions=["raise", "a"], answer=["a", "a"])] + [
        lambda k=k: reward(completions=[f"a{k}", "b"], answer=[f"a{k}", "a"]) for k in range(5)
    ]
    outcomes = [o for o, _ in _run_at_once(calls)]
    assert outcomes[0] == [None, None]  # the verifier raised on this batch: internal_error, not a 0
    assert outcomes[1:] == [[1.0, 0.0]] * 5


def test_async_entry_point_keeps_the_event_loop_running():
    reward = as_reward_function("fails_for_concurrency_tests")

    async def main():
        calls = asyncio.gather(*[reward.acall(completions=[f"{k}"], answer=["1"]) for k in range(4)])
        await asyncio.sleep(0.01)  # runs while the calls verify, 50 ms each, on threads; a blocked loop runs it after
        in_flight = not calls.done()
        return await calls, in_flight

    rewards, in_flight = asyncio.run(main())
    assert rewards == [[0.0], [1.0], [0.0], [0.0]]
    assert in_flight


def test_math_timeout_in_one_call_delays_no_other_call():
    reward = as_reward_function("math", timeout_s=3.0, n_workers=2)
    reward.verifier.start()  # both workers ready (each imports sympy) before the calls start
    try:
        slow = [SLOW_MATH[0], r"\boxed{x^2-1}"], [SLOW_MATH[1], "(x-1)(x+1)"]
        calls = [lambda: reward(completions=slow[0], answer=slow[1])] + [
            # items only sympy decides, a different one per call (the verdict cache would answer repeats)
            lambda k=k: reward(
                completions=[rf"\boxed{{x^2-{k * k}}}", rf"\boxed{{x^2+{k}}}"], answer=[f"(x-{k})(x+{k})", f"x^2-{k}"]
            )
            for k in range(2, 6)
        ]
        start = time.monotonic()
        outcomes = _run_at_once(calls)
        (slow_rewards, slow_end), fast = outcomes[0], outcomes[1:]
        assert slow_rewards == [0.0, 1.0]  # the timeout scores 0, its group's other item is scored as usual
        assert [o for o, _ in fast] == [[1.0, 0.0]] * 4
        assert slow_end - start >= 3.0  # at least the CPU budget
        assert max(end for _, end in fast) < slow_end - 1.0  # served by the other worker meanwhile
    finally:
        reward.verifier.close()


def test_code_timeout_in_one_call_delays_no_other_call():
    make_code_verifier(3.0).close()  # skips where this machine cannot sandbox (tests/support/code_verifier_helpers.py)
    reward = as_reward_function("code", reference_column="tests", timeout_s=3.0, workers=2)
    try:
        add = "```python\ndef add(a, b):\n    return a + b\n```"
        sub = "```python\ndef add(a, b):\n    return a - b\n```"
        loop = "```python\ndef add(a, b):\n    while True:\n        pass\n```"
        tests = "assert add(1, 2) == 3\nassert add(-1, 1) == 0"
        calls = [lambda: reward(completions=[loop, add], tests=[tests] * 2)] + [
            lambda: reward(completions=[add, sub, add], tests=[tests] * 3) for _ in range(4)
        ]
        start = time.monotonic()
        outcomes = _run_at_once(calls)
        (slow_rewards, slow_end), fast = outcomes[0], outcomes[1:]
        assert slow_rewards == [0.0, 1.0]
        assert [o for o, _ in fast] == [[1.0, 0.0, 1.0]] * 4
        assert slow_end - start >= 3.0
        assert max(end for _, end in fast) < slow_end - 1.0
    finally:
        reward.verifier.close()


def test_code_verifier_starts_one_set_of_batch_threads_under_concurrent_first_calls(monkeypatch):
    created = []

    class SlowToCreate(ThreadPoolExecutor):
        def __init__(self, *args, **kwargs):
            time.sleep(0.2)  # widen the window in which a second first call could start its own
            created.append(self)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(code_verifier_module, "ThreadPoolExecutor", SlowToCreate)
    verifier = make_code_verifier(3.0)
    try:
        outcomes = _run_at_once([lambda: verifier.verify_batch(["", " "], ["assert True"] * 2)] * 4)
        assert [[r.reason for r in o] for o, _ in outcomes] == [["no_code", "no_code"]] * 4
        assert len(created) == 1
    finally:
        verifier.close()


@pytest.mark.parametrize("max_failed_batches", [1, 2])
def test_submitted_batches_count_once_each(max_failed_batches):
    """submit + collect from several threads count one batch per collect, as serial calls do."""
    reward = as_reward_function("fails_for_concurrency_tests", max_failed_batches=max_failed_batches)
    pending = [reward.submit(completions=["fail"], answer=["x"]) for _ in range(max_failed_batches - 1)]
    outcomes = _run_at_once([lambda p=p: reward.collect(p) for p in pending] or [lambda: None])
    assert all(not isinstance(o, Exception) for o, _ in outcomes)
    with pytest.raises(RuntimeError, match="batches in a row"):
        reward(completions=["fail"], answer=["x"])
