"""Dynamic sampling (DAPO filter groups): the exact tie criterion, the choice and assembly of groups, and training with
it: every trained group carries signal, the number of rounds is the one the prompt stream implies, the cap holds,
every estimator, KL placement, loss type, iteration setting, LoRA and the overlap work, evaluation never filters, and
a resumed run continues as the uninterrupted one."""

from __future__ import annotations

import math

import pytest
import torch
from launch import launch_two_processes
from peft import LoraConfig
from record_dynamic_sampling import SLICE_FIELDS
from sampling_helpers import GROUP_SIZE, first_operand, half_tied_reward
from trainer_helpers import make_config, parameters, prompt_dataset, train

from trl_grpo_ext import GRPOExtConfig, GRPOExtTrainer
from trl_grpo_ext.trainer.advantages import compute_advantages
from trl_grpo_ext.trainer.dynamic_sampling import (
    assemble_batch,
    combined_rewards,
    fill_groups,
    informative_groups,
    pick_groups,
    round_informative_groups,
)
from trl_grpo_ext.trainer.prompt_stream import PromptStream
from trl_grpo_ext.verifiers import as_reward_function, register_verifier

# --- the criterion and the assembly, alone ---


def test_tied_float32_rewards_are_dropped_and_any_real_spread_is_kept():
    third = torch.tensor(0.1, dtype=torch.float32) + torch.tensor(0.2, dtype=torch.float32)  # float32 rounding
    next_up = torch.nextafter(third, torch.tensor(1.0))
    rewards = torch.stack(
        [
            third, third, third, third,  # tied: dropped
            third, third, third, next_up,  # one ulp of spread: kept
            torch.tensor(float("nan")), third, third, third,  # tied among the scorable: dropped
            torch.tensor(float("nan")), torch.tensor(float("nan")), torch.tensor(float("nan")), third,  # one: dropped
            torch.tensor(0.0), torch.tensor(1e-30), torch.tensor(0.0), torch.tensor(0.0),  # tiny spread: kept
        ]
    )  # fmt: skip
    for estimator in ("grpo", "rloo", "dr_grpo", "batch_std", "rank", "gpg", "reinforce_pp_baseline"):
        kept = round_informative_groups(rewards, GROUP_SIZE, estimator, None)
        assert kept.tolist() == [False, True, False, False, True], estimator


def test_estimator_zero_cases_are_dropped():
    """pass@k gives 0 to a group with fewer than k failures; the group carries no signal for that estimator."""
    rewards = torch.tensor([1.0, 1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 0.0])
    assert round_informative_groups(rewards, GROUP_SIZE, "pass_at_k", None, k=2).tolist() == [False, True]
    assert round_informative_groups(rewards, GROUP_SIZE, "grpo", None).tolist() == [True, True]


def test_informative_groups_reads_advantages_exactly():
    advantages = torch.tensor([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1e-40])
    assert informative_groups(advantages, GROUP_SIZE).tolist() == [False, True]


def test_groups_are_picked_in_generation_order_up_to_the_target():
    informative = [torch.tensor([False, True, True]), torch.tensor([True, False, True])]
    assert pick_groups(informative, 3) == [(0, 1), (0, 2), (1, 0)]
    picks = pick_groups(informative, 6)
    assert picks == [(0, 1), (0, 2), (1, 0), (1, 2)]
    assert fill_groups(informative, picks, 6) == [(1, 1)]  # too few: the last round's unpicked group fills


def test_assembled_batch_pads_like_stock_and_masks_fillers():
    def round_of(prompt_width, completion_width, value):
        rows = 2 * 2
        return {
            "prompt_ids": torch.full((rows, prompt_width), value),
            "prompt_mask": torch.ones(rows, prompt_width, dtype=torch.long),
            "completion_ids": torch.full((rows, completion_width), value),
            "completion_mask": torch.ones(rows, completion_width, dtype=torch.long),
            "rewards_per_func": torch.full((rows, 1), float(value)),
        }

    rounds = [round_of(2, 3, 7), round_of(3, 1, 8)]
    batch, is_filler = assemble_batch(rounds, [(1, 0), (0, 1)], [(1, 1)], group_size=2, pad_token_id=0)
    assert batch["prompt_ids"].tolist() == [[8, 8, 8]] * 2 + [[0, 7, 7]] * 2 + [[8, 8, 8]] * 2  # left padded
    assert batch["prompt_mask"].tolist() == [[1, 1, 1]] * 2 + [[0, 1, 1]] * 2 + [[1, 1, 1]] * 2
    assert batch["completion_ids"].tolist() == [[8, 0, 0]] * 2 + [[7, 7, 7]] * 2 + [[8, 0, 0]] * 2  # right padded
    assert batch["completion_mask"].tolist() == [[1, 0, 0]] * 2 + [[1, 1, 1]] * 2 + [[0, 0, 0]] * 2  # filler masked
    assert is_filler.tolist() == [False] * 4 + [True] * 2
    assert batch["rewards_per_func"][:4, 0].tolist() == [8.0, 8.0, 7.0, 7.0]
    assert torch.isnan(batch["rewards_per_func"][4:]).all()


