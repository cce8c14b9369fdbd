"""Reward functions handed to a spawned process start their worker processes and sandboxes there, and stop them when
that process ends: at its exit when it ends normally; by the end of their pipes when it is killed."""

import multiprocessing
import time

import pytest
from code_verifier_helpers import make_code_verifier
from process_tree import survivors
from reward_process import call_and_report

from trl_grpo_ext.verifiers import as_reward_function

ADD = "```python\ndef add(a, b):\n    return a + b\n```"
CALLS = [
    {"completions": [r"\boxed{x^2-1}", r"\boxed{x^2+1}"], "answer": ["(x-1)(x+1)"] * 2},  # sympy, in a worker
    {"completions": [ADD, "no code"], "tests": ["assert add(1, 2) == 3"] * 2},
]


def _run_in_spawned_process(exit_at_once: bool):
    make_code_verifier(5.0).close()  # skips where this machine cannot sandbox (tests/support/code_verifier_helpers.py)
    rewards = [
        as_reward_function("math", start_workers=False, n_workers=1),  # none start here; there, on first use
        as_reward_function("code", reference_column="tests", start_workers=False, workers=1),
    ]
    context = multiprocessing.get_context("spawn")
    receiver, sender = context.Pipe(duplex=False)
    process = context.Process(target=call_and_report, args=(rewards, CALLS, sender, exit_at_once))
    process.start()
    sender.close()
    try:
        assert receiver.poll(180), "the spawned process sent no report"
        outputs, below, left_after_exit_handlers = receiver.recv()
        process.join(60)
    finally:
        if process.is_alive():
            process.kill()
    assert process.exitcode == 0
    assert outputs == [[1.0, 0.0], [1.0, 0.0]]
    assert all(reward.verifier._pool is None for reward in rewards)  # none started in this process
    assert len(below) >= 3  # math worker, code sandbox, judge
    return below, left_after_exit_handlers


def test_workers_and_sandboxes_stop_when_the_process_exits():
    below, left_after_exit_handlers = _run_in_spawned_process(exit_at_once=False)
    assert left_after_exit_handlers == []  # the exit handlers stopped them all
    assert not survivors(below)


@pytest.mark.slow
def test_workers_and_sandboxes_end_soon_after_the_process_is_killed():
    below, _ = _run_in_spawned_process(exit_at_once=True)
    deadline = time.monotonic() + 10.0
    while survivors(below) and time.monotonic() < deadline:  # each notices its pipe closed
        time.sleep(0.1)
    assert not survivors(below)
