"""Sandbox uids are unique across every process on the machine (sandbox/uids.py).

The main test runs two verifying processes at once, as two ranks of one launch (or two trainings) would: one verifies
slow correct programs, the other fast wrong ones that also hold processes and linger, so that their sandboxes are
killed by uid. Each slow program counts the processes its limit lets it start and scores 1.0 only if that count is
its own sandbox's; a uid shared with the other process would lower the count, and the other process's kill-by-uid
would end it before its verdict.

Run as a script, this file is one of the two processes: `python test_uids.py slow|fast STOP_FILE ISOLATION`.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pool_helpers import wait_for_files

from trl_grpo_ext.verifiers.sandbox.uids import UidPool

MAX_PROCESSES = 16
SLOW_ITEMS = 8
OVERLAP_ROUNDS = 5  # slow batches at most, each twice as long as the last, until a whole fast batch ran during one
# The harness itself is one process of the sandbox uid: a candidate may start MAX_PROCESSES - 1 more.
SLOW_PROGRAM = f"""
import os, time
def forks():
    started = 0
    for _ in range({2 * MAX_PROCESSES}):
        try:
            pid = os.fork()
        except OSError:
            break
        if pid == 0:
            time.sleep(60)
            os._exit(0)
        started += 1
    time.sleep(0.6)  # each sandbox lives a while (the test checks that the other process's come and go meanwhile)
    return started
