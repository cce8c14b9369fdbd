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

JUDGE_WARM_UP = (
    """
import json, os, sys
sys.path.insert(0, sys.argv[1])
import judge
"""
    + STATE
    + """
before = sorted(os.listdir("/proc/self/fd")), state()
verdicts = judge.warm_up()
after = sorted(os.listdir("/proc/self/fd")), state()
print(json.dumps({"verdicts": verdicts, "same": before == after}))
"""
)


def test_the_judge_warm_up_judges_its_jobs_as_a_correct_candidates_and_closes_what_it_opened():
    run = subprocess.run(
        [sys.executable, *SCRIPT_FLAGS, "-c", JUDGE_WARM_UP, str(STANDALONE_DIR)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    said = json.loads(run.stdout)
    assert [(v["passed"], v["total"], v.get("error")) for v in said["verdicts"]] == [(3, 3, None)] * 3
    assert said["same"], "the warm-up left a descriptor open or changed what the children inherit"


HARNESS_WARM_UP = (
    """
import json, os, sys
sys.path.insert(0, sys.argv[1])
import harness
"""
    + STATE
    + """
before = sorted(os.listdir("/proc/self/fd")), state()
replies = harness.warm_up()
after = sorted(os.listdir("/proc/self/fd")), state()
print(json.dumps({"replies": replies, "same": before == after}))
"""
)


def test_the_sandbox_warm_up_answers_its_constant_calls_as_a_candidate_would_and_closes_what_it_opened():
    run = subprocess.run(
        [sys.executable, *SCRIPT_FLAGS, "-S", "-c", HARNESS_WARM_UP, str(STANDALONE_DIR)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    said = json.loads(run.stdout)
    assert said["replies"][0] == {"ready": True, "globals": {"add": "callable"}}
    assert [(r["id"], r["ok"], r["value"]) for r in said["replies"][1:]] == [
        (1, True, 3),
        (2, True, [1, 2]),
        (3, True, "ab"),
    ]
    assert said["same"], "the warm-up left a descriptor open or changed what the children inherit"
