"""trl-grpo-ext: selectable advantage and KL estimators for TRL's GRPOTrainer, and verifiers as reward functions.

The public names are importable from here: the trainer and its config, the estimator registries, the datasets, the
tiny test model, and what a training script needs around the trainer (a progress bar, a clean end). The package's
folders: `trainer/` (the trainer, its config, the estimators and what runs around a step), `data/` (datasets and the
task a run trains on), `models/` (the tiny test model, GGUF checkpoints), `evaluation/`, `compare/`, `memory/`,
`tools/`, `verifiers/`, and the command line (`cli.py` and `commands/`).

`import trl_grpo_ext` stays light: a name loads its module (and so torch and trl) on first access, as every
package's public names do (`verifiers/lazy.py`).
"""

from typing import TYPE_CHECKING

from .verifiers.lazy import lazy_exports

if TYPE_CHECKING:
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

__version__ = "0.1.0"
__all__ = [
    "EstimatorProperties",
    "GRPOExtConfig",
    "GRPOExtTrainer",
    "RewardProgress",
    "__version__",
    "arithmetic_dataset",
    "arithmetic_format_warmup",
    "arithmetic_problems",
    "arithmetic_split",
    "as_chat",
    "build_tiny_model",
    "chat_arithmetic_problems",
    "chat_arithmetic_split",
    "code_dataset",
    "compute_advantages",
    "default_threads",
    "end_training",
    "get_advantage_estimator",
    "get_kl_estimator",
    "hub_prompt_dataset",
    "kl_divergence",
    "list_advantage_estimators",
    "list_kl_estimators",
    "register_advantage_estimator",
    "register_kl_estimator",
    "smollm2_path",
    "tiny_model_path",
    "use_portable_cpu_kernels",
]
__getattr__, __dir__ = lazy_exports(__name__, __file__)
