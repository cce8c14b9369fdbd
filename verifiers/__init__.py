"""Verifiers: registered scorers of completions, served to TRL as reward functions.

Installed as `trl_grpo_ext.verifiers` (never as a top-level `verifiers`). Imports neither torch nor trl.
"""

from .base import VerificationResult, Verifier, get_verifier, list_verifiers, register_verifier
from .code_verifier import CodeVerifier
from .math_verifier import MathVerifier
from .reward import as_reward_function

__all__ = [
    "CodeVerifier",
    "MathVerifier",
    "VerificationResult",
    "Verifier",
    "as_reward_function",
    "get_verifier",
    "list_verifiers",
    "register_verifier",
]
