"""`GRPOExtTrainer`: TRL's `GRPOTrainer` with selectable advantage and KL estimators.

Thin overrides, each delegating to stock for the rest (docs/trl_hooks.md describes every hook point):

- `_calculate_rewards` keeps the rewards TRL gathered across processes;
- `_generate_and_score_completions` recomputes the advantages from those rewards with the selected estimator (after
  subtracting the KL penalty when `kl_placement="reward"`) and takes this process's slice, exactly as stock does;
- `_compute_loss` delegates to stock when the KL term is stock's k3; otherwise it runs stock with the KL switched off
  and adds `beta * KL` aggregated with the loss type's own normaliser (the loss is linear in its per-token terms).

With `overlap_rewards`, `_generate` submits the verifier rewards right after generation and `_calculate_rewards`
collects them, so verification runs while the log-prob forwards do (`reward_overlap.py`).

With an adaptive coefficient (`kl_target`), `AdaptiveKLState` carries beta into each checkpoint's trainer state and
`_load_callback_state` restores it on resume.

With `dynamic_sampling`, `retire_solved_after` or `prompt_sampling="pass_rate"`, training batches come from
generation rounds of prompts drawn from a `PromptStream`, built by the `PromptRounds` component (`prompt_rounds.py`)
from the inputs the trainer hands it; evaluation is never filtered.

What the trainer needs to know about the advantage estimator (whether it takes completion lengths) comes from the
registry (`estimator_properties`), never from its name.
"""

from __future__ import annotations

import copy
import logging
from contextlib import contextmanager, nullcontext

import torch
import trl.trainer.grpo_trainer as stock_module
from accelerate.utils import gather_object, is_peft_model
from torch import nn
from transformers import TrainerCallback
from transformers.trainer_callback import ExportableState
from trl import GRPOTrainer
from trl.models.utils import disable_gradient_checkpointing

from ..evaluation.core import grouped_figures
from ..tools.metrics import TOOL_STATS
from ..tools.training import end_sessions, log_tool_step, uses_python_tool
from .advantages import advantage_metrics, clip_advantages, compute_advantages, estimator_properties
from .compat import check_supported_versions, known_deprecations_silenced, replaced_attribute
from .config import GRPOExtConfig
from .dynamic_sampling import combined_rewards, trained_token_mask
from .kl import kl_divergence
from .prompt_rounds import PromptRounds, Scored, build_prompt_stream
from .prompt_stream import PromptStream
from .reward_control import control_generator, control_rewards
from .reward_overlap import RewardOverlap, can_overlap

logger = logging.getLogger(__name__)

# The adaptive KL controller (Ziegler et al. 2019) clips the relative error of the KL to its target to
# [-ADAPTIVE_KL_ERROR_CLIP, ADAPTIVE_KL_ERROR_CLIP]: beta changes by at most this fraction per kl_horizon completions.
ADAPTIVE_KL_ERROR_CLIP = 0.2

# Forward arguments that `_generate_and_score_completions` returns and `_get_per_token_logps_and_entropies` accepts.
FORWARD_KEYS = (
    "pixel_values",
    "image_grid_thw",
    "num_images",
    "pixel_attention_mask",
    "spatial_shapes",
    "num_tiles",
    "image_sizes",
    "token_type_ids",
    "mm_token_type_ids",
    "image_position_ids",
)


@contextmanager
def reference_from_memory(model: nn.Module):
    """While active, TRL builds the reference model as a copy of `model` as it is now, instead of reloading it from
    `model.config._name_or_path` (which fails for a model built in memory and is stale for one changed in memory)."""
    snapshot = copy.deepcopy(model)
    load_from_path = stock_module.create_model_from_path

    def create_model(model_id, **kwargs):
        if model_id == stock_module.get_config_model_id(model.config):
            return snapshot
        return load_from_path(model_id, **kwargs)

    with replaced_attribute(stock_module, "create_model_from_path", create_model):
        yield


