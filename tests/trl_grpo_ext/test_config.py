"""GRPOExtConfig: validation with messages that name the field, the value and the choices; stock traps avoided."""

from __future__ import annotations

import re
import warnings

import pytest
from trl import GRPOConfig, TrlParser

from trl_grpo_ext import GRPOExtConfig
from trl_grpo_ext.trainer import config as config_module
from trl_grpo_ext.trainer.advantages import list_advantage_estimators
from trl_grpo_ext.trainer.kl import list_kl_estimators


def config(tmp_path, **kwargs) -> GRPOExtConfig:
    return GRPOExtConfig(output_dir=str(tmp_path), report_to="none", **kwargs)


def test_bf16_defaults_off_where_unsupported(tmp_path):
    """Stock GRPOConfig() defaults to bf16 and fails on a CPU-only machine; the extension picks fp32 there."""
    with pytest.raises(ValueError, match="bf16"):
        GRPOConfig(output_dir=str(tmp_path), report_to="none")
    assert config(tmp_path).bf16 is False
    assert config(tmp_path, bf16=False).bf16 is False


def test_cpu_only_machine_selects_the_cpu(tmp_path, monkeypatch):
    """So that `accelerate launch --multi_gpu` on CPUs forms a gloo process group (stock: each process trains alone)."""
    monkeypatch.setattr(config_module, "accelerator_available", lambda: False)  # a CPU-only machine, wherever it runs
    monkeypatch.setattr(config_module, "bf16_supported", lambda: False)
    cfg = config(tmp_path)
    assert cfg.use_cpu is True
    assert cfg.bf16 is False  # and not bf16 autocast on the CPU


@pytest.mark.parametrize("machine_supports_bf16", [False, True])
def test_where_stock_accepts_the_arguments_every_stock_field_resolves_as_stock(
    tmp_path, monkeypatch, machine_supports_bf16
):
    """Given use_cpu=True, stock's bf16 default works (bf16 autocast on the CPU): the extension keeps it. Turning it
    off there would make `compare --config` on a CPU train the default variant in fp32 against stock's bf16 autocast,
    with a different logged entropy at every step."""
    monkeypatch.setattr(config_module, "bf16_supported", lambda: machine_supports_bf16)
    stock = GRPOConfig(output_dir=str(tmp_path), report_to="none", use_cpu=True).to_dict()
    ext = config(tmp_path, use_cpu=True).to_dict()
    assert ext["bf16"] is True
    assert {k: v for k, v in ext.items() if k in stock} == stock


def test_defaults_select_stock_behaviour(tmp_path):
    cfg = config(tmp_path)
    assert (cfg.advantage_estimator, cfg.kl_estimator, cfg.kl_placement) == ("grpo", "k3", "loss")
    assert cfg.advantage_epsilon == 1e-4
    assert cfg.uses_stock_kl


@pytest.mark.parametrize(
    ("field", "value", "choices"),
    [
        ("advantage_estimator", "gae", list_advantage_estimators()),
        ("kl_estimator", "k4", list_kl_estimators()),
        ("kl_placement", "logits", ["loss", "reward"]),
        ("advantage_std", "sample", ["unbiased", "biased"]),
    ],
)
def test_unknown_choice_names_field_value_and_choices(tmp_path, field, value, choices):
    with pytest.raises(ValueError) as error:
        config(tmp_path, beta=0.1, **{field: value})
    message = str(error.value)
    assert field in message and repr(value) in message
    assert all(choice in message for choice in choices)


@pytest.mark.parametrize(
    "kl_settings",
    [{"kl_estimator": "k2"}, {"kl_placement": "reward"}, {"kl_clamp": 10.0}, {"kl_target": 0.1}],
)
def test_kl_settings_without_beta_fail(tmp_path, kl_settings):
    with pytest.raises(ValueError, match=r"beta=0\.0.*Set beta > 0"):
        config(tmp_path, beta=0.0, **kl_settings)


def test_kl_in_reward_with_biased_estimator_warns(tmp_path):
    with pytest.warns(UserWarning, match="only k1 is an unbiased"):
        config(tmp_path, beta=0.1, kl_placement="reward", kl_estimator="k3", advantage_estimator="rloo")


