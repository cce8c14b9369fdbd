"""The zygotes' warm-up (`warm_up` of judge.py and harness.py): their own path, run once before any child is
forked, on constants only. It must give the verdicts and replies of a correct candidate (else it warms nothing, or the
wrong path), and leave nothing behind for the children to inherit: no descriptor, module, builtin or hook."""

from __future__ import annotations

import json
import subprocess
import sys

from trl_grpo_ext.verifiers.code.standalone import SCRIPT_FLAGS, STANDALONE_DIR

# What a child forked after the warm-up would see of it: modules, builtins, interpreter hooks and limits, warnings.
STATE = """
import builtins, warnings
def state():
    hooks = [id(h) for h in (*sys.meta_path, *sys.path_hooks, sys.gettrace(), sys.getprofile(), sys.excepthook)]
    return (sorted(sys.modules), {k: id(v) for k, v in vars(builtins).items()}, hooks, list(sys.path),
            sys.getrecursionlimit(), repr(warnings.filters), sys.get_int_max_str_digits())
"""


def run_warm_up(module: str, *flags: str) -> dict:
    """Import `module` of the standalone folder in a fresh interpreter, run its `warm_up`, and return what it returned
    ("result") and whether the descriptors and the inherited state are the same after as before ("same")."""
    script = f"""
import json, os, sys
sys.path.insert(0, sys.argv[1])
import {module}
{STATE}
before = sorted(os.listdir("/proc/self/fd")), state()
result = {module}.warm_up()
after = sorted(os.listdir("/proc/self/fd")), state()
print(json.dumps({{"result": result, "same": before == after}}))
"""
    run = subprocess.run(
        [sys.executable, *SCRIPT_FLAGS, *flags, "-c", script, str(STANDALONE_DIR)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def test_the_judge_warm_up_judges_its_jobs_as_a_correct_candidates_and_closes_what_it_opened():
    said = run_warm_up("judge")  # each of its 3 jobs twice: its test prepared by the child, then ahead by the zygote
    assert [(v["passed"], v["total"], v.get("error")) for v in said["result"]] == [(3, 3, None)] * 6
    assert said["same"], "the warm-up left a descriptor open or changed what the children inherit"


def test_the_sandbox_warm_up_answers_its_constant_calls_as_a_candidate_would_and_closes_what_it_opened():
    said = run_warm_up("harness", "-S")
    assert said["result"][0] == {"ready": True, "globals": {"add": "callable"}}
    assert [(r["id"], r["ok"], r["value"]) for r in said["result"][1:]] == [
        (1, True, 3),
        (2, True, [1, 2]),
        (3, True, "ab"),
    ]
    assert said["same"], "the warm-up left a descriptor open or changed what the children inherit"
