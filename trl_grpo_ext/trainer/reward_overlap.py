"""Verifier rewards computed while the rollout's log-prob forwards run (`GRPOExtConfig.overlap_rewards`).

Stock `_generate_and_score_completions` generates, runs the reference (and old-policy) forwards, and only then calls
`_calculate_rewards`. A reward function built by `as_reward_function` can instead be submitted right after
generation (`reward.submit`) and collected where stock calls it (`reward.collect`): `RewardOverlap` holds those
submissions for one generation batch, hands stock a stand-in that collects each one, and joins whatever was not
collected when the batch ends, normally or by an exception.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

# Columns stock leaves out of the reward functions' keyword arguments (`_calculate_rewards`).
NOT_REWARD_COLUMNS = ("prompt", "completion", "completion_ids")


def can_overlap(reward_func: Any) -> bool:
    """Whether a reward function can verify in the background: one built by `as_reward_function`."""
    return callable(getattr(reward_func, "submit", None)) and callable(getattr(reward_func, "collect", None))


class RewardOverlap:
    """The background verifications of one generation batch, keyed by the reward function's index."""

    def __init__(self, reward_funcs: Sequence[Any], inputs: list[dict[str, Any]]):
        self.reward_funcs = list(reward_funcs)
        self.inputs = inputs
        self.pending: dict[int, Any] = {}

    def submit(self, prompts: list, completions: list, completion_ids: list, extra_fields: dict) -> None:
        """Start every overlappable reward function on the batch stock will score, with the arguments stock passes."""
        if extra_fields:  # stock merges a rollout_func's extra fields into the inputs after the forwards
            return
        columns = {key: [x[key] for x in self.inputs] for key in self.inputs[0] if key not in NOT_REWARD_COLUMNS}
        for index, reward_func in enumerate(self.reward_funcs):
            if not can_overlap(reward_func):
                continue
            try:
                pending = reward_func.submit(
                    prompts=prompts, completions=completions, completion_ids=completion_ids, **columns
                )
            except Exception:  # a bad batch (missing column, ...): stock's own call raises it where stock would
                continue
            self.pending[index] = pending

    def stand_ins(self) -> list[Any]:
        """The reward functions, each submitted one replaced by a function that collects its batch."""
        return [self._collector(i, f) if i in self.pending else f for i, f in enumerate(self.reward_funcs)]

    def _collector(self, index: int, reward_func: Any) -> Callable[..., list[float | None]]:
        def collect(**call: Any) -> list[float | None]:
            return reward_func.collect(self.pending.pop(index), **call)

        collect.__name__ = collect.__qualname__ = reward_func.__name__
        return collect

    def close(self) -> None:
        """Wait for every verification that was not collected (stock raised before `_calculate_rewards`)."""
        while self.pending:
            self.pending.popitem()[1].cancel()