class AdaptiveKLState(TrainerCallback, ExportableState):
    """The adaptive KL coefficient, saved in each checkpoint's `trainer_state.json` (`stateful_callbacks`).

    A callback only in order to use the trainer state's slot for exportable state; it reacts to no event.
    """

    def __init__(self, beta: float):
        self.beta = beta

    def state(self) -> dict:
        return {"args": {"beta": self.beta}, "attributes": {}}


class GRPOExtTrainer(GRPOTrainer):
    """Drop-in `GRPOTrainer` whose advantage and KL estimators are chosen in `GRPOExtConfig`."""

    _tag_names = ["trl", "grpo", "trl-grpo-ext"]
    _reward_overlap: RewardOverlap | None = None  # set for the duration of one _generate_and_score_completions
    _prompt_rounds: PromptRounds | None = None  # with a prompt stream: the training batches

    def __init__(self, model, reward_funcs=None, args: GRPOExtConfig | None = None, **kwargs):
        check_supported_versions()  # the hooks below rely on private names of these versions
        if args is None:
            name = model if isinstance(model, str) else stock_module.get_config_model_id(model.config)
            args = GRPOExtConfig(f"{(name or 'model').split('/')[-1]}-GRPO")
        if not isinstance(args, GRPOExtConfig):
            raise TypeError(
                f"args must be a GRPOExtConfig, got {type(args).__name__}. GRPOExtConfig accepts every GRPOConfig "
                "field: build it with the same arguments."
            )
        in_memory_reference = (
            args.beta != 0.0
            and isinstance(model, nn.Module)
            and not is_peft_model(model)
            and kwargs.get("peft_config") is None
        )
        with reference_from_memory(model) if in_memory_reference else nullcontext():
            super().__init__(model, reward_funcs, args=args, **kwargs)
        self._gathered_rewards_per_func: torch.Tensor | None = None
        self._extracted_answers: dict[str, list] | None = None  # log_extra columns of one eval batch
        self._control_batch = (-1, -1)
        self._verifier_rewards = [i for i, f in enumerate(self.reward_funcs) if hasattr(f, "verifier")]
        if args.eval_pass_at_k and not self._verifier_rewards:
            raise ValueError(
                "eval_pass_at_k needs a reward function built by trl_grpo_ext.verifiers.as_reward_function: its "
                "verifier decides which completions are correct. None of the reward functions is one."
            )
        self._kl_window = torch.zeros(2, device=self.accelerator.device)  # (sum of sequence KLs, sequences)
        if args.kl_target is not None:
            self.add_callback(AdaptiveKLState(self.beta))
        stream = build_prompt_stream(args, self.train_dataset, self.shuffle_dataset)
        if stream is not None:
            self.add_callback(stream)
            self._prompt_rounds = PromptRounds(
                stream, self.train_dataset, args, self.accelerator, self.reward_weights, self._tokenizer.pad_token_id,
                score=self._score_training_round,
                advantages=self._advantages,
                log_metric=lambda name, value: self._metrics["train"][name].append(value),
                log_advantages=lambda advantages, size: self._log_advantage_metrics(advantages, size, "train"),
                show_advantages=self._replace_table_advantages,
            )  # fmt: skip

    def train(self, *args, **kwargs):
        with known_deprecations_silenced():  # only while the trainer runs, not in the rest of the user's process
            return super().train(*args, **kwargs)

    def evaluate(self, *args, **kwargs):
        with known_deprecations_silenced():
            return super().evaluate(*args, **kwargs)

    @property
    def _prompt_stream(self) -> PromptStream | None:
        """The stream of the training prompts, with dynamic sampling, retirement or pass-rate sampling (replaced on
        resume)."""
        return None if self._prompt_rounds is None else self._prompt_rounds.stream

    def _load_callback_state(self) -> None:
        """On resume, continue from the checkpoint's adaptive beta rather than the initial one.

        Restored whatever `restore_callback_states_from_checkpoint` says: that flag is about user callbacks, while
        beta is training state like the optimizer's.
        """
        super()._load_callback_state()
        if self._prompt_rounds is not None:
            self._prompt_rounds.restore(self.callback_handler.callbacks, self.state.stateful_callbacks)
        if self.args.kl_target is None:
            return
        saved = self.state.stateful_callbacks.get(AdaptiveKLState.__name__)
        if not saved:
            logger.warning(
                "The checkpoint was saved without an adaptive KL coefficient (kl_target was not set): beta starts "
                "from its initial value %s.",
                self.beta,
            )
            # transformers saves only the stateful callbacks the loaded state lists: give this one its slot.
            self.state.stateful_callbacks[AdaptiveKLState.__name__] = self._adaptive_kl_state().state()
            return
        self.beta = float(saved["args"]["beta"])
        self._adaptive_kl_state().beta = self.beta

    def _adaptive_kl_state(self) -> AdaptiveKLState:
        # Looked up rather than kept: restoring callback states may replace the callback object.
        return next(cb for cb in self.callback_handler.callbacks if isinstance(cb, AdaptiveKLState))

    # --- rewards and advantages ---

    @contextmanager
    def _overlapping_rewards(self, inputs):
        """While active, `_generate` submits the verifier rewards; on exit, any that were not collected are joined."""
        if not self.args.overlap_rewards or not any(map(can_overlap, self.reward_funcs)):
            yield
            return
        self._reward_overlap = RewardOverlap(self.reward_funcs, inputs)
        try:
            yield
        finally:
            overlap, self._reward_overlap = self._reward_overlap, None
            overlap.close()

    def _generate(self, prompts):
        tool_counts = TOOL_STATS.snapshot()
        generated = super()._generate(prompts)
        if uses_python_tool(self.tools):  # the tool loop ran inside stock's _generate
            log_tool_step(self, TOOL_STATS.snapshot() - tool_counts, len(prompts))
            end_sessions(self)
        if self._reward_overlap is not None:  # stock decoded the completions: start verifying them now
            _, completion_ids, _, completions, _, extra_fields, _, _ = generated
            self._reward_overlap.submit(prompts, completions, completion_ids, extra_fields)
        return generated

    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
        reward_funcs = self.reward_funcs
        if self._reward_overlap is not None:  # stock calls a collector of each submitted batch in its place
            self.reward_funcs = self._reward_overlap.stand_ins()
        held_out = bool(self.args.eval_pass_at_k) and not self.model.training
        self._extracted_answers = {} if held_out else None
        try:
            rewards_per_func = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        finally:
            self.reward_funcs = reward_funcs
        if self.args.reward_control is not None and self.model.training:
            rewards_per_func = self._controlled_rewards(rewards_per_func)
        self._gathered_rewards_per_func = rewards_per_func
        if held_out:
            self._log_pass_at_k(rewards_per_func, completions)
        return rewards_per_func

    def _controlled_rewards(self, rewards_per_func: torch.Tensor) -> torch.Tensor:
        """The null-reward control (`reward_control`): the batch's rewards moved to other completions, the same way on
        every process; stock and the estimators see only these."""
        step = self.state.global_step
        index = self._control_batch[1] + 1 if self._control_batch[0] == step else 0
        self._control_batch = (step, index)  # (optimizer step, batch within it)
        generator = control_generator(self.args.seed, step, index)
        # What the policy really earned: the logged reward of a control is what it trained on
        true_rewards = combined_rewards(rewards_per_func, self.reward_weights)
        self._metrics["train"]["reward_control/true_reward"].append(torch.nanmean(true_rewards).item())
        return control_rewards(rewards_per_func, self.args.reward_control, generator)

    def _log_completion_extra(self, column: str, values: list):
        super()._log_completion_extra(column, values)
        if self._extracted_answers is not None:  # an eval batch: keep the verifiers' extracted answers for maj@k
            self._extracted_answers.setdefault(column, []).extend(values)

    def _log_pass_at_k(self, rewards_per_func: torch.Tensor, completions: list) -> None:
        """eval pass@k and maj@k, one value per prompt group: a completion is correct when every verifier reward
        gives it full marks (a missing reward is not a pass); maj@k votes over the first verifier's extracted answers,
        or a group's normalised completions where it extracted none (`trl_grpo_ext.evaluation.votes`)."""
        first = self.reward_funcs[self._verifier_rewards[0]]
        column = self._extracted_answers.get(first.__name__.removesuffix("_reward") + "_extracted")
        answers = gather_object([a or None for a in column] if column else [None] * len(completions))
        texts = gather_object([c if isinstance(c, str) else str(c[-1].get("content") or "") for c in completions])
        correct = (rewards_per_func[:, self._verifier_rewards] >= 1.0).all(dim=1).tolist()
        ks = self.args.eval_pass_at_k
        for name, values in grouped_figures(
            correct, texts, answers, self.num_generations_eval, ks, first.verifier
        ).items():
            self._metrics["eval"][name].extend(values)
        self._extracted_answers = None

    def _generate_and_score_completions(self, inputs):
        if self._prompt_rounds is not None and self.model.training:  # a prompt stream: its own prompts
            return self._prompt_rounds.batch()
        with self._overlapping_rewards(inputs):
            output = super()._generate_and_score_completions(inputs)
        mode = "train" if self.model.training else "eval"
        group_size = self.num_generations if mode == "train" else self.num_generations_eval
        if self.multi_objective_aggregation == "normalize_then_sum":  # stock's advantages (config allows only grpo)
            self._log_advantage_metrics(self.accelerator.gather(output["advantages"]), group_size, mode)
            return output

        rewards, penalty = self._task_rewards_and_penalty(output, mode)
        lengths = None
        if estimator_properties(self.args.advantage_estimator).needs_lengths:
            lengths = self.accelerator.gather(trained_token_mask(output).sum(dim=1))
        advantages = self._advantages(rewards if penalty is None else rewards - penalty, group_size, lengths)
        num_local = output["prompt_ids"].size(0)
        start = self.accelerator.process_index * num_local
        output["advantages"] = advantages[start : start + num_local]

        # The completions table holds stock's advantages for this batch: replace them with the ones trained on.
        self._replace_table_advantages(advantages.tolist())
        self._log_advantage_metrics(advantages, group_size, mode)
        return output

    def _score_training_round(self, inputs: list[dict]) -> Scored:
        """One generation round of `PromptRounds`: stock's generation and scoring of this process's inputs, with the
        reward hooks; its output, the rewards gathered from every process and the gathered KL penalty (or None)."""
        with self._overlapping_rewards(inputs):
            output = super()._generate_and_score_completions(inputs)
        _, penalty = self._task_rewards_and_penalty(output, "train")
        return output, self._gathered_rewards_per_func, penalty

    def log(self, logs: dict[str, float], start_time: float | None = None) -> None:
        if self._prompt_rounds is not None and self.model.training:  # current counts, not averages over the interval
            self._metrics["train"].update(self._prompt_rounds.counts())
        super().log(logs, start_time)

    def _task_rewards_and_penalty(self, output: dict, mode: str) -> tuple[torch.Tensor, torch.Tensor | None]:
        """The task rewards of the whole gathered batch (N,), and with the KL in the reward, the gathered KL penalty."""
        rewards = combined_rewards(self._gathered_rewards_per_func, self.reward_weights)
        if self.args.kl_placement != "reward" or self.beta == 0.0:
            return rewards, None
        penalty = self.beta * self.accelerator.gather(self._rollout_sequence_kl(output, mode))
        self._metrics[mode]["kl_penalty"].append(penalty.mean().item())
        self._metrics[mode]["reward_with_kl_penalty"].append(torch.nanmean(rewards - penalty).item())
        return rewards, penalty

    def _advantages(self, rewards: torch.Tensor, group_size: int, lengths: torch.Tensor | None) -> torch.Tensor:
        advantages = compute_advantages(
            rewards,
            group_size=group_size,
            estimator=self.args.advantage_estimator,
            epsilon=self.args.advantage_epsilon,
            lengths=lengths,
            unbiased_std=self.args.advantage_std == "unbiased",
            k=self.args.pass_at_k,
        )
        if self.args.advantage_clip is None:
            return advantages
        advantages, share = clip_advantages(advantages, self.args.advantage_clip, ~torch.isnan(rewards))
        self._metrics["train" if self.model.training else "eval"]["advantages/clipped_fraction"].append(share)
        return advantages

    def _replace_table_advantages(self, advantages: list[float]) -> None:
        for _ in range(min(len(advantages), len(self._logs["advantages"]))):
            self._logs["advantages"].pop()
        self._logs["advantages"].extend(advantages)

    def _log_advantage_metrics(self, advantages: torch.Tensor, group_size: int, mode: str) -> None:
        for name, value in advantage_metrics(advantages, group_size).items():
            self._metrics[mode][name].append(value)

    @torch.no_grad()
    def _rollout_sequence_kl(self, output: dict, mode: str) -> torch.Tensor:
        """Per-sequence sum of the per-token KL estimate, from the log-probs of the policy that sampled: (B,)."""
        policy_logps = output.get("old_per_token_logps")
        if policy_logps is None:  # stock skips them when they equal the loss-time log-probs: one extra forward here
            input_ids = torch.cat([output["prompt_ids"], output["completion_ids"]], dim=1)
            attention_mask = torch.cat([output["prompt_mask"], output["completion_mask"]], dim=1)
            batch_size = (
                self.args.per_device_train_batch_size if mode == "train" else self.args.per_device_eval_batch_size
            )
            with disable_gradient_checkpointing(self.model, self.args.gradient_checkpointing_kwargs):
                policy_logps, _, _ = self._get_per_token_logps_and_entropies(
                    self.model,
                    input_ids,
                    attention_mask,
                    output["completion_ids"].size(1),
                    batch_size=batch_size,
                    **{key: output[key] for key in FORWARD_KEYS if key in output},
                )
        kl = kl_divergence(policy_logps, output["ref_per_token_logps"], self.args.kl_estimator, self.args.kl_clamp)
        return (kl * trained_token_mask(output)).sum(dim=1)

    # --- KL term of the loss ---

    def _compute_loss(self, model, inputs):
        if self.beta == 0.0 or self.args.uses_stock_kl:
            return super()._compute_loss(model, inputs)

        captured = {}
        stock_forward = self._get_per_token_logps_and_entropies

        def forward_and_capture(*args, **kwargs):
            result = stock_forward(*args, **kwargs)
            captured["logps"] = result[0]
            return result

        beta, self.beta = self.beta, 0.0  # stock adds no KL term and skips its own KL metric
        self._get_per_token_logps_and_entropies = forward_and_capture
        try:
            loss = super()._compute_loss(model, inputs)
        finally:
            self.beta = beta
            del self._get_per_token_logps_and_entropies

        mode = "train" if self.model.training else "eval"
        per_token_logps = captured["logps"]
        mask = trained_token_mask(inputs)
        ref_logps = inputs["ref_per_token_logps"]
        ratio = self._importance_ratio(per_token_logps, inputs.get("old_per_token_logps"), mask)
        kl = kl_divergence(per_token_logps, ref_logps, self.args.kl_estimator, self.args.kl_clamp) * ratio
        if self.args.kl_placement == "loss":
            loss = loss + beta * self._aggregate_like_loss_type(kl, mask, inputs, mode)

        # `kl` keeps stock's definition (k3, ratio-weighted) so that runs with different estimators stay comparable.
        k3 = kl_divergence(per_token_logps.detach(), ref_logps, "k3") * ratio.detach()
        self._metrics[mode]["kl"].append(self._global_masked_mean(k3, mask))
        self._metrics[mode][f"kl/{self.args.kl_estimator}"].append(self._global_masked_mean(kl.detach(), mask))
        if self.args.kl_target is not None and mode == "train":
            self._update_adaptive_beta(k3, mask)
        return loss

    def _importance_ratio(
        self, logps: torch.Tensor, old_logps: torch.Tensor | None, mask: torch.Tensor
    ) -> torch.Tensor:
        """pi_theta / pi_old as stock weights its KL: per token, or per sequence (B, 1) at sequence level; 1 when off."""
        if not self.args.use_bias_correction_kl:
            return torch.ones_like(logps)
        log_ratio = logps - (logps.detach() if old_logps is None else old_logps)
        if self.importance_sampling_level == "sequence":
            log_ratio = ((log_ratio * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)).unsqueeze(-1)
        return torch.exp(log_ratio)

    def _aggregate_like_loss_type(self, per_token: torch.Tensor, mask: torch.Tensor, inputs: dict, mode: str):
        """Reduce a per-token term exactly as stock `_compute_loss` reduces its per-token loss for `loss_type`."""
        accumulation = self.current_gradient_accumulation_steps if mode == "train" else 1.0
        masked = per_token * mask
        if self.loss_type in ("grpo", "sapo"):
            return (masked.sum(-1) / mask.sum(-1).clamp(min=1.0)).mean() / accumulation
        if self.loss_type == "bnpo":
            return masked.sum() / mask.sum().clamp(min=1.0) / accumulation
        if self.loss_type == "dr_grpo":
            return masked.sum() / (per_token.size(0) * self.max_completion_length) / accumulation
        if self.loss_type in ("cispo", "dapo", "vespo"):
            normalizer = inputs["num_items_in_batch"].clamp(min=1.0) / self.accelerator.num_processes
            if mode == "train":
                normalizer = normalizer * self.current_gradient_accumulation_steps / self.args.steps_per_generation
            return masked.sum() / normalizer
        if self.loss_type == "luspo":
            return masked.sum(-1).mean() / accumulation
        raise ValueError(f"loss_type={self.loss_type!r} has no KL aggregation in GRPOExtTrainer.")

    def _global_masked_mean(self, values: torch.Tensor, mask: torch.Tensor) -> float:
        mask = mask.expand_as(values) if values.shape != mask.shape else mask
        totals = self.accelerator.reduce(torch.stack([(values * mask).sum(), mask.sum().float()]), reduction="sum")
        return (totals[0] / totals[1].clamp(min=1.0)).item()

    def _update_adaptive_beta(self, per_token_kl: torch.Tensor, mask: torch.Tensor) -> None:
        """Ziegler et al. (2019): beta *= 1 + clip(KL / target - 1, -0.2, 0.2) * n / horizon, once per optimizer step,
        with KL the mean per-sequence KL over the step's n completions (all processes)."""
        sequence_kl = (per_token_kl.detach() * mask).sum(-1)
        self._kl_window += torch.stack(
            [sequence_kl.sum(), torch.tensor(float(sequence_kl.numel()), device=mask.device)]
        )
        if not self.accelerator.sync_gradients:
            return
        total, count = self.accelerator.reduce(self._kl_window, reduction="sum").tolist()
        self._kl_window.zero_()
        error = total / max(count, 1.0) / self.args.kl_target - 1
        error = min(max(error, -ADAPTIVE_KL_ERROR_CLIP), ADAPTIVE_KL_ERROR_CLIP)
        self.beta = self.beta * (1 + error * count / self.args.kl_horizon)
        self._adaptive_kl_state().beta = self.beta
        self._metrics["train"]["beta"].append(self.beta)
