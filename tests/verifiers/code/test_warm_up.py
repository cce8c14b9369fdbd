"""The zygotes' warm-up (judge.py's `warm_up`): the judge's own path, run once before any child is forked, on constants
only. It must judge its constant jobs as a correct candidate's (else it warms nothing, or the wrong path), and leave
no descriptor behind for the children to inherit."""

from __future__ import annotations

import json
import subprocess
import sys

from trl_grpo_ext.verifiers.code.standalone import SCRIPT_FLAGS, STANDALONE_DIR

JUDGE_WARM_UP = """
import json, os, sys
sys.path.insert(0, sys.argv[1])
import judge
before = sorted(os.listdir("/proc/self/fd"))
verdicts = judge.warm_up()
print(json.dumps({"verdicts": verdicts, "fds_before": before, "fds_after": sorted(os.listdir("/proc/self/fd"))}))
"""


def test_the_judge_warm_up_judges_its_jobs_as_a_correct_candidates_and_closes_what_it_opened():
    run = subprocess.run(
        [sys.executable, *SCRIPT_FLAGS, "-c", JUDGE_WARM_UP, str(STANDALONE_DIR)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    said = json.loads(run.stdout)
    assert [(v["passed"], v["total"], v["error"]) for v in said["verdicts"]] == [(3, 3, None), (3, 3, None)]
    assert said["fds_after"] == said["fds_before"]
