"""Verifiers: registered scorers of completions, served to TRL as reward functions.

Installed as `trl_grpo_ext.verifiers` (never as a top-level `verifiers`). Imports neither torch nor trl. Its public
names load on first access (`lazy.py`): a process that imports one module of the package on the way (a math worker)
loads nothing else.
"""

from typing import TYPE_CHECKING

from .lazy import lazy_exports

if TYPE_CHECKING:
    from .code.verifier import CodeVerifier
    from .core.contract import VerificationResult, Verifier
    from .core.registry import get_verifier, list_verifiers, register_verifier
    from .core.reward import VerifierReward, as_reward_function
    from .math.verifier import MathVerifier

__all__ = [
    "CodeVerifier",
    "MathVerifier",
    "VerificationResult",
    "Verifier",
    "VerifierReward",
    "as_reward_function",
    "get_verifier",
    "list_verifiers",
    "register_verifier",
]
__getattr__, __dir__ = lazy_exports(__name__, __file__)
