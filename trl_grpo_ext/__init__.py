"""trl-grpo-ext: selectable advantage and KL estimators for TRL's GRPOTrainer, and verifiers as reward functions.

`import trl_grpo_ext` stays light: the trainer classes (which import torch and trl) load on first access.
"""

from typing import TYPE_CHECKING

__version__ = "0.1.0"
__all__ = ["GRPOExtConfig", "GRPOExtTrainer", "__version__"]

if TYPE_CHECKING:
    from .config import GRPOExtConfig
    from .trainer import GRPOExtTrainer


def __getattr__(name: str):
    if name == "GRPOExtConfig":
        from .config import GRPOExtConfig

        return GRPOExtConfig
    if name == "GRPOExtTrainer":
        from .trainer import GRPOExtTrainer

        return GRPOExtTrainer
    raise AttributeError(f"module 'trl_grpo_ext' has no attribute {name!r}")
