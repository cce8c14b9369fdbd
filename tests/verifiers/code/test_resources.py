"""Each candidate is bounded and timed as a whole (sandbox/cgroups.py, code/clock.py).

- memory: what a candidate holds in memfd files, in its /tmp or spread over child processes counts against its
  cgroup, so a candidate that tries to hold several times `memory_mb` is killed before it can print that it did;
- its deadline counts its own CPU time (all its processes) and the time it sleeps, never the machine's load: a
  correct 0.6 s program under `timeout_s=1.5` scores 1.0 while busy processes in sessions of their own, pinned on the
  same cores, take the CPU; the test code's own work in the judge (up to twice `timeout_s`) is not charged to it;
- a candidate that is runnable but gets no CPU, throttled by a quota, reaches the wall-clock backstop: None,
  `internal_error: stalled` (test_stalls.py: at the backstop with CPU to spare, it is the candidate's `timeout`);
- a candidate forking many busy children does not make a correct neighbour time out.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from code_verifier_helpers import make_code_verifier

from trl_grpo_ext.verifiers.code import clock
from trl_grpo_ext.verifiers.sandbox.process import Limits

TIMEOUT_S = 1.5
DONE = [{"input": "", "output": "done\n"}]


def cgroup_verifier(timeout_s: float):
    v = make_code_verifier(timeout_s, memory_mb=256)
    if v.isolation.cgroup is None:
        v.close()
        pytest.skip("no cgroup per candidate here (cgroup=False)")
    return v


@pytest.fixture(scope="module")
def verifier():
    v = cgroup_verifier(TIMEOUT_S)
    yield v
    v.close()


# The memory tests touch up to a few hundred MiB. On a virtual machine whose host backs memory on first touch (this
# project's machine: 5 - 10 s of system time per GiB not yet backed), that alone can outlast TIMEOUT_S: they get a
# budget that only the memory bound ends.
MEMORY_TIMEOUT_S = 10.0


@pytest.fixture(scope="module")
def memory_verifier():
    v = cgroup_verifier(MEMORY_TIMEOUT_S)
    yield v
    v.close()


# Each holds about 1 GiB (4 x memory_mb) outside any one process's address space, in pieces under RLIMIT_FSIZE (16 MiB
# per file), then says so: it must not get there. Without cgroups, all but the /tmp one print "done".
MEMORY_HOLDERS = {
    "memfds_written": "import os\nfds = [os.memfd_create(f'h{i}') for i in range(70)]\n"
    "for fd in fds: os.write(fd, b'm' * (15 << 20))\n",
    "memfds_mapped_then_unmapped": "import mmap, os\nfds = [os.memfd_create(f'h{i}') for i in range(70)]\n"
    "for fd in fds:\n    os.ftruncate(fd, 15 << 20)\n    m = mmap.mmap(fd, 15 << 20)\n    m.write(b'p' * (15 << 20))\n"
    "    m.close()\n",
    "children_each_under_the_limit": "import os, time\nr, w = os.pipe()\nfor _ in range(5):\n"
    "    if os.fork() == 0:\n        hold = b'c' * (150 << 20)\n        os.write(w, b'.')\n        time.sleep(60)\n"
    "got = b''\nwhile len(got) < 5: got += os.read(r, 5)\n",
    "tmp_then_memfds": "import os\nfor i in range(4):\n    with open(f'/tmp/hold{i}', 'wb') as f: f.write(b's' * (15 << 20))\n"
    "fds = [os.memfd_create(f'h{i}') for i in range(64)]\nfor fd in fds: os.write(fd, b'm' * (15 << 20))\n",
}


@pytest.mark.parametrize("attack", sorted(MEMORY_HOLDERS))
def test_memory_is_bounded_per_candidate(memory_verifier, attack):
    result = memory_verifier.verify(MEMORY_HOLDERS[attack] + "print('done')\n", DONE)
    assert result.score == 0.0, (result.reason, result.details)


def test_a_correct_program_within_its_memory_scores_one(memory_verifier):
    code = "import os\nfd = os.memfd_create('ok')\nos.write(fd, b'm' * (100 << 20))\nx = b'y' * (100 << 20)\n"
    result = memory_verifier.verify(code + "print('done')\n", DONE)
    assert result.score == 1.0, (result.reason, result.details)


# /dev/shm is each candidate's own tmpfs, up to memory_mb, whose pages count against the candidate's cgroup with the
# rest of its memory (memory_mb + its 64 MiB /tmp in all): filled to its size, it leaves room for 40 MiB of heap
# (256 + 40 + the interpreter < 320 MiB), not for 150 (which one process could hold under RLIMIT_AS alone).
FILL_SHM = (
    "import os\nn = 0\ntry:\n    while True:\n        with open(f'/dev/shm/fill{n}', 'wb') as f:\n"
    "            f.write(b's' * (8 << 20))\n        n += 1\nexcept OSError as e:\n    print('full', e.errno, flush=True)\n"
    "heap = [bytearray(1 << 20) for _ in range(int(input()))]\nprint(8 * n, 'MiB', flush=True)\n"
)


def test_dev_shm_is_private_bounded_and_counts_against_the_candidates_memory(memory_verifier):
    before = set(os.listdir("/dev/shm"))
    within = memory_verifier.verify(FILL_SHM, [{"input": "40", "output": "full 28\n256 MiB\n"}])
    assert (within.score, within.reason) == (1.0, "correct"), (within.reason, within.details)
    beyond = memory_verifier.verify(FILL_SHM, [{"input": "150", "output": "full 28\n256 MiB\n"}])
    assert (beyond.score, beyond.reason) == (0.0, "runtime_error: exit status -9"), (beyond.reason, beyond.details)
    assert set(os.listdir("/dev/shm")) <= before  # nothing of the candidates' on the host's /dev/shm


def test_processes_are_bounded_per_candidate_whatever_their_uid(verifier):
    code = "import os, time\nn = 0\nfor _ in range(200):\n    try: pid = os.fork()\n    except OSError: break\n"
    code += "    if pid == 0: time.sleep(30); os._exit(0)\n    n += 1\nprint(n)\n"
    result = verifier.verify(code, [{"input": "", "output": "0\n"}])
    started = int(result.details["failures"][0]["output"])
    assert 0 < started <= verifier.limits.processes, started


SPIN = "import time\ndef add(a, b):\n    t = time.process_time()\n    while time.process_time() - t < 0.6: pass\n"
SPIN += "    return a + b\n"
ADD_TESTS = "assert add(1, 2) == 3\n"


def busy_sessions(count: int, cores: set[int]) -> list[subprocess.Popen]:
    """CPU-bound processes, each in a session of its own, pinned on `cores`."""
    load = [sys.executable, "-c", "while True: pass"]
    procs = [subprocess.Popen(load, start_new_session=True) for _ in range(count)]
    for proc in procs:
        os.sched_setaffinity(proc.pid, cores)
    return procs


def test_deadline_counts_the_candidates_cpu_time_not_the_machines_load():
    cores = os.sched_getaffinity(0)
    verifier = make_code_verifier(TIMEOUT_S, workers=1)
    if verifier.isolation.cgroup is None:
        verifier.close()
        pytest.skip("without cgroups the deadline is a wall-clock one")
    load = busy_sessions(5 * len(cores), cores)
    try:
        results = [verifier.verify(SPIN, ADD_TESTS) for _ in range(3)]
    finally:
        for proc in load:
            proc.kill()
            proc.wait()
        verifier.close()
    assert [(r.score, r.reason) for r in results] == [(1.0, "correct")] * 3


def test_the_judges_work_is_not_charged_to_the_candidate(verifier):
    # The test code computes for about 2 s of CPU (more than timeout_s) between two calls of the candidate.
    tests = "assert add(1, 2) == 3\nimport time\nt = time.process_time()\n"
    tests += "while time.process_time() - t < 2.0: pass\nassert add(2, 2) == 4\n"
    result = verifier.verify("def add(a, b): return a + b", tests)
    assert (result.score, result.reason) == (1.0, "correct"), result.details


def test_a_sleeping_candidate_is_charged_its_sleep(verifier):
    start = time.monotonic()
    result = verifier.verify("import time\ndef add(a, b):\n    time.sleep(60)\n    return a + b", ADD_TESTS)
    assert (result.score, result.reason) == (0.0, "timeout")
    assert time.monotonic() - start < TIMEOUT_S + 4.0


def test_a_starved_candidate_is_stalled_none_not_zero(monkeypatch):
    """The candidate's cgroup gets 2% of a core: runnable, it cannot spend its CPU time before the backstop."""
    monkeypatch.setattr(clock, "BACKSTOP_FACTOR", 2.0)
    monkeypatch.setattr(clock, "BACKSTOP_MIN_S", 3.0)
    original = Limits.cgroup

    def throttled(self, tree, **options):
        group = original(self, tree, **options)
        cpu = next(f for f in group.folders if (f / "cpu.cfs_quota_us").exists() or (f / "cpu.max").exists())
        if (cpu / "cpu.max").exists():
            (cpu / "cpu.max").write_text("2000 100000")
        else:
            (cpu / "cpu.cfs_quota_us").write_text("2000")
        return group

    monkeypatch.setattr(Limits, "cgroup", throttled)
    verifier = make_code_verifier(TIMEOUT_S, workers=1)
    try:
        if verifier.isolation.cgroup is None:
            pytest.skip("without cgroups the deadline is a wall-clock one")
        result = verifier.verify("def add(a, b):\n    while True: pass", ADD_TESTS)
        stdio = verifier.verify("while True: pass", DONE)
    finally:
        verifier.close()
    for outcome in (result, stdio):
        assert outcome.score is None and outcome.reason.startswith("internal_error: stalled"), outcome.reason


