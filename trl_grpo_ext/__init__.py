"""trl-grpo-ext: selectable advantage and KL estimators for TRL's GRPOTrainer, and verifiers as reward functions.

`import trl_grpo_ext` stays light: the trainer classes (which import torch and trl) load on first access, as every
package's public names do (`verifiers/lazy.py`).
"""

from typing import TYPE_CHECKING

from .verifiers.lazy import lazy_exports

if TYPE_CHECKING:
    from .config import GRPOExtConfig
    from .trainer import GRPOExtTrainer

__version__ = "0.1.0"
__all__ = ["GRPOExtConfig", "GRPOExtTrainer", "__version__"]
__getattr__, __dir__ = lazy_exports(__name__, __file__)
