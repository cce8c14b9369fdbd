"""A progress bar for training runs that shows the running reward and an estimate of the time left.

Stock's `ProgressCallback` shows the step count; this one also keeps every logged step (`history`, what the examples
summarise) and shows the mean reward over the last `window` steps, and it can stop training after `max_seconds`.
"""

from __future__ import annotations

import time

from transformers import TrainerCallback


class RewardProgress(TrainerCallback):
    """tqdm bar over `max_steps` steps (its estimate is the time left) with the recent mean reward as a postfix."""

    def __init__(self, max_steps: int, window: int, desc: str = "GRPO", max_seconds: float | None = None):
        self.max_steps = max_steps
        self.window = window
        self.desc = desc
        self.max_seconds = max_seconds
        self.history: list[dict] = []  # one entry per logged training step: step, time_s, and the logged metrics
        self.stopped_by_time = False
        self.bar = None
        self.start = None

    def on_train_begin(self, args, state, control, **kwargs):
        from tqdm.auto import tqdm

        self.start = time.perf_counter()
        self.bar = tqdm(total=self.max_steps, desc=self.desc, unit="step", dynamic_ncols=True)

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not logs or "reward" not in logs or "eval_reward" in logs:
            return
        self.history.append({"step": state.global_step, "time_s": time.perf_counter() - self.start, **logs})
        recent = [h["reward"] for h in self.history[-self.window :]]
        self.bar.set_postfix(reward=f"{sum(recent) / len(recent):.2f}")
        self.bar.update(state.global_step - self.bar.n)

    def on_step_end(self, args, state, control, **kwargs):
        if self.max_seconds is not None and time.perf_counter() - self.start > self.max_seconds:
            self.stopped_by_time = True
            control.should_training_stop = True

    def on_train_end(self, args, state, control, **kwargs):
        self.bar.close()
