from .data.chat_arithmetic import as_chat, chat_arithmetic_problems, chat_arithmetic_split
from .data.datasets import (
    arithmetic_dataset,
    arithmetic_format_warmup,
    arithmetic_problems,
    arithmetic_split,
    code_dataset,
    hub_prompt_dataset,
)
from .models.gguf_checkpoint import smollm2_path
from .models.tiny_model import build_tiny_model, tiny_model_path
from .trainer.advantages import (
    EstimatorProperties,
    compute_advantages,
    get_advantage_estimator,
    list_advantage_estimators,
    register_advantage_estimator,
)
from .trainer.config import GRPOExtConfig
from .trainer.kl import get_kl_estimator, kl_divergence, list_kl_estimators, register_kl_estimator
from .trainer.launch import default_threads, end_training, use_portable_cpu_kernels
from .trainer.progress import RewardProgress
from .trainer.trainer import GRPOExtTrainer

__version__: str
