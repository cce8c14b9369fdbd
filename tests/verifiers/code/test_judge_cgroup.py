"""The judge process and everything it starts run in a cgroup of their own, beside the candidates'.

The judge runs the dataset's test code on the candidate's values; what that code does with a value (compute, allocate,
start processes) is bounded per judge child by rlimits, and as a whole by this group: its memory (no swap), its
processes and threads, and its CPU time (a quota of one CPU per judge child that can run at once). Here the test code
itself reports the cgroup it runs in, and starts a process that computes: its CPU time is the judge group's, whose
limits are those documented; the group is gone once the verifier closes.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from code_verifier_helpers import make_code_verifier

from trl_grpo_ext.verifiers.code.runner import JUDGE_MEMORY_MB, JUDGE_PROCESSES

TEST = """
import subprocess, sys

def own_cgroups():
    own = {}
    for line in open("/proc/self/cgroup").read().splitlines():
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(",") if controllers else [""]:
            own[controller] = path
    return own

def check(candidate):
    assert candidate(2) == 4
    groups = own_cgroups()
    assert (groups.get("memory") or groups[""]).rsplit("/", 1)[1].startswith("judge")
    busy = "import time\\nend = time.process_time() + 0.5\\nwhile time.process_time() < end: pass"
    assert subprocess.run([sys.executable, "-c", busy]).returncode == 0
"""


def _read(folder: Path, name: str) -> str:
    return (folder / name).read_text().strip()


def test_the_judge_and_what_it_starts_are_in_a_bounded_cgroup():
    verifier = make_code_verifier(10.0, workers=2)
    try:
        if verifier._cgroups is None:
            pytest.skip("no cgroups here")
        result = verifier.verify("def double(x):\n    return 2 * x\n", {"test": TEST, "entry_point": "double"})
        assert (result.score, result.reason) == (1.0, "correct"), (result.reason, result.details)
        group = verifier._judge.cgroup
        assert group.cpu_s() >= 0.5  # the test code's child computed in the group
        share = verifier.workers + 1
        memory, pids, cpu = (group.tree.layout.folders[c] / group.folders[0].name for c in ("memory", "pids", "cpu"))
        if group.layout.version == 2:
            assert _read(memory, "memory.max") == str(share * JUDGE_MEMORY_MB << 20)
            assert _read(cpu, "cpu.max") == f"{share * 100000} 100000"
        else:
            assert _read(memory, "memory.limit_in_bytes") == str(share * JUDGE_MEMORY_MB << 20)
            assert _read(cpu, "cpu.cfs_quota_us") == str(share * 100000)
        assert _read(pids, "pids.max") == str(share * JUDGE_PROCESSES)
    finally:
        verifier.close()
    assert not any(folder.exists() for folder in group.folders)
