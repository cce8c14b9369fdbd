"""One registry pattern for advantage estimators, KL estimators and verifiers: `Registry` and its error messages.

Defined in `verifiers/core/plugins.py`, the lowest layer (the verifiers import nothing of `trl_grpo_ext` outside
themselves); this module keeps its public names where the trainer's side has always imported them.
"""

from .verifiers.core.plugins import Registry, first_doc_line, invalid_choice, suggest

__all__ = ["Registry", "first_doc_line", "invalid_choice", "suggest"]
