"""Where one candidate's time goes in the `code` verifier, stage by stage, and the physical limits of this machine.

Used by `python benchmarks/code_verifier.py --breakdown`: the verifier records a `time.monotonic()` reading at each
stage of each candidate (verifiers/sandbox/stages.py: in the verifier, the fork server, the candidate and its
harness, and the judge), and this module prints the median of each interval over the candidates of a batch. The
physical limits are what the fastest conceivable sandbox per candidate costs here: a bare fork of a warm interpreter
(`os.fork`, `os._exit`, `waitpid`), the same fork into the fresh namespaces a candidate gets (mount with a tmpfs and
/proc, IPC, network with loopback up, PID), and a fork and exec of bubblewrap itself.
"""

from __future__ import annotations

import ctypes
import fcntl
import itertools
import os
import shutil
import socket
import statistics
import struct
import subprocess
import time
from pathlib import Path

# (label, from event, to event): intervals of one candidate's readings. Ahead of the candidate: done while the
# sandbox waits in the pool, off a warm pool's critical path. Then the candidate's own path, then its teardown.
STAGES = (
    ("ahead", "uid allocation", "spawn", "uid_acquired"),
    ("ahead", "cgroup: a kept one, or a new one", "uid_acquired", "cgroup_ready"),
    ("ahead", "pipes, cgroup descriptors, send to the fork server", "cgroup_ready", "sent"),
    ("ahead", "fork server: new PID namespace and init, fork the candidate", "server_received", "candidate_begin"),
    ("ahead", "candidate: join the cgroup", "candidate_begin", "cgroup_joined"),
    ("ahead", "candidate: namespaces, tmpfs, /proc, loopback", "cgroup_joined", "isolated"),
    ("ahead", "harness: started report", "harness_begin", "harness_started"),
    ("path", "acquire a started sandbox from the pool", "acquire_begin", "acquired"),
    ("path", "send the code, hand the pipes to the judge, write the job", "acquired", "submitted"),
    ("path", "judge zygote: fork a child, or wake the one forked ahead", "judge_received", "judge_forked"),
    ("path", "harness: rlimits, uid drop", "harness_received", "harness_uid_dropped"),
    ("path", "harness: session keyring, seccomp filter", "harness_uid_dropped", "harness_set_up"),
    ("path", "judge child: wait for the job (the verifier writes it)", "judge_forked", "judge_job_read"),
    ("path", "judge child: set limits, prepare the test (or find it prepared)", "judge_job_read", "judge_prepared"),
    ("path", "judge child: then wait for the set-up report", "judge_prepared", "judge_set_up"),
    ("path", "candidate: exec its code", "judge_set_up", "judge_ready"),
    ("path", "judge: run the tests (3 calls)", "judge_ready", "judge_verdict"),
    ("path", "verdict to the verifier", "judge_verdict", "verdict"),
    ("path", "judge round trip (submit to verdict)", "submitted", "verdict"),
    ("teardown", "kill request to the fork server", "verdict", "server_killed"),
    ("teardown", "init killed, namespace torn down, init reaped", "server_killed", "server_reaped"),
    ("teardown", "reap report to the verifier", "server_reaped", "reaped"),
    ("teardown", "cgroup check and keep (or remove)", "reaped", "cgroup_released"),
    ("teardown", "uid release", "cgroup_released", "done"),
    ("total", "acquire to torn down (a worker's time per candidate)", "acquire_begin", "done"),
    ("total", "acquire to verdict", "acquire_begin", "verdict"),
)


def stage_table(records: list[dict]) -> list[tuple[str, str, float, int]]:
    """(part, stage, median ms, candidates measured) for each stage some candidates have both readings of."""
    rows = []
    for part, label, start, end in STAGES:
        spans = [1000 * (r[end] - r[start]) for r in records if start in r and end in r]
        if spans:
            rows.append((part, label, statistics.median(spans), len(spans)))
    for key, label in (
        ("cpu", "CPU of the candidate's cgroup"),
        ("judge_cpu_s", "CPU of the judge child (until its verdict)"),
        ("judge_prepare_cpu_s", "of which: reading the job, limits, preparing the test"),
        ("judge_faults", "page faults of the judge child (until its verdict)"),
        ("candidate_faults", "page faults of the candidate (and its children)"),
    ):
        if key == "cpu":
            values = [1000 * (r["cpu_after_s"] - r["cpu_before_s"]) for r in records if "cpu_after_s" in r]
        else:
            values = [(1 if "_faults" in key else 1000) * r[key] for r in records if key in r]
        if values:
            rows.append(("cpu", label, statistics.median(values), len(values)))
    samples = [r["clock_samples"] for r in records if "clock_samples" in r]
    if samples:
        rows.append(
            (
                "clock",
                "clock samples per candidate (a 50 ms poll each; 0: no poll waited)",
                statistics.median(samples),
                len(samples),
            )
        )
    return rows