def test_unknown_batch_fields_are_refused_with_the_reason():
    rounds = [
        {"completion_mask": torch.ones(2, 1), "pixel_values": torch.ones(2, 3), "rewards_per_func": torch.ones(2, 1)}
    ]
    with pytest.raises(ValueError, match="'pixel_values'.*multimodal"):
        assemble_batch(rounds, [(0, 0)], [], group_size=2, pad_token_id=0)


# --- training with it ---


class RecordingTrainer(GRPOExtTrainer):
    """Keeps the first operand of each trained row and the advantages of each training batch."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.batches = []

    def _generate_and_score_completions(self, inputs):
        output = super()._generate_and_score_completions(inputs)
        if self.model.training:
            prompts = self.processing_class.batch_decode(output["prompt_ids"], skip_special_tokens=True)
            trained = output["completion_mask"].sum(dim=1) > 0
            self.batches.append({"advantages": output["advantages"], "prompts": prompts, "trained": trained})
        return output


def run(model_dir, tmp_path, reward=half_tied_reward, trainer_cls=RecordingTrainer, **overrides):
    settings = {"dynamic_sampling": True, "per_device_train_batch_size": 8, "max_steps": 3, **overrides}
    config = make_config(GRPOExtConfig, tmp_path / "out", **settings)
    trainer = trainer_cls(model=model_dir, reward_funcs=[reward], args=config, train_dataset=prompt_dataset())
    trainer.train()
    return trainer


def logged(trainer, key):
    return [entry[key] for entry in trainer.state.log_history if key in entry and "train_runtime" not in entry]


def expected_rounds(steps: int, groups: int, max_rounds: int, seed: int = 0) -> list[tuple[int, int]]:
    """(rounds, informative groups kept) per step, by replaying the prompt stream: odd first operands carry signal."""
    stream, dataset, result = PromptStream(16, seed), prompt_dataset(), []
    for _ in range(steps):
        rounds = found = 0
        while rounds < max_rounds and found < groups:
            rows = stream.draw(groups)
            rounds += 1
            found += sum(first_operand(dataset[row]["prompt"]) % 2 for row in rows)
        result.append((rounds, min(found, groups)))
    return result


def test_every_trained_group_carries_signal_after_the_expected_rounds(tiny_model_dir, tmp_path):
    trainer = run(tiny_model_dir, tmp_path)
    expected = expected_rounds(steps=3, groups=2, max_rounds=8)
    assert logged(trainer, "dynamic_sampling/generation_rounds") == [float(r) for r, _ in expected]
    assert logged(trainer, "dynamic_sampling/kept_group_fraction") == [2 / (2 * r) for r, _ in expected]
    assert logged(trainer, "dynamic_sampling/capped") == [0.0] * 3
    assert logged(trainer, "frac_zero_advantage_groups") == [0.0] * 3
    assert logged(trainer, "num_completions_generated") == [
        float(sum(r for r, _ in expected[: i + 1]) * 8) for i in range(3)
    ]
    for batch in trainer.batches:
        assert (batch["advantages"].view(-1, GROUP_SIZE) != 0).any(dim=1).all()
        assert all(first_operand(prompt.strip()) % 2 == 1 for prompt in batch["prompts"])
    assert any(r > 1 for r, _ in expected), "the test needs a step with several rounds"


def test_the_cap_trains_on_the_groups_found_and_masks_the_rest(tiny_model_dir, tmp_path):
    trainer = run(tiny_model_dir, tmp_path, max_generation_rounds=1)
    expected = expected_rounds(steps=3, groups=2, max_rounds=1)
    assert logged(trainer, "dynamic_sampling/generation_rounds") == [1.0] * 3
    assert logged(trainer, "dynamic_sampling/capped") == [float(kept < 2) for _, kept in expected]
    assert logged(trainer, "dynamic_sampling/kept_group_fraction") == [kept / 2 for _, kept in expected]
    assert any(kept < 2 for _, kept in expected), "the test needs a capped step"
    for batch, (_, kept) in zip(trainer.batches, expected):
        assert int(batch["trained"].sum()) == kept * GROUP_SIZE
        assert (batch["advantages"][~batch["trained"]] == 0).all()


def test_a_task_with_no_signal_never_loops_nor_fails(tiny_model_dir, tmp_path):
    trainer = run(tiny_model_dir, tmp_path, reward=lambda completions, **kw: [0.0] * len(completions))
    assert logged(trainer, "dynamic_sampling/generation_rounds") == [8.0] * 3
    assert logged(trainer, "dynamic_sampling/capped") == [1.0] * 3
    assert logged(trainer, "num_completions_generated")[-1] == 3 * 8 * 8
    assert all(not batch["trained"].any() for batch in trainer.batches)
    assert all(loss == 0.0 for loss in logged(trainer, "loss"))


@pytest.mark.parametrize(
    "overrides",
    [
        {"advantage_estimator": "rloo"},
        {"advantage_estimator": "batch_std", "loss_type": "dapo"},
        {"advantage_estimator": "opo", "loss_type": "dr_grpo"},
        {"advantage_estimator": "gpg", "loss_type": "bnpo"},
        {"advantage_estimator": "reinforce_pp_baseline"},
        {"beta": 0.04, "kl_estimator": "k2", "loss_type": "grpo"},
        {"beta": 0.04, "kl_estimator": "k1", "kl_placement": "reward", "advantage_estimator": "dr_grpo"},
        {"beta": 0.04, "num_iterations": 2, "gradient_accumulation_steps": 2, "steps_per_generation": 2},
        {"per_device_train_batch_size": 4, "gradient_accumulation_steps": 3},
        {"loss_type": "cispo"},
    ],
    ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()),
)
def test_works_with_estimators_kl_placements_loss_types_and_iterations(tiny_model_dir, tmp_path, overrides):
    trainer = run(tiny_model_dir, tmp_path, **overrides)
    assert trainer.batches and logged(trainer, "frac_zero_advantage_groups")
    assert set(logged(trainer, "frac_zero_advantage_groups")) == {0.0}
    for batch in trainer.batches:
        assert (batch["advantages"].view(-1, GROUP_SIZE) != 0).any(dim=1).all()
    assert all(math.isfinite(loss) for loss in logged(trainer, "loss"))
    if "kl_penalty" in str(trainer.state.log_history):  # the KL in the reward: filtered on the task rewards
        assert logged(trainer, "kl_penalty")


def test_advantages_are_those_of_the_assembled_batch(tiny_model_dir, tmp_path):
    """batch_std scales by the std of the batch trained on (the kept groups), not of the rounds generated."""
    trainer = run(tiny_model_dir, tmp_path, advantage_estimator="batch_std", max_steps=1)
    advantages = trainer.batches[0]["advantages"]
    rewards = torch.tensor([0.0, 1.0, 2.0, 3.0] * 2)
    torch.testing.assert_close(advantages, compute_advantages(rewards, GROUP_SIZE, "batch_std"), rtol=0, atol=0)


@register_verifier("digit_share_for_sampling_tests")
def digit_share(completion, reference):
    """Share of digit characters (test helper)."""
    return sum(ch.isdigit() for ch in completion) / max(len(completion), 1)


def test_lora_and_the_reward_overlap(tiny_model_dir, tmp_path):
    lora = LoraConfig(r=4, lora_alpha=8, target_modules="all-linear", task_type="CAUSAL_LM")
    config = make_config(
        GRPOExtConfig, tmp_path / "out", dynamic_sampling=True, max_generation_rounds=2, max_steps=2, beta=0.04
    )
    reward = as_reward_function("digit_share_for_sampling_tests")
    dataset = prompt_dataset().add_column("answer", ["0"] * 16)
    trainer = GRPOExtTrainer(
        model=tiny_model_dir, reward_funcs=[reward], args=config, train_dataset=dataset, peft_config=lora
    )
    trainer.train()
    assert logged(trainer, "dynamic_sampling/generation_rounds")
    assert all(math.isfinite(loss) for loss in logged(trainer, "loss"))
    trained = [name for name, p in trainer.model.named_parameters() if p.requires_grad]
    assert trained and all("lora" in name for name in trained)


def test_evaluation_never_filters(tiny_model_dir, tmp_path):
    """The evaluation set is the training set: half of its groups tie, and evaluation keeps them all."""
    config = make_config(
        GRPOExtConfig,
        tmp_path / "out",
        dynamic_sampling=True,
        max_steps=1,
        eval_strategy="steps",
        eval_steps=1,
        per_device_eval_batch_size=16,
        num_generations_eval=GROUP_SIZE,
    )
    trainer = GRPOExtTrainer(
        model=tiny_model_dir,
        reward_funcs=[half_tied_reward],
        args=config,
        train_dataset=prompt_dataset(),
        eval_dataset=prompt_dataset(),
    )
    trainer.train()
    evaluations = [entry for entry in trainer.state.log_history if "eval_loss" in entry]
    assert evaluations and not any("dynamic_sampling" in key for key in evaluations[0])
    assert evaluations[0]["eval_frac_zero_advantage_groups"] == 0.5


def test_default_off_logs_nothing_new(tiny_model_dir, tmp_path):
    config = make_config(GRPOExtConfig, tmp_path / "out", max_steps=1)
    trainer = train(GRPOExtTrainer, config, tiny_model_dir, reward_funcs=[half_tied_reward])
    assert trainer._prompt_stream is None
    assert not any("dynamic_sampling" in key or "num_completions" in key for key in trainer.state.log_history[0])


def test_resume_continues_as_the_uninterrupted_run(tiny_model_dir, tmp_path):
    settings = dict(max_steps=4, save_strategy="steps", save_steps=2)
    full = run(tiny_model_dir, tmp_path / "full", **settings)
    resumed = RecordingTrainer(
        model=tiny_model_dir,
        reward_funcs=[half_tied_reward],
        args=make_config(
            GRPOExtConfig, tmp_path / "resumed", dynamic_sampling=True, per_device_train_batch_size=8, **settings
        ),
        train_dataset=prompt_dataset(),
    )
    resumed.train(resume_from_checkpoint=str(tmp_path / "full" / "out" / "checkpoint-2"))
    assert [b["prompts"] for b in resumed.batches] == [b["prompts"] for b in full.batches[2:]]
    assert resumed._prompt_stream.state() == full._prompt_stream.state()
    for key in ("dynamic_sampling/generation_rounds", "num_completions_generated", "loss", "reward"):
        assert logged(resumed, key) == logged(full, key), key  # the resumed history starts with the checkpoint's
    full_params, resumed_params = parameters(full), parameters(resumed)
    for name, value in full_params.items():
        assert torch.equal(resumed_params[name], value), name


# --- several processes ---


@pytest.mark.slow
@pytest.mark.parametrize("estimator", ["grpo", "batch_std"])
def test_two_processes_train_on_the_batch_one_process_builds(tmp_path, tiny_model_dir, estimator):
    """Each process keeps its slice of the batch that one process builds from the same gathered rounds: the same
    groups, in the same order, with the same advantages and loss items; both retire the same prompts."""
    launch_two_processes("record_dynamic_sampling.py", str(tmp_path), tiny_model_dir, estimator, port=29518)
    record0, record1 = (torch.load(tmp_path / f"rank{rank}.pt") for rank in (0, 1))
    assert record0["stream"] == record1["stream"], "both processes retired the same prompts"
    assert record0["stream"]["args"]["retired"], "solved prompts were retired"
    rank0, rank1 = record0["steps"], record1["steps"]
    assert len(rank0) == len(rank1) == 3
    several_rounds = False
    for step0, step1 in zip(rank0, rank1):
        rounds = step0["rounds"]
        for round0, round1 in zip(rounds, step1["rounds"], strict=True):
            for field, value in round0.items():
                assert torch.equal(value, round1[field]), f"both processes gathered the same {field}"
        weights = torch.ones(1)
        informative = [
            round_informative_groups(combined_rewards(r["rewards_per_func"], weights), GROUP_SIZE, estimator, None)
            for r in rounds
        ]
        picks = pick_groups(informative, 3)
        batch, is_filler = assemble_batch(rounds, picks, fill_groups(informative, picks, 3), GROUP_SIZE, 0)
        rewards = combined_rewards(batch["rewards_per_func"], weights)
        batch["advantages"] = compute_advantages(rewards, GROUP_SIZE, estimator)
        for field in SLICE_FIELDS:
            if field in batch:
                two = torch.cat([step0["local"][field], step1["local"][field]])
                assert torch.equal(two, batch[field]), field
        assert step0["items"] == step1["items"] == (batch["completion_mask"]).sum()
        assert (batch["advantages"].view(-1, GROUP_SIZE) != 0).any(dim=1).all()
        several_rounds |= len(rounds) > 1
    assert several_rounds, "the test needs a step with several rounds"