def test_kl_in_reward_with_std_scaled_advantage_warns(tmp_path):
    with pytest.warns(UserWarning, match="KL noise becomes a full-strength advantage"):
        config(tmp_path, beta=0.1, kl_placement="reward", kl_estimator="k1")
    for estimator in ("dr_grpo", "reinforce_pp"):  # unscaled; no group baseline (the whole batch's scale)
        with warnings.catch_warnings():
            warnings.simplefilter("error", UserWarning)
            config(tmp_path, beta=0.1, kl_placement="reward", kl_estimator="k1", advantage_estimator=estimator)


def test_k2_gradient_estimators_warn_about_importance_ratio_only_when_it_is_asked_for(tmp_path):
    with pytest.warns(UserWarning, match="use_bias_correction_kl=False"):
        config(tmp_path, beta=0.1, kl_estimator="k2", use_bias_correction_kl=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        assert (
            config(tmp_path, beta=0.1, kl_estimator="k2", use_bias_correction_kl=False).use_bias_correction_kl is False
        )
        for estimator in ("k2", "k1+", "k3+", "abs+", "low_var_kl+"):  # unset: the ratio is left out, silently
            assert config(tmp_path, beta=0.1, kl_estimator=estimator).use_bias_correction_kl is False
    for estimator in ("k3", "k1", "abs", "low_var_kl"):  # unset elsewhere: stock's default
        assert config(tmp_path, beta=0.1, kl_estimator=estimator).use_bias_correction_kl is True
    assert GRPOConfig(output_dir=str(tmp_path), use_cpu=True).use_bias_correction_kl is True  # what stock's is


@pytest.mark.parametrize(
    ("scale_rewards", "estimator"), [("group", "grpo"), ("batch", "batch_std"), ("none", "dr_grpo")]
)
def test_stock_scale_rewards_selects_the_matching_estimator(tmp_path, scale_rewards, estimator):
    assert config(tmp_path, scale_rewards=scale_rewards).advantage_estimator == estimator


def test_contradictory_scale_rewards_fails(tmp_path):
    with pytest.raises(ValueError, match="scale_rewards='none' contradicts advantage_estimator='rloo'"):
        config(tmp_path, scale_rewards="none", advantage_estimator="rloo")


def test_normalize_then_sum_refuses_other_estimators(tmp_path):
    with pytest.raises(ValueError, match="normalize_then_sum"):
        config(tmp_path, multi_objective_aggregation="normalize_then_sum", advantage_estimator="rloo")
    with pytest.raises(ValueError, match="normalize_then_sum"):
        config(tmp_path, beta=0.1, multi_objective_aggregation="normalize_then_sum", kl_placement="reward")


def test_options_the_estimator_ignores_fail(tmp_path):
    with pytest.raises(ValueError, match="pass_at_k would be ignored"):
        config(tmp_path, pass_at_k=4)
    with pytest.raises(ValueError, match="advantage_std would be ignored"):
        config(tmp_path, advantage_estimator="rloo", advantage_std="biased")
    assert config(tmp_path, advantage_estimator="pass_at_k", pass_at_k=4, num_generations=8).pass_at_k == 4


def test_pass_at_k_beyond_group_size_fails(tmp_path):
    with pytest.raises(ValueError, match="pass_at_k=16 must be between 1 and num_generations=8"):
        config(tmp_path, advantage_estimator="pass_at_k", pass_at_k=16, num_generations=8)


@pytest.mark.parametrize(("field", "value"), [("kl_clamp", -1.0), ("kl_target", 0.0), ("advantage_epsilon", -1e-3)])
def test_out_of_range_numbers_fail(tmp_path, field, value):
    with pytest.raises(ValueError, match=field):
        config(tmp_path, beta=0.1, **{field: value})


def test_parsed_from_command_line_and_yaml(tmp_path):
    yaml_file = tmp_path / "config.yaml"
    yaml_file.write_text("advantage_estimator: rloo\nbeta: 0.02\nkl_estimator: k1\nkl_placement: reward\n")
    parser = TrlParser(GRPOExtConfig)
    (cfg,) = parser.parse_args_and_config(
        ["--config", str(yaml_file), "--output_dir", str(tmp_path), "--report_to", "none", "--kl_target", "0.5"]
    )
    assert isinstance(cfg, GRPOExtConfig)
    assert (cfg.advantage_estimator, cfg.kl_estimator, cfg.kl_placement) == ("rloo", "k1", "reward")
    assert (cfg.beta, cfg.kl_target) == (0.02, 0.5)


@pytest.mark.parametrize(
    ("field", "typo", "meant"),
    [
        ("advantage_estimator", "rlo", "rloo"),
        ("advantage_estimator", "dr-grpo", "dr_grpo"),
        ("kl_estimator", "low_var", "low_var_kl"),
        ("kl_placement", "rewards", "reward"),
        ("advantage_std", "unbiassed", "unbiased"),
    ],
)
def test_a_typo_is_answered_with_the_closest_valid_name(tmp_path, field, typo, meant):
    with pytest.raises(
        ValueError, match=re.escape(f"{field}={typo!r}") + ".*" + re.escape(f"Did you mean {meant!r}?")
    ) as error:
        config(tmp_path, beta=0.1, **{field: typo})
    assert "Valid choices:" in str(error.value)


def test_a_name_far_from_every_choice_gets_no_suggestion(tmp_path):
    with pytest.raises(ValueError) as error:
        config(tmp_path, advantage_estimator="zzzzzz")
    assert "Did you mean" not in str(error.value) and "Valid choices: grpo" in str(error.value)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"dynamic_sampling": True, "max_generation_rounds": 0}, "max_generation_rounds=0 must be at least 1"),
        ({"max_generation_rounds": 3}, "max_generation_rounds=3 has no effect without dynamic_sampling=True"),
        ({"retire_solved_after": 0}, "retire_solved_after=0 must be at least 1, or None"),
        (
            {"dynamic_sampling": True, "multi_objective_aggregation": "normalize_then_sum"},
            "need multi_objective_aggregation='sum_then_normalize'",
        ),
        (
            {"prompt_sampling": "pass_rate", "multi_objective_aggregation": "normalize_then_sum"},
            "need multi_objective_aggregation='sum_then_normalize'",
        ),
        (
            {"prompt_sampling": "pass-rate"},
            re.escape(
                "prompt_sampling='pass-rate' is not valid. Did you mean 'pass_rate'? Valid choices: uniform, pass_rate"
            ),
        ),
        (
            {"dynamic_sampling": True, "advantage_estimator": "reinforce_pp"},
            "advantage_estimator='reinforce_pp' has no group baseline.*nothing would be dropped",
        ),
        ({"advantage_clip": 0.0}, r"advantage_clip=0\.0 must be positive, or None"),
        ({"advantage_clip": -1.0}, r"advantage_clip=-1\.0 must be positive"),
        (
            {"advantage_clip": 2.0, "multi_objective_aggregation": "normalize_then_sum"},
            "advantage_clip needs multi_objective_aggregation='sum_then_normalize'",
        ),
    ],
)
def test_sampling_settings_are_checked(tmp_path, settings, message):
    with pytest.raises(ValueError, match=message):
        config(tmp_path, **settings)