"""
SLOW_TEST = f"assert forks() == {MAX_PROCESSES - 1}"
# Wrong, fast, and it leaves work for kill-by-uid: children that sleep on, and a harness that lingers at exit.
FAST_PROGRAM = f"""
import atexit, os, time
for _ in range({MAX_PROCESSES // 2}):
    try:
        if os.fork() == 0:
            time.sleep(60)
            os._exit(0)
    except OSError:
        break
atexit.register(time.sleep, 60)
def forks():
    return -1
"""


def worker(role: str, stop_file: str, isolation: str) -> None:
    from trl_grpo_ext.verifiers import get_verifier
    from trl_grpo_ext.verifiers.sandbox.uids import UIDS

    verifier = get_verifier("code", timeout_s=8, max_processes=MAX_PROCESSES, workers=2, isolation=isolation)
    scores, overlap = [], 0
    fast_batches = stop_file + ".fast_batches"  # the number of batches the fast process has verified
    if role == "slow":
        # Handshake: start once the fast process runs, and verify until a whole fast batch (its sandboxes started,
        # killed by uid, gone) has run during one slow batch; the test fails if that never happens.
        wait_for_files([fast_batches], timeout_s=120)
        for round_ in range(OVERLAP_ROUNDS):  # under load a fast batch can outlast a short slow one: lengthen it
            before = int(Path(fast_batches).read_text())
            items = SLOW_ITEMS * 2**round_
            results = verifier.verify_batch([SLOW_PROGRAM] * items, [SLOW_TEST] * items)
            scores += [(r.score, r.reason) for r in results]
            overlap = int(Path(fast_batches).read_text()) - before - 1  # the first and last may be partly outside
            if overlap >= 1:
                break
        Path(stop_file).touch()
    else:
        deadline = time.monotonic() + 300
        while not os.path.exists(stop_file) and time.monotonic() < deadline:
            scores += [(r.score, r.reason) for r in verifier.verify_batch([FAST_PROGRAM] * 2, [SLOW_TEST] * 2)]
            Path(fast_batches + ".tmp").write_text(str(len(scores) // 2))
            os.replace(fast_batches + ".tmp", fast_batches)
    held = sorted(UIDS.held())
    verifier.close()
    report = {"role": role, "scores": scores, "uids": held, "isolation": verifier.isolation.level, "overlap": overlap}
    print(json.dumps(report))


def needs_root():
    if os.geteuid() != 0:
        pytest.skip("dedicated sandbox uids are used only when the verifier runs as root")


@pytest.mark.parametrize("isolation", ["auto", "rlimits"])
def test_two_processes_keep_their_own_uids_and_process_limits(tmp_path, isolation):
    needs_root()
    stop = tmp_path / "slow_done"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    start = time.monotonic()
    procs = {
        role: subprocess.Popen(
            [sys.executable, __file__, role, str(stop), isolation],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        for role in ("fast", "slow")
    }
    reports = {}
    for role, proc in procs.items():
        out, err = proc.communicate(timeout=300)
        if "RuntimeError: code verifier" in err.decode():
            pytest.skip(err.decode().strip().splitlines()[-1])
        assert proc.returncode == 0, err.decode()[-2000:]
        reports[role] = json.loads(out.decode().strip().splitlines()[-1])
    elapsed = time.monotonic() - start
    slow, fast = reports["slow"], reports["fast"]
    assert slow["overlap"] >= 1, slow  # a whole fast batch ran during a slow one: the test tested something
    assert slow["scores"] and slow["scores"] == [[1.0, "correct"]] * len(slow["scores"]), slow
    assert len(fast["scores"]) >= 2 and all(score == 0.0 for score, _ in fast["scores"]), fast
    assert slow["uids"] and fast["uids"] and not set(slow["uids"]) & set(fast["uids"])
    print(
        f"slow: {len(slow['scores'])} items, fast: {len(fast['scores'])} items, {elapsed:.1f} s, {slow['isolation']}"
    )


def test_a_uid_held_elsewhere_is_skipped_and_freed_when_its_holder_dies(tmp_path):
    first = 62_900  # outside the real range: nothing here touches the uids of real sandboxes
    ours = UidPool(first, 3, lock_dirs=(str(tmp_path),))
    theirs = UidPool(first, 3, lock_dirs=(str(tmp_path),))  # its own lock files: as another process would
    a, b = ours.acquire(), theirs.acquire()
    assert a == first and b == first + 1
    ours.release(a)
    assert ours.acquire() == a  # kept by this process and reused
    with pytest.raises(RuntimeError, match="not held by this process"):
        ours.kill(b)
    assert theirs.acquire() == first + 2
    with pytest.raises(RuntimeError, match="all 3 sandbox uids .* are held"):
        ours.acquire()

    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, sys, time\n"
         f"f = open({str(tmp_path / f'{first + 5}.lock')!r}, 'w'); fcntl.flock(f, fcntl.LOCK_EX)\n"
         "print('locked', flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE,
    )  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == b"locked"
        later = UidPool(first + 5, 1, lock_dirs=(str(tmp_path),))
        with pytest.raises(RuntimeError, match="held by processes"):
            later.acquire()
        holder.send_signal(signal.SIGKILL)
        holder.wait()
        assert later.acquire() == first + 5  # the kernel dropped the dead holder's lock
    finally:
        holder.kill()
        holder.wait()


def test_lock_directory_must_be_ours_and_closed_to_others(tmp_path):
    open_dir = tmp_path / "open"
    open_dir.mkdir()
    open_dir.chmod(0o777)
    pool = UidPool(62_950, 1, lock_dirs=(str(open_dir),))
    with pytest.raises(RuntimeError, match="no directory for the sandbox uid locks"):
        pool.acquire()


def test_import_reads_no_password_database():
    probe = (
        "import pwd\ncalls = []\nreal = pwd.getpwuid\n"
        "pwd.getpwuid = lambda uid: calls.append(uid) or real(uid)\n"
        "import trl_grpo_ext.verifiers\nprint(len(calls))"
    )
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert run.stdout.strip() == "0"


if __name__ == "__main__":
    worker(*sys.argv[1:4])


# Under isolation="rlimits" there is no PID namespace of the candidate's own: what it leaves goes to an init. A
# container's init may never reap: the training itself (`docker run image python train.py`, no --init), or a launcher
# that waits for its own child only (here a Python parent in `subprocess.run`).
VERIFIES_WHAT_LEAVES_A_CHILD = """
import json, logging, os
from trl_grpo_ext.verifiers import get_verifier
from trl_grpo_ext.verifiers.code.standalone.reaper import processes_of_uid
from trl_grpo_ext.verifiers.sandbox.uids import UIDS
errors = []
logging.getLogger("trl_grpo_ext.verifiers").addHandler(logging.Handler())
logging.getLogger("trl_grpo_ext.verifiers").handlers[-1].emit = lambda record: errors.append(record.getMessage())
verifier = get_verifier("code", timeout_s=8, workers=2, isolation="rlimits")
leaves_a_child = "import os, time\\nif os.fork() == 0:\\n    time.sleep(60)\\n    os._exit(0)\\ndef f(): return 1"
reasons = [r.reason for _ in range(3) for r in verifier.verify_batch([leaves_a_child] * 2, ["assert f() == 2"] * 2)]
left = {uid: processes_of_uid(uid) for uid in UIDS.held()}
verifier.close()
print(json.dumps({"reasons": reasons, "left": left, "errors": [e for e in errors if "weak isolation" not in e]}))
"""


@pytest.mark.parametrize("init", ["the_training", "a_launcher"])
def test_what_a_candidate_leaves_is_reaped_under_an_init_that_never_reaps(init):
    needs_root()
    if shutil.which("unshare") is None:
        pytest.skip("unshare (util-linux) is not installed")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    training = [sys.executable, "-c", VERIFIES_WHAT_LEAVES_A_CHILD]
    if init == "a_launcher":
        training = [sys.executable, "-c", f"import subprocess, sys\nsys.exit(subprocess.run({training!r}).returncode)"]
    command = ["unshare", "--pid", "--fork", "--mount-proc", *training]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["reasons"] == ["wrong"] * 6, report
    # Before: each leftover child stayed a zombie of init, its uid was given up after 5 s ("survived SIGKILL").
    assert report["errors"] == [], report["errors"]
    assert report["left"] and all(processes == [] for processes in report["left"].values()), report["left"]


# The training process is never made a child subreaper: the orphans of its own workers (a DataLoader's, a compiler's)
# go where they would without the verifier, not to it as zombies. Here a grandchild orphaned after the verifier ran
# reports its new parent.
LEAVES_AN_ORPHAN_AFTER_VERIFYING = """
import ctypes, json, os, sys, time
from trl_grpo_ext.verifiers import get_verifier
verifier = get_verifier("code", timeout_s=8, workers=1, isolation=sys.argv[1])
leaves_a_child = "import os, time\\nif os.fork() == 0:\\n    time.sleep(60)\\n    os._exit(0)\\ndef f(): return 1"
reasons = [r.reason for r in verifier.verify_batch([leaves_a_child] * 2, ["assert f() == 1"] * 2)]
libc, flag = ctypes.CDLL(None, use_errno=True), ctypes.c_int(-1)
assert libc.prctl(37, ctypes.byref(flag), 0, 0, 0) == 0  # PR_GET_CHILD_SUBREAPER
read, write = os.pipe()
if os.fork() == 0:
    if os.fork() == 0:
        time.sleep(0.5)  # its parent has exited by now
        os.write(write, str(os.getppid()).encode())
        os._exit(0)
    os._exit(0)
os.wait()
adoptive_parent = int(os.read(read, 32))
verifier.close()
print(json.dumps({"reasons": reasons, "subreaper": flag.value, "adopted_by_me": adoptive_parent == os.getpid()}))
"""


@pytest.mark.parametrize("isolation", ["auto", "rlimits"])
def test_the_training_process_is_never_a_subreaper(isolation):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    command = [sys.executable, "-c", LEAVES_AN_ORPHAN_AFTER_VERIFYING, isolation]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report == {"reasons": ["correct", "correct"], "subreaper": 0, "adopted_by_me": False}, report


@pytest.mark.parametrize(
    "ending, status",
    [("os._exit(3)", 3), ("os.kill(os.getpid(), signal.SIGKILL)", -9), ("os.kill(os.getpid(), signal.SIGSEGV)", -11)],
)
def test_the_reaper_ends_as_the_harness_did(ending, status, tmp_path):
    """What the verifier reads of a sandbox's end (a limit's signal, an exit status) is the harness's, not the
    reaper's, and no core file of the reaper is left."""
    needs_root()
    from trl_grpo_ext.verifiers.code.standalone import STANDALONE_DIR
    from trl_grpo_ext.verifiers.sandbox.uids import UIDS

    uid = UIDS.acquire()
    try:
        harness = [sys.executable, "-c", f"import os, signal\n{ending}"]
        reaper = [sys.executable, "-I", "-S", str(STANDALONE_DIR / "reaper.py"), str(uid), *harness]
        done = subprocess.run(reaper, capture_output=True, cwd=tmp_path, timeout=60)
    finally:
        UIDS.release(uid)
    assert done.returncode == status, done.stderr[-2000:]
    assert list(tmp_path.iterdir()) == []
