"""With default estimator settings, GRPOExtTrainer trains exactly as stock GRPOTrainer (bitwise on CPU); the generic
KL path, forced with stock's own k3, reproduces stock's loss structure for every loss type within float rounding."""

from __future__ import annotations

import pytest
import torch
from trainer_helpers import length_parity_reward, losses, make_config, parameters, train
from transformers import AutoModelForCausalLM
from trl import GRPOConfig, GRPOTrainer

from trl_grpo_ext import GRPOExtConfig, GRPOExtTrainer


def run_both(model_dir, tmp_path, stock_overrides, ext_overrides=None, **train_kwargs):
    stock = train(
        GRPOTrainer, make_config(GRPOConfig, tmp_path / "stock", **stock_overrides), model_dir, **train_kwargs
    )
    ext_settings = {**stock_overrides, **(ext_overrides or {})}
    ext = train(
        GRPOExtTrainer, make_config(GRPOExtConfig, tmp_path / "ext", **ext_settings), model_dir, **train_kwargs
    )
    return stock, ext


@pytest.mark.parametrize(
    "overrides",
    [
        {},
        {"beta": 0.04},
        {"beta": 0.04, "loss_type": "dapo"},
        {"beta": 0.04, "loss_type": "dr_grpo"},
        {"beta": 0.04, "num_iterations": 2, "gradient_accumulation_steps": 2},
        {"scale_rewards": "none"},
        {"scale_rewards": "batch", "beta": 0.04},
    ],
    ids=["beta0", "beta", "dapo", "dr_grpo", "iterations-accumulation", "scale-none", "scale-batch"],
)
def test_default_settings_are_bitwise_stock(tiny_model_dir, tmp_path, overrides):
    stock, ext = run_both(tiny_model_dir, tmp_path, overrides)
    assert losses(ext) == losses(stock)
    assert len(losses(stock)) == 3
    stock_params, ext_params = parameters(stock), parameters(ext)
    initial = dict(AutoModelForCausalLM.from_pretrained(tiny_model_dir).named_parameters())
    assert any(not torch.equal(stock_params[name], initial[name]) for name in stock_params), "training changed nothing"
    for name in stock_params:
        assert torch.equal(ext_params[name], stock_params[name]), name


def test_unscorable_rows_are_bitwise_stock(tiny_model_dir, tmp_path):
    """A reward function that returns None for some completions: NaN rows get advantage 0 in both."""
    stock, ext = run_both(tiny_model_dir, tmp_path, {"beta": 0.04}, reward_funcs=[length_parity_reward])
    assert losses(ext) == losses(stock)
    assert list(ext._logs["advantages"]) == list(stock._logs["advantages"])
    for name, value in parameters(stock).items():
        assert torch.equal(parameters(ext)[name], value), name


@pytest.mark.parametrize(
    "loss_type",
    ["grpo", "bnpo", "dr_grpo", "dapo"]
    + [pytest.param(t, marks=pytest.mark.slow) for t in ("cispo", "sapo", "luspo", "vespo")],
)
def test_generic_kl_path_reproduces_stock_k3(tiny_model_dir, tmp_path, loss_type):
    """kl_clamp far above any value sends stock's k3 through the generic hook: same numbers up to rounding, since
    stock adds beta*KL per token before reducing and the hook reduces the two terms separately."""
    overrides = {"beta": 0.5, "loss_type": loss_type, "learning_rate": 5e-3}
    stock, ext = run_both(tiny_model_dir, tmp_path, overrides, ext_overrides={"kl_clamp": 1e9})
    torch.testing.assert_close(torch.tensor(losses(ext)), torch.tensor(losses(stock)), rtol=1e-5, atol=1e-7)
    stock_kl = [e["kl"] for e in stock.state.log_history if "kl" in e]
    ext_kl = [e["kl"] for e in ext.state.log_history if "kl" in e]
    torch.testing.assert_close(torch.tensor(ext_kl), torch.tensor(stock_kl), rtol=1e-5, atol=1e-7)
    assert max(stock_kl) > 0
    ext_params = parameters(ext)
    for name, value in parameters(stock).items():
        torch.testing.assert_close(ext_params[name], value, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "overrides",
    [
        {"importance_sampling_level": "sequence", "num_iterations": 2},
        {"use_bias_correction_kl": False, "num_iterations": 2},
        {"gradient_accumulation_steps": 2, "steps_per_generation": 1},
    ],
    ids=["sequence-level-ratio", "no-bias-correction", "misaligned-generation"],
)
def test_generic_kl_path_reproduces_stock_off_policy(tiny_model_dir, tmp_path, overrides):
    """Off-policy steps (old log-probs differ from current ones) exercise the importance ratio on the KL. Adam turns
    rounding-level gradient differences into parameter differences of order lr * 1e-4, hence atol 1e-6."""
    overrides = {"beta": 0.5, "learning_rate": 5e-3, **overrides}
    stock, ext = run_both(tiny_model_dir, tmp_path, overrides, ext_overrides={"kl_clamp": 1e9})
    torch.testing.assert_close(torch.tensor(losses(ext)), torch.tensor(losses(stock)), rtol=1e-5, atol=1e-7)
    ext_params = parameters(ext)
    for name, value in parameters(stock).items():
        torch.testing.assert_close(ext_params[name], value, rtol=1e-5, atol=1e-6)
