"""Verifier reward functions in TRL's AsyncGRPOTrainer rollout process: pickled by TRL's `AsyncRolloutWorker`,
unpickled in the process it spawns, called by TRL's `_score_group` (from threads, several groups at once), their
worker processes and sandboxes started there and gone when it ends. Generation (vLLM) is replaced by scripted
completions: tests/support/async_grpo_scoring.py."""

import asyncio
import math
import pickle
import queue
import threading
import time
from types import SimpleNamespace

import numpy as np
import pytest
from accelerate.state import PartialState
from async_grpo_scoring import ScoringOnlyLoop, score_in_rollout_process, scripted_group
from code_verifier_helpers import make_code_verifier
from process_tree import survivors

from trl_grpo_ext.verifiers import as_reward_function, register_verifier

PROMPT = [{"role": "user", "content": "Solve it."}]
ADD = "```python\ndef add(a, b):\n    return a + b\n```"
SUB = "```python\ndef add(a, b):\n    return a - b\n```"
LOOP = "```python\ndef add(a, b):\n    while True:\n        pass\n```"
ADD_TESTS = "assert add(1, 2) == 3\nassert add(-1, 1) == 0"

# (row, completions, the math reward and the code reward each completion should get); a reference of None is
# "unusable_reference: missing": reward None, which TRL turns into NaN.
GROUPS = [
    (
        {"prompt": PROMPT, "answer": "3/4", "tests": None},
        [r"\boxed{\frac{3}{4}}", r"\boxed{0.75}", r"\boxed{\frac{6}{8}}", "It is 1.", r"\boxed{1}", r"\boxed{3/4}"],
        [1.0, 1.0, 1.0, 0.0, 0.0, 1.0],
        [None] * 6,
    ),
    (
        {"prompt": PROMPT, "answer": "(x-1)(x+1)", "tests": None},
        [r"\boxed{x^2-1}", r"\boxed{x^2+1}", r"\boxed{-1+x^2}", r"\boxed{(x+1)(x-1)}", "no idea", r"\boxed{x^2}"],
        [1.0, 0.0, 1.0, 1.0, 0.0, 0.0],
        [None] * 6,
    ),
    (
        {"prompt": PROMPT, "answer": None, "tests": ADD_TESTS},
        [ADD, SUB, LOOP, "I cannot write code.", ADD, SUB],
        [None] * 6,
        [1.0, 0.0, 0.0, 0.0, 1.0, 0.0],
    ),
    (
        {"prompt": PROMPT, "answer": None, "tests": None},  # no reference at all: every reward NaN, advantages 0
        [r"\boxed{1}"] * 6,
        [None] * 6,
        [None] * 6,
    ),
]


def _advantages(rewards: list[float]) -> list[float]:
    """GRPO's group-normalised advantage over the scored completions; 0 for a completion no reward scored."""
    scored = [r for r in rewards if not math.isnan(r)]
    if not scored:
        return [0.0] * len(rewards)
    mean = sum(scored) / len(scored)
    std = math.sqrt(sum((r - mean) ** 2 for r in scored) / len(scored))
    return [0.0 if math.isnan(r) else (r - mean) / (std + 1e-8) for r in rewards]


def _nan(values):
    return [float("nan") if v is None else v for v in values]


@pytest.mark.slow
def test_math_and_code_rewards_score_groups_in_the_spawned_rollout_process():
    make_code_verifier(2.0).close()  # skips where this machine cannot sandbox (tests/support/code_verifier_helpers.py)
    rewards = [
        as_reward_function("math", timeout_s=5.0, n_workers=2),
        as_reward_function("code", reference_column="tests", timeout_s=2.0, workers=2),
    ]
    start = time.monotonic()
    try:
        samples, report, exitcode = score_in_rollout_process(rewards, [g[:2] for g in GROUPS], score_loops=3)
    finally:
        for reward in rewards:  # started here too (start_workers), as the trainer's process would
            reward.verifier.close()
    elapsed = time.monotonic() - start
    assert exitcode == 0

    by_group = {}
    for sample in samples:
        by_group.setdefault(sample.group_id, []).append(sample)
    assert sorted(by_group) == list(range(len(GROUPS)))
    for group_id, (_, completions, math_rewards, code_rewards) in enumerate(GROUPS):
        group = by_group[group_id]
        assert [s.completion[0]["content"] for s in group] == completions
        expected_math, expected_code = _nan(math_rewards), _nan(code_rewards)
        got_math = [s.metrics["rewards/math_reward"] for s in group]
        got_code = [s.metrics["rewards/code_reward"] for s in group]
        np.testing.assert_equal(got_math, expected_math)
        np.testing.assert_equal(got_code, expected_code)
        total = [float(np.nansum([m, c])) if not (math.isnan(m) and math.isnan(c)) else math.nan for m, c in
                 zip(expected_math, expected_code)]  # fmt: skip
        np.testing.assert_equal([s.metrics["reward"] for s in group], total)
        assert [s.advantage for s in group] == pytest.approx(_advantages(total), abs=1e-6)

    # Worker processes and sandboxes ran below the rollout process, and none outlived it.
    assert report.descendants, "the rewards started no process in the rollout process"
    assert report.pid not in {pid for pid, _ in report.descendants}
    assert not survivors(report.descendants)  # closed at exit, before the process ended
    print(
        f"scored {len(samples)} samples in {elapsed:.1f} s (process start included); {len(report.descendants)} "
        "processes below the rollout process, none left"
    )


# -- TRL's scoring of a group, in this process (the default suite) ------------------------------------------------------


def _loop(reward_funcs):
    """TRL's rollout loop, built in this process with stand-ins for what it shares with the trainer."""
    PartialState()  # TRL logs through accelerate, which needs it (the rollout process makes its own)
    shared = {name: SimpleNamespace(value=0) for name in ("model_version_value", "heartbeat_value")}
    queues = {name: queue.Queue() for name in ("rollout_buffer", "exception_info_queue", "metrics_queue")}
    return ScoringOnlyLoop(groups=[], reward_funcs=reward_funcs, failed_event=threading.Event(), **shared, **queues)


def test_trl_scores_a_group_with_an_unpickled_reward():
    reward = pickle.loads(pickle.dumps(as_reward_function("math", start_workers=False, timeout_s=5.0, n_workers=1)))
    row, completions, math_rewards, _ = GROUPS[1]  # (x-1)(x+1): sympy decides, in the worker process
    try:
        samples = asyncio.run(_loop([reward])._score_group(scripted_group(0, row, completions)))
    finally:
        reward.verifier.close()
    assert [s.metrics["rewards/math_reward"] for s in samples] == math_rewards
    assert [s.advantage for s in samples] == pytest.approx(_advantages(math_rewards), abs=1e-6)


@register_verifier("always_fails_for_async_grpo_tests")
def always_fails_for_async_grpo_tests(completion, reference):
    """Fails on every item (test helper)."""
    raise RuntimeError("the verifier is broken")


def test_a_verifier_failing_every_batch_stops_trl_scoring():
    reward = as_reward_function("always_fails_for_async_grpo_tests", max_failed_batches=2)
    loop = _loop([reward])
    row = {"prompt": PROMPT, "answer": "1"}
    first = asyncio.run(loop._score_group(scripted_group(0, row, ["1", "2"])))
    assert all(math.isnan(s.metrics["reward"]) and s.advantage == 0.0 for s in first)  # None: left out, not 0
    with pytest.raises(RuntimeError, match="failed on every item of 2 batches in a row"):
        asyncio.run(loop._score_group(scripted_group(1, row, ["1", "2"])))
