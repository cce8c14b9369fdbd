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
