"""Bytes held per GPU by each component of an RL fine-tuning step, as pure functions of the model shape and setup.

Conventions (the sources each formula follows are named where it is used):
- precision "fp32": weights, gradients and AdamW moments in fp32 (4 + 4 + 8 bytes per trained parameter). AMP
  autocast over fp32 weights (`bf16=True` on an fp32 model) holds the same states.
- precision "bf16": the model is loaded in bf16 and trained as is, as TRL does by default with `dtype="auto"` on a
  bf16 checkpoint: torch's AdamW keeps its moments in the parameter's dtype (2 + 2 + 4 bytes).
- precision "mixed": DeepSpeed-style mixed precision: bf16 weights and gradients, fp32 master weights and moments
  (2 + 2 + 12 bytes; Rajbhandari et al. 2020, ZeRO, section 3.1).
- LoRA adapters are fp32 (PEFT's `autocast_adapter_dtype=True`) except with "mixed", and with "bf16" at ZeRO-3 where
  TRL turns the upcast off; frozen weights are held in the compute dtype (fp32 for "fp32", bf16 otherwise).
- ZeRO (Rajbhandari et al. 2020): stage 1 shards optimizer states over the GPUs, stage 2 also gradients, stage 3
  also the weights. Frozen models (reference, reward) are sharded at stage 3 only: TRL's `prepare_deepspeed` drops
  them to stage 0 otherwise. Activations and the KV cache are per GPU and never sharded.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .model_dims import ModelDims, count_parameters, lora_parameter_tensors, parameter_tensors, resolve_lora_targets

PRECISIONS = ("fp32", "bf16", "mixed")
OPTIMIZERS = ("adamw", "adamw_8bit")
SETUPS = ("ppo", "grpo_reward_model", "grpo_verifiers", "grpo_verifiers_beta0")
COMPONENTS = (
    "weights",
    "gradients",
    "optimizer_states",
    "reference_model",
    "reward_model",
    "critic",
    "activations",
    "kv_cache",
    "zero3_generation_gather",
)
# bitsandbytes' 8-bit Adam: one uint8 per moment, an fp32 absmax per 256-element block and moment, and fp32 moments
# for tensors under min_8bit_size=4096 elements (bitsandbytes.optim.optimizer.Optimizer8bit).
BNB_BLOCK = 256
BNB_MIN_8BIT_SIZE = 4096


@dataclass(frozen=True)
class TrainingSetup:
    """A training run's memory-relevant settings. `batch_size` is prompts per GPU per forward pass: each GPU
    generates and trains on batch_size * group_size sequences (TRL: per_device_train_batch_size = that product)."""

    precision: str = "bf16"
    optimizer: str = "adamw"
    lora_rank: int = 0  # 0: full fine-tuning
    lora_targets: tuple[str, ...] = ("all-linear",)
    zero_stage: int = 0
    num_gpus: int = 1
    group_size: int = 8
    prompt_length: int = 512
    completion_length: int = 1024
    batch_size: int = 1
    gradient_checkpointing: bool = True
    ds3_gather_for_generation: bool = True  # TRL's default: gather the whole policy to generate under ZeRO-3
    # PPO: TRL's PPOTrainer ran policy and value model in one forward/backward (both activations alive at once);
    # verl and OpenRLHF update them one after the other (the larger of the two is alive).
    ppo_joint_update: bool = True

    def __post_init__(self):
        for name, value, choices in (
            ("precision", self.precision, PRECISIONS),
            ("optimizer", self.optimizer, OPTIMIZERS),
            ("zero_stage", self.zero_stage, (0, 1, 2, 3)),
        ):
            if value not in choices:
                raise ValueError(f"{name}={value!r} is not valid; choose one of {', '.join(map(str, choices))}.")
        for name in ("num_gpus", "group_size", "batch_size", "prompt_length", "completion_length"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name}={getattr(self, name)!r} is not valid; it must be a positive integer.")
        if self.lora_rank < 0:
            raise ValueError(f"lora_rank={self.lora_rank!r} is not valid; use 0 for full fine-tuning or a rank >= 1.")
        resolve_lora_targets(self.lora_targets)

    @property
    def num_sequences(self) -> int:
        return self.batch_size * self.group_size

    @property
    def compute_bytes(self) -> int:
        """Bytes per element of frozen weights, activations and the KV cache."""
        return 4 if self.precision == "fp32" else 2


def trainable_bytes(setup: TrainingSetup, adapter: bool) -> int:
    """Bytes per element of a trained parameter (and of its gradient)."""
    if setup.precision == "fp32":
        return 4
    if adapter and setup.precision == "bf16" and setup.zero_stage < 3:
        return 4  # PEFT upcasts adapters to fp32
    return 2


def optimizer_state_bytes(tensors: list[int], setup: TrainingSetup, param_bytes: int) -> float:
    """AdamW keeps two moments per trained element, plus an fp32 master copy under "mixed".

    adamw: moments in fp32 under "mixed", else in the parameter's dtype (torch.optim.AdamW).
    adamw_8bit: 2 bytes + 2 fp32 absmax per 256-element block for tensors of >= 4096 elements, else 8 bytes.
    """
    master = 4 * sum(tensors) if setup.precision == "mixed" else 0
    if setup.optimizer == "adamw":
        moment = 4 if setup.precision == "mixed" else param_bytes
        return master + 2 * moment * sum(tensors)
    moments = 0
    for n in tensors:
        moments += 2 * n + 2 * 4 * math.ceil(n / BNB_BLOCK) if n >= BNB_MIN_8BIT_SIZE else 8 * n
    return master + moments


@dataclass(frozen=True)
class TrainedModel:
    """Bytes of one trained model (policy or critic), before ZeRO sharding."""

    frozen_weights: float  # LoRA's frozen base
    trained_weights: float
    gradients: float
    optimizer_states: float


def trained_model(dims: ModelDims, setup: TrainingSetup, head: str = "lm") -> TrainedModel:
    """Full fine-tuning trains every tensor; LoRA freezes the base and trains the adapters (and a critic's head)."""
    tensors = parameter_tensors(dims, head)
    if setup.lora_rank == 0:
        trained, frozen, param_bytes = tensors, [], trainable_bytes(setup, adapter=False)
    else:
        trained = lora_parameter_tensors(dims, setup.lora_rank, setup.lora_targets)
        frozen, param_bytes = tensors, trainable_bytes(setup, adapter=True)
        if head == "score":  # the value head is new, so it is trained too (PEFT modules_to_save)
            trained, frozen = trained + [dims.hidden_size], tensors[:-1]
    return TrainedModel(
        frozen_weights=sum(frozen) * setup.compute_bytes,
        trained_weights=sum(trained) * param_bytes,
        gradients=sum(trained) * param_bytes,
        optimizer_states=optimizer_state_bytes(trained, setup, param_bytes),
    )


def sharded(model: TrainedModel, setup: TrainingSetup) -> TrainedModel:
    """Per-GPU share of a trained model under ZeRO stage 1/2/3."""
    n, stage = setup.num_gpus, setup.zero_stage
    return TrainedModel(
        frozen_weights=model.frozen_weights / (n if stage >= 3 else 1),
        trained_weights=model.trained_weights / (n if stage >= 3 else 1),
        gradients=model.gradients / (n if stage >= 2 else 1),
        optimizer_states=model.optimizer_states / (n if stage >= 1 else 1),
    )


def frozen_model_bytes(dims: ModelDims, setup: TrainingSetup, head: str) -> float:
    """A model only run forward (reference, reward model): its weights in the compute dtype, sharded at ZeRO-3."""
    shards = setup.num_gpus if setup.zero_stage == 3 else 1
    return count_parameters(dims, head) * setup.compute_bytes / shards


def layer_activation_bytes(dims: ModelDims, tokens: int, act_bytes: int) -> int:
    """Tensors one decoder layer saves for backward, counted the way Korthikanti et al. 2022 (section 4.1) count
    a GPT layer, adapted to this architecture: SDPA/flash attention (no s^2 scores), no dropout, SwiGLU, GQA, and
    HF's RMSNorm, which saves an fp32 copy of its input and its bf16 output. Per token, with e = act_bytes:
      2 RMSNorms: 2 (4 + e) h;  attention: e (3 h + 2 kv_dim) (qkv input, rotated q, k, v, attention output);
      MLP: e (h + 4 I) (input, gate, up, silu(gate), gate*up).
    """
    h, e = dims.hidden_size, act_bytes
    return tokens * (2 * (4 + e) * h + e * (3 * h + 2 * dims.kv_dim) + e * (h + 4 * dims.intermediate_size))


def activation_bytes(dims: ModelDims, setup: TrainingSetup, logits: bool = True) -> int:
    """Activations saved for one training forward/backward of batch_size * group_size sequences.

    Without checkpointing every layer's tensors are alive at the start of backward. With it (TRL's default) only
    each layer's input survives (e h per token and layer) and one layer is recomputed at a time (Korthikanti et
    al. 2022, section 5). Head: TRL keeps completion-token logits (sequences x completion_length x vocab) for the
    log-softmax backward; a critic (logits=False) has a scalar head instead.
    """
    tokens = setup.num_sequences * (setup.prompt_length + setup.completion_length)
    e = setup.compute_bytes
    per_layer = layer_activation_bytes(dims, tokens, e)
    if setup.gradient_checkpointing:
        layers = dims.num_layers * tokens * dims.hidden_size * e + per_layer
    else:
        layers = dims.num_layers * per_layer
    # The final RMSNorm saves an fp32 input and its normalised output over every token; the LM head saves its
    # input (a copy of the kept positions) and the log-softmax its logits, for completion tokens only.
    final_norm = tokens * dims.hidden_size * (4 + e)
    kept = setup.num_sequences * setup.completion_length
    head = kept * (dims.hidden_size + dims.vocab_size) * e if logits else 0
    return layers + final_norm + head


def kv_cache_bytes(dims: ModelDims, setup: TrainingSetup) -> int:
    """Generation KV cache at full length: layers x 2 (K, V) x kv_heads x head_dim x sequences x tokens x bytes."""
    tokens = setup.prompt_length + setup.completion_length
    return dims.num_layers * 2 * dims.kv_dim * setup.num_sequences * tokens * setup.compute_bytes


@dataclass
class Estimate:
    """Bytes per GPU of each component (COMPONENTS) for one setup, and the two phases of a step."""

    setup_name: str
    components: dict[str, float] = field(default_factory=dict)
    training_phase: float = 0.0  # resident state + gradients + activations
    generation_phase: float = 0.0  # resident state + KV cache (+ gathered ZeRO-3 weights)

    @property
    def peak(self) -> float:
        return max(self.training_phase, self.generation_phase)


def estimate(
    setup_name: str,
    policy: ModelDims,
    setup: TrainingSetup,
    reward: ModelDims | None = None,
    critic: ModelDims | None = None,
) -> Estimate:
    """One of SETUPS. What each holds besides the trained policy:
    ppo: critic (trained value model: backbone + scalar head), reference, reward model;
    grpo_reward_model: reference (beta > 0), reward model;  grpo_verifiers: reference (beta > 0);
    grpo_verifiers_beta0: nothing. With LoRA the reference is the policy with its adapter disabled: no copy.
    PPO trains on as many sequences as GRPO (batch_size * group_size), so the comparison holds throughput fixed.
    """
    if setup_name not in SETUPS:
        raise ValueError(f"setup={setup_name!r} is not valid; choose one of {', '.join(SETUPS)}.")
    reward, critic = reward or policy, critic or policy
    pol = sharded(trained_model(policy, setup), setup)
    needs_reference = setup_name != "grpo_verifiers_beta0" and setup.lora_rank == 0
    c = dict.fromkeys(COMPONENTS, 0.0)
    c["weights"] = pol.frozen_weights + pol.trained_weights
    c["gradients"], c["optimizer_states"] = pol.gradients, pol.optimizer_states
    c["reference_model"] = frozen_model_bytes(policy, setup, "lm") if needs_reference else 0.0
    if setup_name in ("ppo", "grpo_reward_model"):
        c["reward_model"] = frozen_model_bytes(reward, setup, "score")
    c["activations"] = activation_bytes(policy, setup)
    critic_gradients = 0.0
    if setup_name == "ppo":
        crit = sharded(trained_model(critic, setup, head="score"), setup)
        c["critic"] = crit.frozen_weights + crit.trained_weights + crit.gradients + crit.optimizer_states
        critic_gradients = crit.gradients
        critic_activations = activation_bytes(critic, setup, logits=False)
        if setup.ppo_joint_update:
            c["activations"] += critic_activations
        else:
            c["activations"] = max(c["activations"], critic_activations)
    c["kv_cache"] = kv_cache_bytes(policy, setup)
    if setup.zero_stage == 3 and setup.ds3_gather_for_generation:
        full = trained_model(policy, setup)
        c["zero3_generation_gather"] = (full.frozen_weights + full.trained_weights) - c["weights"]
    resident = sum(c[k] for k in ("weights", "optimizer_states", "reference_model", "reward_model", "critic"))
    resident -= critic_gradients  # gradients are freed (set to None) between steps, so not held while generating
    return Estimate(
        setup_name=setup_name,
        components=c,
        training_phase=resident + critic_gradients + c["gradients"] + c["activations"],
        generation_phase=resident + c["kv_cache"] + c["zero3_generation_gather"],
    )


def estimate_all(policy: ModelDims, setup: TrainingSetup, reward=None, critic=None) -> dict[str, Estimate]:
    return {name: estimate(name, policy, setup, reward, critic) for name in SETUPS}