def test_sampling_settings_default_off(tmp_path):
    settings = config(tmp_path)
    assert not settings.dynamic_sampling and settings.retire_solved_after is None
    assert settings.prompt_sampling == "uniform" and settings.advantage_clip is None
    assert not settings.uses_prompt_stream and config(tmp_path, prompt_sampling="pass_rate").uses_prompt_stream
    assert settings.max_generation_rounds == 8


def test_sampling_needs_a_map_style_dataset(tmp_path, tiny_model_dir):
    from datasets import IterableDataset

    from trl_grpo_ext import GRPOExtTrainer

    stream = IterableDataset.from_generator(lambda: iter([{"prompt": "What is 1 + 1?"}] * 8))
    with pytest.raises(ValueError, match="map-style datasets.Dataset"):
        GRPOExtTrainer(
            model=tiny_model_dir,
            reward_funcs=[lambda completions, **kw: [0.0] * len(completions)],
            args=config(tmp_path, dynamic_sampling=True, max_steps=1, per_device_train_batch_size=8),
            train_dataset=stream,
        )


def test_default_config_is_quiet_and_ends_in_stocks_checkpointing_settings(tmp_path):
    import warnings

    from trl import GRPOConfig

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ours = GRPOExtConfig(output_dir=str(tmp_path), use_cpu=True)
    assert [str(w.message) for w in caught if "checkpointing" in str(w.message)] == []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        stock = GRPOConfig(output_dir=str(tmp_path), use_cpu=True)
    for name in ("gradient_checkpointing", "activation_checkpointing", "gradient_checkpointing_kwargs"):
        assert getattr(ours, name) == getattr(stock, name), name
    with pytest.warns(FutureWarning, match="gradient_checkpointing"):  # a value given under the old name still warns
        GRPOExtConfig(output_dir=str(tmp_path), gradient_checkpointing=False)
