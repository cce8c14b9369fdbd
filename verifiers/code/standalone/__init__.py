"""Modules that run outside the package: in the judge process and inside the candidate's sandbox.

Rule: standard library only, and no relative imports. These files are loaded as scripts, never through
`trl_grpo_ext`: the judge runs `python -I -B judge.py`, and the sandbox runs `python -I -B -S harness.py` or
`python -I -B -S zygote.py` from a read-only copy of three of them (`harness.py`, `protocol.py`, `zygote.py`, bound
under `/opt/trl_grpo_ext_sandbox`, see `sandbox/isolation.py`). Each script puts this folder first on `sys.path`,
so the modules import each other by their bare names (`from protocol import encode`): a module here may import
the standard library and its neighbours in this folder, nothing else. Inside the sandbox only the three bound
files exist, so `harness.py`, `protocol.py` and `zygote.py` import nothing but each other.

- `protocol.py`: the JSON-lines wire format, shared with the verifier's side.
- `reaper.py`: the parent of a sandbox without a PID namespace (as root): adopts and kills what the candidate leaves;
  the package takes from it how a uid is emptied (`kill_processes_of`).
- `harness.py`, `zygote.py`: the sandbox side (untrusted): run the candidate, answer the judge's requests.
- `judge.py` (the judge process: fork server, limits), `judge_formats.py` (format dispatch), `judge_namespace.py`
  (what the test sees of the candidate), `judge_proxy.py` (calls to the candidate) and `formats_*.py` (each test
  format): the judge side (trusted): run the hidden tests against proxies of the candidate.

The package imports from here only this `__init__` (`STANDALONE_DIR`, `SCRIPT_FLAGS`), `protocol.py` (as
`trl_grpo_ext.verifiers.code.standalone.protocol`) and `reaper.py` (`kill_processes_of`); the scripts never import
this `__init__`.
`tests/verifiers/code/test_standalone.py` checks the rule.
"""

from pathlib import Path

STANDALONE_DIR = Path(__file__).resolve().parent
# How every script here is started (the sandbox adds -S): -I isolates it from the environment and the user's
# site-packages, which also makes it ignore PYTHONDONTWRITEBYTECODE; -B keeps it from writing bytecode into this
# folder, which is the installed package's own.
SCRIPT_FLAGS = ("-I", "-B")
