"""trl-grpo-ext: selectable advantage and KL estimators for TRL's GRPOTrainer, and verifiers as reward functions.

The public names are importable from here: the trainer and its config, the estimator registries, the datasets, the
tiny test model, and what a training script needs around the trainer (a progress bar, a clean end). The package's
folders: `trainer/` (the trainer, its config, the estimators and what runs around a step), `data/` (datasets and the
task a run trains on), `models/` (the tiny test model, GGUF checkpoints), `evaluation/`, `compare/`, `memory/`,
`tools/`, `verifiers/`, and the command line (`cli.py` and `commands/`).

`import trl_grpo_ext` stays light: a name loads its module (and so torch and trl) on first access, as every
package's public names do. Each package lists its public names in `__init__.pyi`, the imports type checkers and
editors read, and `lazy_loader.attach_stub` (scientific-python's SPEC 1) resolves them from that stub at run time.
"""

import lazy_loader

__version__ = "0.1.0"
__getattr__, _, __all__ = lazy_loader.attach_stub(__name__, __file__)
__all__ = [*__all__, "__version__"]


def __dir__() -> list[str]:
    return __all__.copy()
