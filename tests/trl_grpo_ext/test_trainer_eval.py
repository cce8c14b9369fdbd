"""`GRPOExtConfig(eval_pass_at_k=...)`: evaluate() logs eval_pass@k and eval_maj@k next to stock's eval metrics, with
known values, and they serve as metric_for_best_model."""

from __future__ import annotations

import pytest
from datasets import Dataset
from trainer_helpers import make_config

from trl_grpo_ext import GRPOExtConfig, GRPOExtTrainer
from trl_grpo_ext.data.datasets import arithmetic_split
from trl_grpo_ext.verifiers import VerificationResult, as_reward_function, register_verifier


@register_verifier("reference_is_yes_test", override=True)
def reference_is_yes_test(completion, reference):
    """Full marks when the reference is "yes", whatever the completion (known pass rates); every answer reads "a"."""
    return VerificationResult(float(reference == "yes"), "scored", extracted="a")


def eval_config(tmp_path, **overrides):
    settings = dict(
        num_generations_eval=4, per_device_eval_batch_size=8, eval_pass_at_k=[1, 2, 4], max_completion_length=2
    )
    return make_config(GRPOExtConfig, tmp_path, **{**settings, **overrides})


def test_evaluate_logs_pass_and_maj_at_k_with_known_values(tmp_path, tiny_model_dir):
    answers = ["yes", "no", "yes", "yes", "no", "no", "no", "yes"]  # 8 prompts, two per eval batch of 8 completions
    rows = [{"prompt": f"{i}+1=", "answer": a} for i, a in enumerate(answers)]
    reward = as_reward_function("reference_is_yes_test")
    trainer = GRPOExtTrainer(
        tiny_model_dir, [reward], args=eval_config(tmp_path), train_dataset=Dataset.from_list(rows),
        eval_dataset=Dataset.from_list(rows),
    )  # fmt: skip
    metrics = trainer.evaluate()
    for k in (1, 2, 4):
        assert metrics[f"eval_pass@{k}"] == pytest.approx(0.5)
        # one answer class per prompt, correct exactly for the "yes" prompts: read from the verifier's extractions
        assert metrics[f"eval_maj@{k}"] == pytest.approx(0.5)
    assert "eval_reward" in metrics and "eval_loss" in metrics


def test_eval_pass_at_1_is_the_mean_binary_reward_and_pass_at_k_grows_with_k(tmp_path, tiny_model_dir):
    problems = arithmetic_split("held_out")[:6]
    reward = as_reward_function("math")
    config = eval_config(tmp_path, per_device_eval_batch_size=12, temperature=3.0, max_completion_length=1)
    trainer = GRPOExtTrainer(
        tiny_model_dir, [reward], args=config, train_dataset=Dataset.from_list(problems),
        eval_dataset=Dataset.from_list(problems),
    )  # fmt: skip
    try:
        metrics = trainer.evaluate()
    finally:
        reward.verifier.close()
    assert metrics["eval_pass@1"] == pytest.approx(metrics["eval_rewards/math_reward/mean"])  # 0/1 rewards
    assert metrics["eval_pass@1"] <= metrics["eval_pass@2"] <= metrics["eval_pass@4"]
    assert 0.0 <= metrics["eval_maj@4"] <= metrics["eval_pass@4"]


def test_eval_pass_at_k_selects_the_best_checkpoint(tmp_path, tiny_model_dir):
    rows = [{"prompt": f"{i}+1=", "answer": "yes" if i % 4 == 0 else "no"} for i in range(8)]
    reward = as_reward_function("reference_is_yes_test")
    config = eval_config(
        tmp_path, eval_strategy="steps", eval_steps=1, save_strategy="steps", save_steps=1, max_steps=2,
        metric_for_best_model="pass@1",
    )  # fmt: skip
    trainer = GRPOExtTrainer(
        tiny_model_dir, [reward], args=config, train_dataset=Dataset.from_list(rows),
        eval_dataset=Dataset.from_list(rows),
    )  # fmt: skip
    trainer.train()
    logged = [entry["eval_pass@1"] for entry in trainer.state.log_history if "eval_pass@1" in entry]
    assert logged == [pytest.approx(0.25)] * 2 and trainer.state.best_metric == pytest.approx(0.25)


def test_eval_pass_at_k_is_checked_against_the_group_size_and_needs_a_verifier(tmp_path, tiny_model_dir):
    with pytest.raises(ValueError, match=r"eval_pass_at_k=\[1, 8\]: each k must be an integer between 1 and"):
        eval_config(tmp_path, eval_pass_at_k=[1, 8])
    with pytest.raises(ValueError, match="eval_pass_at_k needs a reward function built by"):
        GRPOExtTrainer(
            tiny_model_dir, [lambda completions, **kw: [0.0] * len(completions)], args=eval_config(tmp_path),
            train_dataset=Dataset.from_list([{"prompt": "1+1="}]),
        )  # fmt: skip
