"""Tools for tool-integrated GRPO: a sandboxed Python interpreter, as TRL 1.16's `tools=` and `environment_factory=`.

    from trl_grpo_ext.tools import PythonSession, python
    GRPOTrainer(..., tools=[python])                         # stateless: each call a fresh interpreter
    GRPOTrainer(..., environment_factory=PythonSession)      # one interpreter per rollout, variables persist

Each call runs in the code verifier's sandbox (docs/tools.md). Why here and not under `verifiers/`: a tool is not a
verifier (it returns text to the policy, not a score) and it is TRL-facing like the trainer; it reuses
`verifiers/sandbox/` as it is, and the code that runs inside the sandbox (`cell.py`) goes through the harness's
existing `functions` mode, so no sandbox file changes. `cell.py` is a script, never imported by the package: like the
scripts of `verifiers/code/standalone/`, it may import the standard library only (`tests/test_layout.py` checks its
source, `tests/test_process_imports.py` what the running cell has imported).
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
