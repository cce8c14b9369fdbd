"""Verifiers: registered scorers of completions, served to TRL as reward functions.

Installed as `trl_grpo_ext.verifiers` (never as a top-level `verifiers`). Imports neither torch nor trl.
"""

from .base import VerificationResult, Verifier, get_verifier, list_verifiers, register_verifier

__all__ = ["VerificationResult", "Verifier", "get_verifier", "list_verifiers", "register_verifier"]