def print_stage_table(records: list[dict]) -> None:
    print(f"\nper candidate, median over {len(records)} candidates (ms; wall clock unless CPU):")
    for part, label, value, count in stage_table(records):
        unit = "" if part == "clock" or label.startswith("page faults") else " ms"
        print(f"  {part:9s} {label:62s} {value:8.2f}{unit}  (n={count})")


def _timed(action, n: int) -> tuple[float, float]:
    """(median wall ms, CPU ms of this process and its waited children per run) of `action` run n times. The CPU
    comes from `os.times`, in ticks of 10 ms summed over the n runs: n must make the total many ticks."""
    spans = []
    before = os.times()
    for _ in range(n):
        start = time.perf_counter()
        action()
        spans.append(1000 * (time.perf_counter() - start))
    after = os.times()
    cpu = sum(after[:4]) - sum(before[:4])
    return statistics.median(spans), 1000 * cpu / n


def _bare_fork() -> None:
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)


CLONE_NEWNS, CLONE_NEWPID, CLONE_NEWIPC, CLONE_NEWNET = 0x00020000, 0x20000000, 0x08000000, 0x40000000
_LIBC = ctypes.CDLL(None, use_errno=True)


_PID_NAMESPACE: list[int] = []


def _own_pid_namespace() -> int:
    if not _PID_NAMESPACE:
        _PID_NAMESPACE.append(os.open("/proc/self/ns/pid", os.O_RDONLY))
    return _PID_NAMESPACE[0]


def _fork_into_namespaces() -> None:
    """A fork that gets what a candidate gets: PID, mount (a tmpfs on /tmp, its own /proc), IPC and network
    namespaces with loopback up. Run in a throwaway child, so that this process keeps its own namespaces."""
    if _LIBC.unshare(CLONE_NEWPID) != 0:
        raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWPID)")
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            if _LIBC.unshare(CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), "unshare")
            _LIBC.mount(None, b"/", None, 1 << 14 | 1 << 18, None)  # MS_REC | MS_PRIVATE
            _LIBC.mount(b"tmpfs", b"/tmp", b"tmpfs", 6, b"size=64m,mode=1777")
            _LIBC.mount(b"proc", b"/proc", b"proc", 14, None)
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
                fcntl.ioctl(probe, 0x8914, struct.pack("16sh22x", b"lo", 0x1 | 0x8 | 0x40))
        except OSError:
            code = 1
        os._exit(code)
    if _LIBC.setns(_own_pid_namespace(), CLONE_NEWPID) != 0:  # as the fork server does: back, for the next one
        raise OSError(ctypes.get_errno(), "setns")
    _, status = os.waitpid(pid, 0)
    if status != 0:
        raise OSError("the namespaced fork failed")


def _cgroup_round() -> None:
    from trl_grpo_ext.verifiers.sandbox.cgroups import CandidateGroup, cgroup_tree

    tree = cgroup_tree()
    CandidateGroup(tree, f"benchmark{next(_GROUP_NAMES)}", memory_bytes=1088 << 20, pids=65).remove()


_GROUP_NAMES = itertools.count()


