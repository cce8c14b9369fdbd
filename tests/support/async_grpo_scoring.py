"""TRL's AsyncGRPOTrainer rollout process with generation replaced by scripted completions, so that its scoring runs
without vLLM.

`ScoringOnlyWorker` is TRL's `AsyncRolloutWorker` (it pickles the reward functions and spawns the rollout process);
`ScoringOnlyLoop` is TRL's `_AsyncRolloutLoop`, built by TRL's own `__init__` and run by TRL's `run()`, whose
`_run_loops` (an HTTP session to vLLM plus the generate and score loops) becomes: put one `RolloutGroup` per scripted
row on the score queue, built as TRL's generate loop builds it, and run TRL's `_score_loop` on them (several at once
when asked: groups then score concurrently). Everything from the group on is TRL's: `_score_group` calls the reward
functions (`asyncio.to_thread` for sync ones), turns None into NaN, computes the advantages and puts `RolloutSample`s
on the queue the trainer reads. Once every group is scored, the process reports its pid and its descendants (worker
processes, sandboxes) on that queue, and runs until stopped.
"""

from __future__ import annotations

import asyncio
import os
import queue
import time
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any
from unittest import mock

from accelerate.state import PartialState
from process_tree import descendants
from trl.experimental.async_grpo import async_rollout_worker as trl_rollout


@dataclass(frozen=True)
class ProcessReport:
    """The rollout process after scoring: its pid and its descendants, as (pid, start time) pairs."""

    pid: int
    descendants: list[tuple[int, int]]


def scripted_group(group_id: int, row: dict[str, Any], completions: list[str]) -> trl_rollout.RolloutGroup:
    """The group TRL's generate loop hands to the score loop for dataset row `row`, with these completions."""
    n = len(completions)
    return trl_rollout.RolloutGroup(
        prompts=[row["prompt"]] * n,
        reward_kwargs={key: [row[key]] * n for key in row if key not in {"prompt", "completion", "completion_ids"}},
        completions=[[{"role": "assistant", "content": text}] for text in completions],
        completions_ids=[[1, 2, 3]] * n,
        completions_sequences=[
            [trl_rollout.TrainingSequence([0, 1, 2, 3], [0, 1, 1, 1], [0.0, -0.5, -0.5, -0.5], f"{group_id}-{i}")]
            for i in range(n)
        ],
        tool_call_counts=[0] * n,
        tool_failure_counts=[0] * n,
        model_version=0,
        group_id=group_id,
        env_rewards=[],
        rollout_rewards=[],
        queued_at=time.monotonic(),
    )


class ScoringOnlyLoop(trl_rollout._AsyncRolloutLoop):
    def __init__(self, *, groups: list[tuple[dict[str, Any], list[str]]], score_loops: int = 1, **loop_kwargs):
        # No tokenizer is used when scoring: one with a response template set passes TRL's checks unchanged.
        super().__init__(
            model_name="scripted",
            dataset=[],
            processing_class=SimpleNamespace(response_template="unused"),
            eos_token_ids=[],
            **loop_kwargs,
        )
        self._scripted, self._score_loops = groups, score_loops

    async def _run_loops(self, stop_event: asyncio.Event) -> None:
        async def feed() -> None:
            for group_id, (row, completions) in enumerate(self._scripted):
                await self._groups_to_score.put(scripted_group(group_id, row, completions))
            for _ in range(self._score_loops):
                await self._groups_to_score.put(None)  # each score loop ends at one None

        await asyncio.gather(feed(), *(self._score_loop(stop_event) for _ in range(self._score_loops)))
        self.rollout_buffer.put(ProcessReport(os.getpid(), descendants(os.getpid())))
        # Like TRL's loops, run until the trainer stops the process (`AsyncRolloutWorker.stop`): its stop watcher
        # thread waits on a multiprocessing Event, and setting an Event whose waiter has exited blocks forever.
        await stop_event.wait()


class ScoringOnlyWorker(trl_rollout.AsyncRolloutWorker):
    _loop_cls = ScoringOnlyLoop

    def __init__(self, **kwargs: Any):
        # The worker refuses to start without vLLM and aiohttp, which only generation uses.
        with (
            mock.patch.object(trl_rollout, "is_vllm_available", return_value=True),
            mock.patch.object(trl_rollout, "is_aiohttp_available", return_value=True),
        ):
            super().__init__(**kwargs)


def score_in_rollout_process(
    reward_funcs: list[Any], groups: list[tuple[dict[str, Any], list[str]]], score_loops: int = 1, timeout_s=300
) -> tuple[list[trl_rollout.RolloutSample], ProcessReport, int]:
    """Score `groups` ((row, completions) pairs) in TRL's spawned rollout process; the samples in the order they were
    scored, the process's report, and its exit code once it has ended. Raises what the rollout process raised."""
    PartialState()  # TRL logs through accelerate, as the trainer's process does once its Accelerator exists
    num_generations = len(groups[0][1])
    worker = ScoringOnlyWorker(
        reward_funcs=reward_funcs, groups=groups, score_loops=score_loops, num_generations=num_generations
    )
    worker.start()  # returns once the process has built the loop (and unpickled the reward functions)
    process, samples, report = worker._process, [], None
    deadline = time.monotonic() + timeout_s
    try:
        while report is None:
            worker.check_health(stale_after_s=timeout_s)  # raises what the rollout process raised
            if time.monotonic() > deadline:
                raise TimeoutError(f"the rollout process scored {len(samples)} samples in {timeout_s} s")
            try:
                item = worker.rollout_buffer.get(timeout=0.5)
            except queue.Empty:
                continue
            if isinstance(item, ProcessReport):
                report = item
            else:
                samples.append(item)
    finally:
        worker.stop()  # as the trainer does: the process ends its loops and exits (terminated after 15 s)
    return samples, report, process.exitcode
