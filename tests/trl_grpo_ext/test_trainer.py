"""GRPOExtTrainer behaviour: every estimator trains on the advantages its formula gives, KL in the reward, the adaptive
coefficient, LoRA, and the reference model of a model built or changed in memory."""

from __future__ import annotations

import json
import math

import pytest
import torch
from peft import LoraConfig
from trainer_helpers import digit_reward, length_parity_reward, make_config, parameters, prompt_dataset, train
from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback

from trl_grpo_ext import GRPOExtConfig, GRPOExtTrainer
from trl_grpo_ext.models.tiny_model import build_tiny_model
from trl_grpo_ext.trainer.advantages import (
    _ADVANTAGE_ESTIMATORS,
    compute_advantages,
    estimator_properties,
    list_advantage_estimators,
    register_advantage_estimator,
)
from trl_grpo_ext.trainer.config import K2_GRADIENT_ESTIMATORS
from trl_grpo_ext.trainer.kl import list_kl_estimators


def ext_config(tmp_path, **overrides):
    return make_config(GRPOExtConfig, tmp_path / "out", **{"max_steps": 2, **overrides})


def logged(trainer, key):
    return [entry[key] for entry in trainer.state.log_history if key in entry]


def trained_rewards_and_advantages(trainer):
    """The last batch's rewards (one reward function) and the advantages in the completions table."""
    (rewards,) = trainer._logs["rewards"].values()
    return torch.tensor(list(rewards)), torch.tensor(list(trainer._logs["advantages"]))


