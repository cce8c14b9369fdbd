"""Memory estimate of RL fine-tuning setups (PPO and GRPO variants) from a model's config alone.

`model_dims` reads the shape of a model and lists its parameter tensors; `estimate` turns a shape and a
`TrainingSetup` into bytes per GPU for each component. Both are pure: no torch, no weights.
"""

from typing import TYPE_CHECKING

from trl_grpo_ext.verifiers.lazy import lazy_exports

if TYPE_CHECKING:
    from .estimate import (
        COMPONENTS,
        OPTIMIZERS,
        PRECISIONS,
        SETUPS,
        Estimate,
        TrainingSetup,
        activation_bytes,
        estimate,
        estimate_all,
        kv_cache_bytes,
        optimizer_state_bytes,
        trained_model,
    )
    from .model_dims import (
        PRESETS,
        ModelDims,
        count_parameters,
        dims_from_config,
        load_model_dims,
        lora_parameter_tensors,
        parameter_tensors,
    )

__all__ = [
    "COMPONENTS",
    "OPTIMIZERS",
    "PRECISIONS",
    "PRESETS",
    "SETUPS",
    "Estimate",
    "ModelDims",
    "TrainingSetup",
    "activation_bytes",
    "count_parameters",
    "dims_from_config",
    "estimate",
    "estimate_all",
    "kv_cache_bytes",
    "load_model_dims",
    "lora_parameter_tensors",
    "optimizer_state_bytes",
    "parameter_tensors",
    "trained_model",
]
__getattr__, __dir__ = lazy_exports(__name__, __file__)
