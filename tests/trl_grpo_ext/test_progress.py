"""RewardProgress: the history of logged steps, the running reward, the time cap."""

from transformers import TrainerControl, TrainerState

from trl_grpo_ext.trainer.progress import RewardProgress


def run_steps(progress: RewardProgress, rewards: list[float], eval_logs: bool = False) -> TrainerControl:
    state, control = TrainerState(), TrainerControl()
    progress.on_train_begin(None, state, control)
    for step, reward in enumerate(rewards, start=1):
        state.global_step = step
        progress.on_log(None, state, control, logs={"reward": reward, "loss": 0.0})
        if eval_logs:
            progress.on_log(None, state, control, logs={"eval_reward": 1.0, "reward": 1.0})
        progress.on_step_end(None, state, control)
        if control.should_training_stop:
            break
    progress.on_train_end(None, state, control)
    return control


def test_history_keeps_training_steps_only_and_the_bar_shows_the_window_mean():
    progress = RewardProgress(max_steps=4, window=2)
    control = run_steps(progress, [0.0, 0.5, 1.0, 0.5], eval_logs=True)
    assert [h["step"] for h in progress.history] == [1, 2, 3, 4]
    assert [h["reward"] for h in progress.history] == [0.0, 0.5, 1.0, 0.5]
    assert all(h["time_s"] >= 0 for h in progress.history)
    assert progress.bar.n == 4 and progress.bar.postfix == "reward=0.75"
    assert not control.should_training_stop and not progress.stopped_by_time


def test_training_stops_once_max_seconds_have_passed():
    progress = RewardProgress(max_steps=10, window=5, max_seconds=0.0)
    control = run_steps(progress, [0.1] * 10)
    assert control.should_training_stop and progress.stopped_by_time
    assert len(progress.history) == 1