class CompletionRecordingTrainer(GRPOExtTrainer):
    """Keeps the completion ids of each generation batch (one process: the whole batch)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.generated = []

    def _generate_and_score_completions(self, inputs):
        output = super()._generate_and_score_completions(inputs)
        self.generated.append(output["completion_ids"])
        return output


def end_of_sequence(model_dir) -> int:
    return AutoTokenizer.from_pretrained(model_dir).eos_token_id


def completion_lengths(trainer, completion_ids: torch.Tensor) -> torch.Tensor:
    """Tokens up to and including the first end-of-sequence token, or all of them: counted from the ids alone."""
    eos = trainer.processing_class.eos_token_id
    return torch.tensor([row.index(eos) + 1 if eos in row else len(row) for row in completion_ids.tolist()])


@pytest.mark.parametrize("estimator", list_advantage_estimators())
def test_each_estimator_trains_on_its_formula(tiny_model_dir, tmp_path, estimator):
    reward = length_parity_reward if estimator == "pass_at_k" else digit_reward
    extra = {"pass_at_k": 2} if estimator == "pass_at_k" else {}
    needs_lengths = estimator_properties(estimator).needs_lengths
    if needs_lengths:  # completions of different lengths
        extra["generation_kwargs"] = {"sequence_bias": {(end_of_sequence(tiny_model_dir),): 4.0}}
    trainer = train(
        CompletionRecordingTrainer,
        ext_config(tmp_path, advantage_estimator=estimator, **extra),
        tiny_model_dir,
        [reward],
    )
    rewards, advantages = trained_rewards_and_advantages(trainer)
    lengths = completion_lengths(trainer, trainer.generated[-1]) if needs_lengths else None
    expected = compute_advantages(
        rewards, group_size=4, estimator=estimator, k=extra.get("pass_at_k", 1), lengths=lengths
    )
    if needs_lengths:
        assert len(set(lengths.tolist())) > 1
    torch.testing.assert_close(advantages, expected, rtol=0, atol=0)
    assert all(math.isfinite(loss) for loss in logged(trainer, "loss"))
    assert logged(trainer, "advantages/max_abs")[-1] == pytest.approx(advantages.abs().max().item())


class ToolResultMarkingTrainer(CompletionRecordingTrainer):
    """Marks the second token of each completion as a tool result (tool_mask 0), as TRL's tool loop marks the tokens it
    inserts, without running a tool."""

    def _generate(self, prompts):
        prompt_ids, completion_ids, _, *rest = super()._generate(prompts)
        tool_mask = [[int(position != 1) for position in range(len(ids))] for ids in completion_ids]
        return prompt_ids, completion_ids, tool_mask, *rest


def test_lengths_count_only_the_tokens_the_policy_generated(tiny_model_dir, tmp_path):
    """Tool results are not the policy's actions and the loss skips them: the token statistics of `reinforce_pp` (and
    any estimator's `lengths`) leave them out, as verl's response mask does."""
    cfg = ext_config(
        tmp_path,
        advantage_estimator="reinforce_pp",
        generation_kwargs={"sequence_bias": {(end_of_sequence(tiny_model_dir),): 4.0}},  # different lengths
    )
    trainer = train(ToolResultMarkingTrainer, cfg, tiny_model_dir)
    rewards, advantages = trained_rewards_and_advantages(trainer)
    generated = completion_lengths(trainer, trainer.generated[-1])
    # The second token, where there is one, is a tool result.
    policy_tokens = generated - (generated >= 2).to(generated.dtype)
    expected = compute_advantages(rewards, group_size=4, estimator="reinforce_pp", lengths=policy_tokens)
    torch.testing.assert_close(advantages, expected, rtol=0, atol=0)
    with_tool_tokens = compute_advantages(rewards, group_size=4, estimator="reinforce_pp", lengths=generated)
    assert not torch.equal(expected, with_tool_tokens)  # the premise: counting the tool result would differ


def test_opo_uses_completion_lengths(tiny_model_dir, tmp_path):
    trainer = train(GRPOExtTrainer, ext_config(tmp_path, advantage_estimator="opo"), tiny_model_dir)
    rewards, advantages = trained_rewards_and_advantages(trainer)
    # Zero-sum under length weights is not checkable without the lengths, but the baseline lies within the rewards.
    grouped_r, grouped_a = rewards.view(-1, 4), advantages.view(-1, 4)
    baseline = grouped_r - grouped_a
    assert torch.all(baseline >= grouped_r.min(dim=1, keepdim=True).values - 1e-6)
    assert torch.all(baseline <= grouped_r.max(dim=1, keepdim=True).values + 1e-6)


@pytest.mark.parametrize("kl_estimator", list_kl_estimators())
def test_each_kl_estimator_trains_in_the_loss(tiny_model_dir, tmp_path, kl_estimator):
    bias_correction = kl_estimator not in K2_GRADIENT_ESTIMATORS  # those keep k2's gradient only without the ratio
    cfg = ext_config(
        tmp_path,
        beta=0.1,
        kl_estimator=kl_estimator,
        use_bias_correction_kl=bias_correction,
        learning_rate=1e-2,
        max_steps=3,
    )
    trainer = train(GRPOExtTrainer, cfg, tiny_model_dir)
    # Stock's own k3 path logs it as `kl`; every other estimator adds `kl/<name>` next to the k3 diagnostic `kl`.
    values = logged(trainer, "kl" if kl_estimator == "k3" else f"kl/{kl_estimator}")
    assert len(values) == 3 and all(math.isfinite(v) for v in values)
    assert values[0] == 0.0  # step 1: the policy is the reference
    assert logged(trainer, "kl")[-1] > 0  # the k3 diagnostic moves once the policy does


def test_estimators_combine_with_loss_types_iterations_and_accumulation(tiny_model_dir, tmp_path):
    cfg = ext_config(
        tmp_path,
        beta=0.1,
        advantage_estimator="rloo",
        kl_estimator="k2",
        use_bias_correction_kl=False,
        loss_type="dapo",
        num_iterations=2,
        gradient_accumulation_steps=2,
        max_steps=2,
    )
    trainer = train(GRPOExtTrainer, cfg, tiny_model_dir)
    assert all(math.isfinite(v) for v in logged(trainer, "loss"))
    assert len(logged(trainer, "kl/k2")) == 2


def test_kl_in_reward_penalises_rewards(tiny_model_dir, tmp_path):
    """The penalty is zero at step 1 (policy = reference) and grows once the policy moves; the logged reward stays the
    task reward and `reward_with_kl_penalty` is the task reward minus the penalty."""
    cfg = ext_config(
        tmp_path,
        beta=0.5,
        kl_estimator="k1",
        kl_placement="reward",
        advantage_estimator="dr_grpo",
        learning_rate=5e-2,
        max_steps=3,
    )
    trainer = train(GRPOExtTrainer, cfg, tiny_model_dir)
    penalties = logged(trainer, "kl_penalty")
    assert penalties[0] == 0.0 and penalties[-1] != 0.0
    for reward, with_penalty, penalty in zip(
        logged(trainer, "reward"), logged(trainer, "reward_with_kl_penalty"), penalties
    ):
        assert with_penalty == pytest.approx(reward - penalty, abs=1e-6)


def test_rollout_sequence_kl_is_the_sum_of_token_log_ratios(tiny_model_dir, tmp_path):
    cfg = ext_config(tmp_path, beta=0.5, kl_estimator="k1", kl_placement="reward", advantage_estimator="rloo")
    trainer = train(GRPOExtTrainer, cfg, tiny_model_dir)
    with torch.no_grad():  # move the policy away from the reference
        for p in trainer.model.parameters():
            p.add_(0.05 * torch.randn_like(p))
    batch = {
        "prompt_ids": torch.tensor([[3, 40, 41, 42], [3, 43, 44, 45]]),
        "prompt_mask": torch.ones(2, 4, dtype=torch.long),
        "completion_ids": torch.tensor([[50, 51, 52], [53, 54, 2]]),
        "completion_mask": torch.tensor([[1, 1, 1], [1, 1, 0]]),
    }
    input_ids = torch.cat([batch["prompt_ids"], batch["completion_ids"]], dim=1)

    def token_logps(model):
        with torch.no_grad():
            logits = model(input_ids=input_ids).logits[:, 3:-1]
        return torch.log_softmax(logits.float(), dim=-1).gather(-1, batch["completion_ids"].unsqueeze(-1)).squeeze(-1)

    batch["ref_per_token_logps"] = token_logps(trainer.ref_model)
    expected = ((token_logps(trainer.model) - batch["ref_per_token_logps"]) * batch["completion_mask"]).sum(dim=1)
    got = trainer._rollout_sequence_kl(batch, "train")
    assert expected.abs().min() > 1e-3
    torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-5)
    # A tool result inserted into the completion is not the policy's action: its log-ratio is left out of the penalty.
    batch["tool_mask"] = torch.tensor([[1, 0, 1], [1, 1, 1]])
    token_ratios = (token_logps(trainer.model) - batch["ref_per_token_logps"]) * batch["completion_mask"]
    without_tool_result = (token_ratios * batch["tool_mask"]).sum(dim=1)
    assert (without_tool_result - expected).abs().max() > 1e-3  # the premise: the tool token's log-ratio counts
    torch.testing.assert_close(trainer._rollout_sequence_kl(batch, "train"), without_tool_result, rtol=1e-4, atol=1e-5)


def test_adaptive_beta_follows_the_controller(tiny_model_dir, tmp_path):
    """KL far below target: the error clips at -0.2 every step, so beta_t = beta_0 (1 - 0.2 n / horizon)^t with n the
    completions per optimizer step."""
    cfg = ext_config(tmp_path, beta=0.1, kl_target=1e6, kl_horizon=40, max_steps=3)
    trainer = train(GRPOExtTrainer, cfg, tiny_model_dir)
    n = cfg.per_device_train_batch_size * cfg.gradient_accumulation_steps
    expected = [0.1 * (1 - 0.2 * n / 40) ** t for t in (1, 2, 3)]
    assert logged(trainer, "beta") == pytest.approx(expected, rel=1e-12)
    assert trainer.beta == pytest.approx(expected[-1], rel=1e-12)


def test_adaptive_beta_is_saved_and_resumed(tiny_model_dir, tmp_path):
    """A run resumed from step 2's checkpoint starts from step 2's beta and ends where the uninterrupted run ends."""
    settings = dict(beta=0.1, kl_target=1e6, kl_horizon=40, max_steps=3, save_strategy="steps", save_steps=2)
    full = train(GRPOExtTrainer, ext_config(tmp_path, **settings), tiny_model_dir)
    checkpoint = tmp_path / "out" / "checkpoint-2"
    saved = json.loads((checkpoint / "trainer_state.json").read_text())["stateful_callbacks"]["AdaptiveKLState"]
    assert saved["args"]["beta"] == logged(full, "beta")[1]

    class BetaAtStart(TrainerCallback):
        def on_train_begin(self, args, state, control, **kwargs):
            self.beta = resumed.beta

    at_start = BetaAtStart()
    resumed = GRPOExtTrainer(
        model=tiny_model_dir,
        reward_funcs=[digit_reward],
        args=ext_config(tmp_path, **settings),
        train_dataset=prompt_dataset(),
        callbacks=[at_start],
    )
    resumed.train(resume_from_checkpoint=str(checkpoint))
    assert at_start.beta == saved["args"]["beta"] != 0.1
    assert resumed.beta == pytest.approx(full.beta, rel=1e-12)


def test_adaptive_run_resumes_from_a_checkpoint_without_adaptive_beta(tiny_model_dir, tmp_path):
    """A fixed-beta checkpoint resumed with kl_target: beta starts from its initial value and later saves work."""
    fixed = dict(beta=0.1, max_steps=1, save_strategy="steps", save_steps=1)
    train(GRPOExtTrainer, ext_config(tmp_path, **fixed), tiny_model_dir)
    adaptive = ext_config(tmp_path, **{**fixed, "max_steps": 2, "kl_target": 1e6, "kl_horizon": 40})
    resumed = GRPOExtTrainer(
        model=tiny_model_dir, reward_funcs=[digit_reward], args=adaptive, train_dataset=prompt_dataset()
    )
    resumed.train(resume_from_checkpoint=str(tmp_path / "out" / "checkpoint-1"))
    n = adaptive.per_device_train_batch_size * adaptive.gradient_accumulation_steps
    assert resumed.beta == pytest.approx(0.1 * (1 - 0.2 * n / 40), rel=1e-12)
    saved = json.loads((tmp_path / "out" / "checkpoint-2" / "trainer_state.json").read_text())
    assert saved["stateful_callbacks"]["AdaptiveKLState"]["args"]["beta"] == resumed.beta


def test_model_built_in_memory_gets_itself_as_reference(tmp_path):
    """Stock reloads the reference from model.config._name_or_path, which a model built in memory does not have."""
    model, tokenizer = build_tiny_model(seed=3)
    initial = {name: p.detach().clone() for name, p in model.named_parameters()}
    trainer = train(
        GRPOExtTrainer, ext_config(tmp_path, beta=0.1, learning_rate=1e-2), model, processing_class=tokenizer
    )
    reference = dict(trainer.ref_model.named_parameters())
    for name, value in initial.items():
        assert torch.equal(reference[name], value), name
    assert any(not torch.equal(p, initial[n]) for n, p in parameters(trainer).items())


def test_model_changed_in_memory_is_not_replaced_by_its_files(tiny_model_dir, tmp_path):
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    with torch.no_grad():
        model.model.embed_tokens.weight.mul_(2.0)  # e.g. a warm-up done in memory before GRPO
    changed = model.model.embed_tokens.weight.detach().clone()
    trainer = GRPOExtTrainer(
        model, [digit_reward], args=ext_config(tmp_path, beta=0.1), train_dataset=prompt_dataset()
    )
    torch.testing.assert_close(trainer.ref_model.model.embed_tokens.weight, changed, rtol=0, atol=0)


def test_lora_trains_only_the_adapter_with_a_custom_kl(tiny_model_dir, tmp_path):
    peft_config = LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM")
    cfg = ext_config(tmp_path, beta=0.1, kl_estimator="k2", use_bias_correction_kl=False, learning_rate=1e-2)
    base = dict(AutoModelForCausalLM.from_pretrained(tiny_model_dir).named_parameters())
    trainer = train(GRPOExtTrainer, cfg, tiny_model_dir, peft_config=peft_config)
    params = parameters(trainer)
    lora = {n: p for n, p in params.items() if "lora_" in n}
    assert lora and any(p.abs().sum() > 0 for n, p in lora.items() if "lora_B" in n)
    for name, value in params.items():
        if "lora_" not in name:
            base_name = name.replace("base_model.model.", "").replace(".base_layer", "")
            assert torch.equal(value, base[base_name]), name
    assert len(logged(trainer, "kl/k2")) == 2


def test_user_registered_estimator_is_selected_by_name(tiny_model_dir, tmp_path):
    @register_advantage_estimator("sign_of_centred")
    def sign_of_centred(rewards):
        """sign(r - group mean)."""
        return torch.sign(rewards - torch.nanmean(rewards, dim=1, keepdim=True))

    try:
        trainer = train(GRPOExtTrainer, ext_config(tmp_path, advantage_estimator="sign_of_centred"), tiny_model_dir)
        rewards, advantages = trained_rewards_and_advantages(trainer)
        expected = torch.sign(rewards.view(-1, 4) - rewards.view(-1, 4).mean(dim=1, keepdim=True)).view(-1)
        torch.testing.assert_close(advantages, expected)
    finally:
        del _ADVANTAGE_ESTIMATORS._entries["sign_of_centred"]


def test_a_registered_estimator_that_declares_lengths_receives_the_completion_lengths(tiny_model_dir, tmp_path):
    received = []

    @register_advantage_estimator("test_length_weighted")
    def length_weighted(rewards, *, lengths):
        """r - the group's length-weighted mean reward."""
        received.append(lengths.clone())
        weights = lengths.to(rewards.dtype)
        return rewards - (weights * rewards).sum(dim=1, keepdim=True) / weights.sum(dim=1, keepdim=True)

    try:
        cfg = ext_config(
            tmp_path,
            advantage_estimator="test_length_weighted",
            max_steps=2,
            generation_kwargs={"sequence_bias": {(end_of_sequence(tiny_model_dir),): 4.0}},  # different lengths
        )
        trainer = train(CompletionRecordingTrainer, cfg, tiny_model_dir)
    finally:
        del _ADVANTAGE_ESTIMATORS._entries["test_length_weighted"]
    assert len(received) == len(trainer.generated) == 2  # one call per generation batch
    for got, completion_ids in zip(received, trainer.generated):
        expected = completion_lengths(trainer, completion_ids)
        assert got.tolist() == expected.view(-1, 4).tolist()
    assert len(set(torch.cat(received).flatten().tolist())) > 1  # the premise: lengths differ


def test_advantage_clip_clamps_and_logs_the_share_clipped(tiny_model_dir, tmp_path):
    trainer = train(GRPOExtTrainer, ext_config(tmp_path, advantage_clip=0.5), tiny_model_dir)
    rewards, advantages = trained_rewards_and_advantages(trainer)
    unclipped = compute_advantages(rewards, group_size=4, estimator="grpo")
    clipped = unclipped.abs() > 0.5
    assert clipped.any() and not clipped.all()  # the premise: some advantages are clipped, not all
    assert torch.equal(advantages, unclipped.clamp(min=-0.5, max=0.5))
    scorable = ~torch.isnan(rewards)
    share = (clipped & scorable).sum().item() / scorable.sum().item()
    assert logged(trainer, "advantages/clipped_fraction")[-1] == pytest.approx(share, rel=1e-12)
    assert logged(trainer, "advantages/max_abs")[-1] <= 0.5


def test_plain_grpo_config_is_refused_with_advice(tiny_model_dir, tmp_path):
    from trl import GRPOConfig

    with pytest.raises(TypeError, match="args must be a GRPOExtConfig"):
        GRPOExtTrainer(tiny_model_dir, [digit_reward], args=make_config(GRPOConfig, tmp_path))