def _in_child(action, n: int) -> tuple[float, float]:
    """`_timed(action, n)` in a throwaway child (unshare(CLONE_NEWPID) changes its caller's later children)."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read_end)
            os.write(write_end, "{} {}".format(*_timed(action, n)).encode())
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end) as result:
        said = result.read().split()
    os.waitpid(pid, 0)
    if len(said) != 2:
        raise RuntimeError("the namespaced forks failed")
    return float(said[0]), float(said[1])


def physical_limits(n: int) -> list[tuple[str, float, float]]:
    """(what, median wall ms, CPU ms per run) of the cheapest sandbox-like steps on this machine."""
    rows = [("bare fork of this warm interpreter (fork, _exit, waitpid)", *_timed(_bare_fork, n))]
    if os.geteuid() == 0:
        rows.append(
            (
                "fork into fresh namespaces (PID, mount + tmpfs + /proc, IPC, network)",
                *_in_child(_fork_into_namespaces, n),
            )
        )
    if os.geteuid() == 0:
        _cgroup_round()  # imports the package and makes this process's folder of groups first
        cgroup = _timed(_cgroup_round, n)
        rows.append(("a cgroup made, its limits set, removed (what a kept group spares)", *cgroup))
    bwrap = shutil.which("bwrap")
    if bwrap:
        true = shutil.which("true") or "/bin/true"
        command = [bwrap, "--ro-bind", "/", "/", "--unshare-all", "--die-with-parent", true]
        rows.append(
            ("fork and exec of bwrap --unshare-all true", *_timed(lambda: subprocess.run(command), n // 4 or 1))
        )
    return rows


class ProcessCpu:
    """CPU time per candidate of each process of the verifier, from cpuacct groups (cgroup v1, as root) made inside
    `own_group`, the benchmark's own group (code_verifier.OwnCpu), where the candidates' groups also live: the
    benchmark's process (the verifier's threads), the sandbox fork server (bubblewrap and its zygote, which forks
    each candidate, and each candidate's init, a clone of it), the judge (its zygote and every child), and the
    candidates' groups (each candidate and its children).
    The two servers are found among this process's children and moved once they run; what they start later stays
    in their group until it joins a candidate's."""

    ROLES = ("sandbox fork server", "judge")

    def __init__(self, own_group: Path):
        from trl_grpo_ext.verifiers.sandbox.cgroups import own_folder_name

        self.own = own_group
        self.groups = {role: own_group / role.replace(" ", "_") for role in self.ROLES}
        self.candidates = own_group / own_folder_name()  # sandbox/cgroups.py's folder, v1
        for group in self.groups.values():
            group.mkdir(exist_ok=True)
        for pid in _children(os.getpid()):
            role = "sandbox fork server" if _comm(pid) == "bwrap" else "judge"
            for member in _descendants(pid):
                try:
                    (self.groups[role] / "cgroup.procs").write_text(str(member))
                except OSError:  # it ended meanwhile
                    pass

    def read(self) -> dict[str, float]:
        usage = {role: _usage_s(group) for role, group in self.groups.items()}
        usage["candidates' cgroups (candidate and children)"] = _usage_s(self.candidates)
        usage["the verifier's process (its threads)"] = _usage_s(self.own) - sum(usage.values())
        return usage

    def close(self) -> None:
        """Remove the groups, once the servers have ended (the verifier closed)."""
        for group in self.groups.values():
            try:
                group.rmdir()
            except OSError:
                pass


def print_process_cpu(before: dict, after: dict, candidates: int) -> None:
    print(f"\nCPU per candidate by process ({candidates} candidates; cpuacct groups):")
    for role in sorted(after, key=lambda r: after[r] - before[r], reverse=True):
        print(f"  {role:62s} {1000 * (after[role] - before[role]) / candidates:8.2f} ms")
    print(f"  {'all of them':62s} {1000 * (sum(after.values()) - sum(before.values())) / candidates:8.2f} ms")


def _usage_s(group: Path) -> float:
    try:
        return int((group / "cpuacct.usage").read_text()) / 1e9
    except (OSError, ValueError):
        return 0.0


def _parents() -> dict[int, int]:
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                found[int(entry.name)] = int((entry / "stat").read_text().rpartition(")")[2].split()[1])
            except (OSError, ValueError, IndexError):
                pass
    return found


def _children(pid: int) -> list[int]:
    return [child for child, parent in _parents().items() if parent == pid]


def _descendants(pid: int) -> list[int]:
    parents = _parents()
    found, todo = [], [pid]
    while todo:
        found.append(todo.pop())
        todo += [child for child, parent in parents.items() if parent == found[-1]]
    return found


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""