def test_a_candidate_with_many_busy_children_does_not_time_out_its_neighbour():
    verifier = make_code_verifier(TIMEOUT_S, workers=2, max_processes=80)
    if verifier.isolation.cgroup is None:
        verifier.close()
        pytest.skip("without cgroups a candidate's processes take the CPU from its neighbours")
    hog = "import os\nfor _ in range(63):\n    if os.fork() == 0:\n        while True: pass\ndef add(a, b):\n"
    hog += "    while True: pass\n"
    spin = SPIN.replace("0.6", "0.4")
    try:
        with ThreadPoolExecutor(2) as pool:
            for _ in range(3):
                results = list(pool.map(verifier.verify, [hog, spin], [ADD_TESTS, ADD_TESTS]))
                assert results[0].score == 0.0 and results[0].reason == "timeout", results[0].reason
                assert (results[1].score, results[1].reason) == (1.0, "correct")
    finally:
        verifier.close()


def test_no_cgroup_is_left_after_close():
    verifier = make_code_verifier(TIMEOUT_S, workers=2)
    if verifier.isolation.cgroup is None:
        verifier.close()
        pytest.skip("no cgroups here")
    folders = verifier._cgroups.layout.parents  # the process's tree, shared with the other verifiers of this module

    def groups():
        return {p for folder in folders for p in Path(folder).iterdir() if p.is_dir()}

    before = groups()
    verifier.verify_batch(["def add(a, b): return a + b"] * 4, [ADD_TESTS] * 4)
    verifier.close()
    assert groups() <= before


def test_memory_is_bounded_per_candidate_at_the_rlimits_level_too():
    verifier = make_code_verifier(TIMEOUT_S, memory_mb=256, workers=1, isolation="rlimits")
    try:
        if verifier.isolation.cgroup is None:
            pytest.skip("no cgroup per candidate here (cgroup=False)")
        result = verifier.verify(MEMORY_HOLDERS["memfds_written"] + "print('done')\n", DONE)
        assert result.score == 0.0, (result.reason, result.details)
        assert verifier.verify("print('done')", DONE).score == 1.0
    finally:
        verifier.close()
