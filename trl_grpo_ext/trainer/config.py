"""`GRPOExtConfig`: TRL's `GRPOConfig` plus the choice of advantage and KL estimators.

With every new field at its default, the trainer computes exactly what stock `GRPOTrainer` computes.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field, fields

from trl import GRPOConfig

from ..verifiers.core.plugins import invalid_choice
from .advantages import (
    estimator_parameters,
    estimator_properties,
    list_advantage_estimators,
    validate_advantage_estimator,
)
from .field_docs import docstring_parameters
from .kl import validate_kl_estimator
from .prompt_stream import PROMPT_SAMPLINGS
from .reward_control import REWARD_CONTROLS

KL_PLACEMENTS = ("loss", "reward")
# Warnings of the checks point at the code that built the config: past the check, __post_init__ and __init__.
WARN_AT_CALLER = 4
STOCK_GRADIENT_CHECKPOINTING = next(f.default for f in fields(GRPOConfig) if f.name == "gradient_checkpointing")
# Caps a dynamic-sampling step at 8 stock generations: enough in expectation while at least 1 group in 8 carries
# signal (the expected rounds are 1 / that fraction); DAPO's verl recipes use 10.
DEFAULT_MAX_GENERATION_ROUNDS = 8
ADVANTAGE_STD_CHOICES = ("unbiased", "biased")
# Stock's `scale_rewards` options and the estimator that computes the same advantages.
SCALE_REWARDS_ESTIMATORS = {"group": "grpo", "batch": "batch_std", "none": "dr_grpo"}
# Estimators whose gradient is k2's: multiplying them by the importance ratio changes that gradient.
K2_GRADIENT_ESTIMATORS = ("k2", "k1+", "k3+", "abs+", "low_var_kl+")
# How the documentation groups the fields GRPOExtConfig adds (a key of the fields' metadata would reach argparse).
FIELD_SECTIONS = {
    "Advantage estimation": (
        "advantage_estimator",
        "advantage_epsilon",
        "advantage_std",
        "pass_at_k",
        "advantage_clip",
    ),
    "KL regularisation (when beta > 0)": ("kl_estimator", "kl_placement", "kl_clamp", "kl_target", "kl_horizon"),
    "Held-out evaluation": ("eval_pass_at_k",),
    "Rewards": ("overlap_rewards", "reward_control"),
    "Which groups are trained on": (
        "dynamic_sampling",
        "max_generation_rounds",
        "retire_solved_after",
        "prompt_sampling",
    ),
}


ACCELERATOR_CHECKS = (
    "is_torch_cuda_available",
    "is_torch_xpu_available",
    "is_torch_mps_available",
    "is_torch_npu_available",
    "is_torch_hpu_available",
    "is_torch_mlu_available",
    "is_torch_musa_available",
    "is_torch_neuroncore_available",
    "is_torch_xla_available",
)


def accelerator_available() -> bool:
    """Whether any device other than the CPU is usable (transformers' own availability checks)."""
    import transformers.utils as hf_utils

    return any(getattr(hf_utils, check, lambda: False)() for check in ACCELERATOR_CHECKS)


def bf16_supported() -> bool:
    """Whether TrainingArguments would accept bf16=True on this machine without `use_cpu`."""
    from transformers.utils import is_torch_bf16_gpu_available, is_torch_xla_available

    return is_torch_bf16_gpu_available() or is_torch_xla_available()


@dataclass
class GRPOExtConfig(GRPOConfig):
    r"""
    Configuration for [`GRPOExtTrainer`]: every [`trl.GRPOConfig`] field, plus the fields below (their text is each
    field's `help`, rendered by `trl_grpo_ext.trainer.config_docs`; the same table is in docs/config.md).

    > Parameters that differ from `GRPOConfig`:
    >
    > - `bf16`: left unset, `False` where stock's default `True` fails (no bf16 support and `use_cpu` not given);
    >   elsewhere stock's default, `True` (with `use_cpu=True`, bf16 autocast on the CPU, as stock).
    > - `use_cpu`: set to `True` on a machine with no accelerator, so that processes started by `accelerate launch`
    >   form a (gloo) process group instead of each training alone.
    > - `use_bias_correction_kl`: left unset, stock's `True`, except with an estimator whose gradient is k2's (`k2`
    >   and the `+` variants), where the ratio would spoil that gradient: `False`. Set explicitly, it is kept (with a
    >   warning for `True` and such an estimator).
    """

    # Stock's field and help; only the default differs (see above). Typed as written so that the parser keeps `None`.
    use_bias_correction_kl: bool | None = field(
        default=None,
        metadata={
            "help": "Multiply the KL term by the importance ratio (TRL's field). Unset: True (TRL's default), or False "
            "with a kl_estimator whose gradient is k2's (k2 and the '+' variants), which the ratio would make inexact."
        },
    )

    advantage_estimator: str = field(
        default="grpo",
        metadata={
            "help": "Registered advantage estimator: "
            + ", ".join(list_advantage_estimators())
            + ", or one registered with register_advantage_estimator (docs/estimators.md).",
        },
    )
    advantage_epsilon: float = field(
        default=1e-4,
        metadata={
            "help": "Added to the denominators of estimators that divide (TRL 1e-4, verl 1e-6, OpenRLHF 1e-9).",
        },
    )
    advantage_std: str = field(
        default="unbiased",
        metadata={
            "help": "Standard deviations of the estimators that divide by one: 'unbiased' (Bessel-corrected, as TRL) "
            "or 'biased'.",
        },
    )
    pass_at_k: int = field(
        default=1,
        metadata={"help": "The k of advantage_estimator='pass_at_k'."},
    )
    advantage_clip: float | None = field(
        default=None,
        metadata={
            "help": "Clamp every advantage to [-advantage_clip, advantage_clip] after the estimator (NeMo-RL, ROLL); "
            "logged as advantages/clipped_fraction, the share of scorable completions clipped. None: no clipping.",
        },
    )
    kl_estimator: str = field(
        default="k3",
        metadata={
            "help": "Registered KL estimator: k1, k2, k3 (TRL's), abs, low_var_kl, their '+' variants (value of the "
            "estimator, gradient of k2), or one registered with register_kl_estimator.",
        },
    )
    kl_placement: str = field(
        default="loss",
        metadata={
            "help": "'loss': beta * KL per token in the loss, as TRL; 'reward': beta * (sequence sum of the per-token "
            "KL at rollout time) subtracted from the rewards before the advantage, PPO style, and no KL term in the "
            "loss.",
        },
    )
    kl_clamp: float | None = field(
        default=None,
        metadata={
            "help": "Clamp the per-token KL value to [-kl_clamp, kl_clamp]. None: no clamp.",
        },
    )
    kl_target: float | None = field(
        default=None,
        metadata={
            "help": "Target per-sequence KL of an adaptive coefficient (Ziegler et al. 2019): once per optimizer step, "
            "beta *= 1 + clip(KL / kl_target - 1, -0.2, 0.2) * n / kl_horizon for n completions. None: beta stays "
            "fixed.",
        },
    )
    kl_horizon: int = field(
        default=10000,
        metadata={
            "help": "Horizon of the adaptive KL coefficient, in completions.",
        },
    )
    eval_pass_at_k: list[int] | None = field(
        default=None,
        metadata={
            "help": "k values (each between 1 and num_generations_eval): with an eval_dataset, evaluate() also logs "
            "eval_pass@k and eval_maj@k, unbiased estimators over the num_generations_eval completions of each "
            "prompt scored by the as_reward_function verifiers; usable as metric_for_best_model. None: stock's eval "
            "metrics only.",
        },
    )
    overlap_rewards: bool = field(
        default=True,
        metadata={
            "help": "Reward functions built by as_reward_function start verifying right after generation, on a "
            "background thread, while the reference and old-policy log-prob forwards run; their rewards are "
            "collected where stock computes rewards, bitwise the same. Other reward functions run as stock runs them.",
        },
    )
    reward_control: str | None = field(
        default=None,
        metadata={
            "help": "A null-reward control run: 'shuffled' permutes each training batch's rewards across the batch, "
            "'random' draws each from the batch's rewards with replacement (0/1 rewards: Bernoulli at the batch's "
            "pass rate), before advantages are computed. Same reward distribution, no information about which "
            "completion earned it: what such a run learns, any training would (docs/estimators.md#null-reward-"
            "controls). None: the true rewards.",
        },
    )
    dynamic_sampling: bool = field(
        default=False,
        metadata={
            "help": "DAPO's dynamic sampling: groups whose advantages are all zero (task rewards tied, compared "
            "exactly) are dropped and more prompts are generated until the batch holds only groups that carry signal.",
        },
    )
    max_generation_rounds: int = field(
        default=DEFAULT_MAX_GENERATION_ROUNDS,
        metadata={
            "help": "With dynamic_sampling, the most generation rounds per batch (each one stock generation); when "
            "reached, the batch is the informative groups found so far.",
        },
    )
    retire_solved_after: int | None = field(
        default=None,
        metadata={
            "help": "A prompt whose completions all scored 1.0 in each of its last N appearances is not sampled "
            "again; training ends cleanly when none is left. None: never retire.",
        },
    )

    prompt_sampling: str = field(
        default="uniform",
        metadata={
            "help": "'uniform': every epoch visits each prompt once, in a seeded order (stock's sampler). 'pass_rate': "
            "prompts drawn with weight p(1 - p), p the prompt's running pass rate with Laplace's prior (passed + 1) / "
            "(tried + 2), so solved and hopeless prompts are drawn less and unseen ones most (the learnability weight of "
            "Foster et al. 2025, arXiv 2502.12272; prime-rl's and ROLL's difficulty filters, as weights); the counts "
            "are saved in checkpoints.",
        },
    )

    def __post_init__(self):
        if self.activation_checkpointing is None and self.gradient_checkpointing == STOCK_GRADIENT_CHECKPOINTING:
            # TRL's default is set under the name transformers 5 deprecated, which warns in every process of every
            # run. Given under the new name, it trains the same; a value the user gave under the old name still warns.
            self.activation_checkpointing = self.gradient_checkpointing
        if self.bf16 is None and not self.fp16 and not self.use_cpu and not bf16_supported():
            # Only where stock's default (bf16=True) would fail, i.e. without use_cpu as given: fp32 instead. With
            # use_cpu given, stock's default works (bf16 autocast on the CPU) and is kept, so that the same arguments
            # train exactly as stock (decided before use_cpu is set below, which would otherwise hide the difference).
            self.bf16 = False
        if self.use_bias_correction_kl is None:
            self.use_bias_correction_kl = self.kl_estimator not in K2_GRADIENT_ESTIMATORS
        if not self.use_cpu and not accelerator_available():
            # Without this, `accelerate launch --multi_gpu` on a CPU-only machine starts processes that never join a
            # process group: each trains alone on its own data.
            self.use_cpu = True
        super().__post_init__()
        self._map_scale_rewards()
        self._validate_advantage_settings()
        self._validate_kl_settings()
        self._validate_sampling_settings()
        self._validate_eval_pass_at_k()

    @property
    def uses_prompt_stream(self) -> bool:
        """True when training prompts come from a `PromptStream` rather than stock's dataloader."""
        return self.dynamic_sampling or self.retire_solved_after is not None or self.prompt_sampling != "uniform"

    @property
    def uses_stock_kl(self) -> bool:
        """True when the loss's KL term is stock's k3, unmodified: the trainer then delegates it to TRL."""
        return (
            self.kl_estimator == "k3"
            and self.kl_placement == "loss"
            and self.kl_clamp is None
            and self.kl_target is None
        )

    def _map_scale_rewards(self) -> None:
        # A stock config that sets scale_rewards keeps its meaning: it selects the matching estimator.
        if self.scale_rewards not in SCALE_REWARDS_ESTIMATORS:
            return  # stock's own validation reports it
        if self.advantage_estimator == "grpo":
            self.advantage_estimator = SCALE_REWARDS_ESTIMATORS[self.scale_rewards]
        elif SCALE_REWARDS_ESTIMATORS[self.scale_rewards] not in ("grpo", self.advantage_estimator):
            raise ValueError(
                f"scale_rewards={self.scale_rewards!r} contradicts advantage_estimator={self.advantage_estimator!r}: "
                f"the estimator decides the scaling. Leave scale_rewards at 'group', or use advantage_estimator="
                f"{SCALE_REWARDS_ESTIMATORS[self.scale_rewards]!r} for stock's scale_rewards={self.scale_rewards!r}."
            )

    def _validate_advantage_settings(self) -> None:
        validate_advantage_estimator("advantage_estimator", self.advantage_estimator)
        if self.advantage_std not in ADVANTAGE_STD_CHOICES:
            raise ValueError(invalid_choice("advantage_std", self.advantage_std, ADVANTAGE_STD_CHOICES))
        if self.advantage_epsilon < 0:
            raise ValueError(f"advantage_epsilon={self.advantage_epsilon} must be >= 0.")
        declared = estimator_parameters(self.advantage_estimator)
        ignored = [
            name
            for name, is_set, param in [
                ("advantage_std", self.advantage_std != "unbiased", "unbiased_std"),
                ("pass_at_k", self.pass_at_k != 1, "k"),
            ]
            if is_set and param not in declared
        ]
        if ignored:
            raise ValueError(
                f"{', '.join(ignored)} would be ignored: advantage_estimator={self.advantage_estimator!r} does not use it. "
                "Leave it at its default or pick an estimator that does."
            )
        if self.advantage_estimator == "pass_at_k" and not 1 <= self.pass_at_k <= self.num_generations:
            raise ValueError(
                f"pass_at_k={self.pass_at_k} must be between 1 and num_generations={self.num_generations}."
            )
        if self.multi_objective_aggregation == "normalize_then_sum" and self.advantage_estimator != "grpo":
            raise ValueError(
                f"multi_objective_aggregation='normalize_then_sum' computes its own advantages and would ignore "
                f"advantage_estimator={self.advantage_estimator!r}. Use 'sum_then_normalize' with this estimator."
            )

    def _validate_kl_settings(self) -> None:
        validate_kl_estimator("kl_estimator", self.kl_estimator)
        if self.kl_placement not in KL_PLACEMENTS:
            raise ValueError(invalid_choice("kl_placement", self.kl_placement, KL_PLACEMENTS))
        if self.kl_clamp is not None and self.kl_clamp <= 0:
            raise ValueError(f"kl_clamp={self.kl_clamp} must be positive, or None for no clamp.")
        if self.kl_target is not None and (self.kl_target <= 0 or self.kl_horizon <= 0):
            raise ValueError(f"kl_target={self.kl_target} and kl_horizon={self.kl_horizon} must both be positive.")
        if self.beta == 0.0:
            changed = [
                f"{name}={value!r}"
                for name, value, default in [
                    ("kl_estimator", self.kl_estimator, "k3"),
                    ("kl_placement", self.kl_placement, "loss"),
                    ("kl_clamp", self.kl_clamp, None),
                    ("kl_target", self.kl_target, None),
                ]
                if value != default
            ]
            if changed:
                raise ValueError(
                    f"{', '.join(changed)} has no effect with beta=0.0 (no KL term). Set beta > 0 (e.g. 0.04) to "
                    "use a KL penalty, or leave the KL settings at their defaults."
                )
            return
        if self.kl_placement == "reward":
            self._validate_kl_in_reward()
        elif self.kl_estimator in K2_GRADIENT_ESTIMATORS and self.use_bias_correction_kl:
            warnings.warn(
                f"kl_estimator={self.kl_estimator!r} with use_bias_correction_kl=True multiplies the KL by the "
                "importance ratio, which adds KL * grad log pi to its gradient: it is then no longer the exact "
                "reverse-KL gradient. Set use_bias_correction_kl=False to keep k2's gradient.",
                UserWarning,
                stacklevel=WARN_AT_CALLER,
            )

    def _validate_sampling_settings(self) -> None:
        if self.reward_control is not None and self.reward_control not in REWARD_CONTROLS:
            raise ValueError(invalid_choice("reward_control", self.reward_control, (*REWARD_CONTROLS, "None")))
        if self.max_generation_rounds < 1:
            raise ValueError(f"max_generation_rounds={self.max_generation_rounds} must be at least 1.")
        if not self.dynamic_sampling and self.max_generation_rounds != DEFAULT_MAX_GENERATION_ROUNDS:
            raise ValueError(
                f"max_generation_rounds={self.max_generation_rounds} has no effect without dynamic_sampling=True: "
                "set dynamic_sampling=True or leave max_generation_rounds at its default."
            )
        if self.retire_solved_after is not None and self.retire_solved_after < 1:
            raise ValueError(f"retire_solved_after={self.retire_solved_after} must be at least 1, or None (off).")
        if self.prompt_sampling not in PROMPT_SAMPLINGS:
            raise ValueError(invalid_choice("prompt_sampling", self.prompt_sampling, tuple(PROMPT_SAMPLINGS)))
        if self.dynamic_sampling and not estimator_properties(self.advantage_estimator).group_baseline:
            raise ValueError(
                f"dynamic_sampling drops groups whose advantages are all zero, but advantage_estimator="
                f"{self.advantage_estimator!r} has no group baseline: a group whose rewards tie still has advantages, "
                "so nothing would be dropped. Turn dynamic_sampling off or pick an estimator with a group baseline."
            )
        if self.uses_prompt_stream and self.multi_objective_aggregation == "normalize_then_sum":
            raise ValueError(
                "dynamic_sampling, retire_solved_after and prompt_sampling='pass_rate' need "
                "multi_objective_aggregation='sum_then_normalize': 'normalize_then_sum' computes its advantages "
                "inside TRL, batch by batch."
            )
        if self.advantage_clip is not None and not self.advantage_clip > 0:
            raise ValueError(f"advantage_clip={self.advantage_clip} must be positive, or None for no clipping.")
        if self.advantage_clip is not None and self.multi_objective_aggregation == "normalize_then_sum":
            raise ValueError(
                "advantage_clip needs multi_objective_aggregation='sum_then_normalize': 'normalize_then_sum' "
                "computes its advantages inside TRL, where they cannot be clipped."
            )

    def _validate_kl_in_reward(self) -> None:
        if self.multi_objective_aggregation == "normalize_then_sum":
            raise ValueError(
                "kl_placement='reward' needs multi_objective_aggregation='sum_then_normalize': 'normalize_then_sum' "
                "computes its advantages inside TRL, where the KL penalty cannot be added."
            )
        if self.kl_estimator != "k1":
            warnings.warn(
                f"kl_placement='reward' with kl_estimator={self.kl_estimator!r}: only k1 is an unbiased estimate of "
                "the sequence KL in the reward. Use kl_estimator='k1' unless you want this bias.",
                UserWarning,
                stacklevel=WARN_AT_CALLER,
            )
        properties = estimator_properties(self.advantage_estimator)
        if properties.group_baseline and not properties.unscaled:
            unscaled = sorted(name for name in list_advantage_estimators() if estimator_properties(name).unscaled)
            warnings.warn(
                f"kl_placement='reward' with advantage_estimator={self.advantage_estimator!r}: in groups whose task "
                "rewards tie, the scale comes from the KL penalty alone, so KL noise becomes a full-strength advantage. "
                f"Prefer an unscaled estimator ({', '.join(unscaled)}).",
                UserWarning,
                stacklevel=WARN_AT_CALLER,
            )

    def _validate_eval_pass_at_k(self) -> None:
        if self.eval_pass_at_k is None:
            return
        if isinstance(self.eval_pass_at_k, int):
            self.eval_pass_at_k = [self.eval_pass_at_k]
        group = self.num_generations_eval or self.num_generations
        bad = [k for k in self.eval_pass_at_k if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= group]
        if not self.eval_pass_at_k or bad:
            raise ValueError(
                f"eval_pass_at_k={self.eval_pass_at_k!r}: each k must be an integer between 1 and num_generations_eval "
                f"(the completions per prompt in evaluation: {group}). Raise num_generations_eval or lower k."
            )
        self.eval_pass_at_k = sorted(set(self.eval_pass_at_k))


GRPOExtConfig.__doc__ += docstring_parameters(GRPOExtConfig, GRPOConfig, FIELD_SECTIONS)
