"""The shape of a decoder-only model, read from its transformers config (never its weights), and its exact
parameter inventory: one entry per tensor, so per-tensor rules (8-bit optimizer thresholds) apply exactly.

Supported: the Llama family of decoders (Llama, Mistral, Qwen2/Qwen2.5, Qwen3), whose layers are
q/k/v/o projections, a SwiGLU MLP (gate/up/down) and two RMSNorms. Mixture-of-experts and fused-projection models
are refused rather than miscounted.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

SUPPORTED_MODEL_TYPES = ("llama", "mistral", "qwen2", "qwen3")
LINEAR_MODULES = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


@dataclass(frozen=True)
class ModelDims:
    """What the estimate needs to know about a model. `head_dim` is per attention head."""

    hidden_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    tie_embeddings: bool
    attention_bias: tuple[bool, bool, bool, bool] = (False, False, False, False)  # q, k, v, o
    mlp_bias: bool = False
    qk_norm: bool = False  # Qwen3 normalises q and k per head
    name: str = ""

    @property
    def kv_dim(self) -> int:
        return self.num_kv_heads * self.head_dim


# Typed in from the public config.json of each model on the Hugging Face Hub (Qwen/Qwen2.5-0.5B, Qwen/Qwen2.5-7B,
# Qwen/Qwen2.5-32B), so the README table can be reproduced offline. Qwen2.5 puts a bias on q, k and v only.
_QWEN2_BIAS = (True, True, True, False)
PRESETS: dict[str, ModelDims] = {
    "qwen2.5-0.5b": ModelDims(896, 24, 14, 2, 64, 4864, 151936, True, _QWEN2_BIAS, name="Qwen2.5-0.5B"),
    "qwen2.5-7b": ModelDims(3584, 28, 28, 4, 128, 18944, 152064, False, _QWEN2_BIAS, name="Qwen2.5-7B"),
    "qwen2.5-32b": ModelDims(5120, 64, 40, 8, 128, 27648, 152064, False, _QWEN2_BIAS, name="Qwen2.5-32B"),
}


def dims_from_config(config, name: str = "") -> ModelDims:
    """Read a `transformers.PretrainedConfig` (or a config.json dict) of a supported decoder."""
    get = config.get if isinstance(config, dict) else lambda key, default=None: getattr(config, key, default)
    model_type = get("model_type")
    if model_type not in SUPPORTED_MODEL_TYPES:
        raise ValueError(
            f"model_type={model_type!r} is not supported by the memory estimate; supported: "
            f"{', '.join(SUPPORTED_MODEL_TYPES)} (or use --preset)."
        )
    hidden, heads = get("hidden_size"), get("num_attention_heads")
    if model_type == "qwen2":
        bias = _QWEN2_BIAS
    else:
        bias = (bool(get("attention_bias", False)),) * 4
    return ModelDims(
        hidden_size=hidden,
        num_layers=get("num_hidden_layers"),
        num_heads=heads,
        num_kv_heads=get("num_key_value_heads") or heads,
        head_dim=get("head_dim") or hidden // heads,
        intermediate_size=get("intermediate_size"),
        vocab_size=get("vocab_size"),
        tie_embeddings=bool(get("tie_word_embeddings", False)),
        attention_bias=bias,
        mlp_bias=bool(get("mlp_bias", False)),
        qk_norm=model_type == "qwen3",
        name=name or get("_name_or_path", "") or "",
    )


def load_model_dims(source) -> ModelDims:
    """`source`: a preset name, a folder holding config.json, a config.json file, a `PretrainedConfig`, or a Hub
    model name (read with `AutoConfig`; only the config is fetched, and nothing when HF_HUB_OFFLINE=1)."""
    if isinstance(source, ModelDims):
        return source
    if not isinstance(source, (str, os.PathLike)):
        return dims_from_config(source)
    text = str(source)
    if text.lower() in PRESETS:
        return PRESETS[text.lower()]
    path = Path(text)
    if path.is_file():
        return dims_from_config(json.loads(path.read_text()), name=path.parent.name)
    from transformers import AutoConfig

    offline = path.is_dir() or os.environ.get("HF_HUB_OFFLINE", "0") not in ("0", "", "false")
    try:
        config = AutoConfig.from_pretrained(text, local_files_only=offline)
    except (OSError, ValueError) as error:
        raise ValueError(
            f"model={text!r}: could not read its config ({error.__class__.__name__}: {error}). Pass a local folder "
            f"or config.json, a reachable Hub name, or one of the presets: {', '.join(PRESETS)}."
        ) from error
    return dims_from_config(config, name=text)


def linear_shapes(dims: ModelDims) -> dict[str, tuple[int, int, bool]]:
    """Per-layer linear modules: name -> (in_features, out_features, has_bias)."""
    h, q_dim = dims.hidden_size, dims.num_heads * dims.head_dim
    q_bias, k_bias, v_bias, o_bias = dims.attention_bias
    return {
        "q_proj": (h, q_dim, q_bias),
        "k_proj": (h, dims.kv_dim, k_bias),
        "v_proj": (h, dims.kv_dim, v_bias),
        "o_proj": (q_dim, h, o_bias),
        "gate_proj": (h, dims.intermediate_size, dims.mlp_bias),
        "up_proj": (h, dims.intermediate_size, dims.mlp_bias),
        "down_proj": (dims.intermediate_size, h, dims.mlp_bias),
    }


def parameter_tensors(dims: ModelDims, head: str = "lm") -> list[int]:
    """Element count of every parameter tensor, as `model.parameters()` yields them (tied weights once).

    head="lm": a causal LM (`...ForCausalLM`): embedding, layers, final norm, and an lm_head unless tied.
    head="score": a sequence classifier with one label (`...ForSequenceClassification`, TRL's reward and value
    models): the same backbone, no lm_head, and a bias-free hidden_size x 1 score head.
    """
    if head not in ("lm", "score"):
        raise ValueError(f"head={head!r} is not valid; choose 'lm' or 'score'.")
    h = dims.hidden_size
    layer = []
    for in_features, out_features, has_bias in linear_shapes(dims).values():
        layer.append(in_features * out_features)
        if has_bias:
            layer.append(out_features)
    layer += [h, h]  # input_layernorm, post_attention_layernorm
    if dims.qk_norm:
        layer += [dims.head_dim, dims.head_dim]
    tensors = [dims.vocab_size * h] + layer * dims.num_layers + [h]  # embed_tokens, layers, final norm
    if head == "score":
        tensors.append(h)
    elif not dims.tie_embeddings:
        tensors.append(dims.vocab_size * h)
    return tensors


def count_parameters(dims: ModelDims, head: str = "lm") -> int:
    return sum(parameter_tensors(dims, head))


def resolve_lora_targets(targets) -> tuple[str, ...]:
    """'all-linear' (PEFT's spelling) or module names from LINEAR_MODULES."""
    names = [targets] if isinstance(targets, str) else list(targets)
    if names == ["all-linear"]:
        return LINEAR_MODULES
    unknown = [name for name in names if name not in LINEAR_MODULES]
    if unknown or not names:
        raise ValueError(
            f"lora_targets={unknown or names!r} is not valid; choose 'all-linear' or any of "
            f"{', '.join(LINEAR_MODULES)}."
        )
    return tuple(dict.fromkeys(names))


def lora_parameter_tensors(dims: ModelDims, rank: int, targets) -> list[int]:
    """LoRA adds A (rank x in) and B (out x rank) to each targeted linear of each layer (Hu et al. 2021)."""
    shapes = linear_shapes(dims)
    per_layer = []
    for name in resolve_lora_targets(targets):
        in_features, out_features, _ = shapes[name]
        per_layer += [rank * in_features, out_features * rank]
    return per_layer * dims.num_layers
