"""Verifiers: registered scorers of completions, served to TRL as reward functions.

Installed as `trl_grpo_ext.verifiers` (never as a top-level `verifiers`). Imports neither torch nor trl. Its public
names load on first access (`lazy_loader`, from `__init__.pyi`): a process that imports one module of the package on the way (a math worker)
loads nothing else.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
