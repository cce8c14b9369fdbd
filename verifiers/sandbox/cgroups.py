"""A control group per candidate: its memory, processes and CPU bounded and measured as a whole, as container runtimes do.

Rlimits hold per process: memory held in memfd files or a tmpfs, or spread over forked children, escapes RLIMIT_AS,
and RLIMIT_CPU restarts with each child. A cgroup counts everything the candidate's processes hold and use:

- memory: every page charged to the group (anonymous memory, memfd, tmpfs files, page tables, socket buffers), no
  swap; at the limit the kernel's OOM killer acts inside the group, never on the trainer;
- processes: `pids.max` counts every process and thread of the group, whatever its uid;
- CPU: the usage of all its processes, the candidate's clock (code/clock.py); sibling groups share the CPU equally,
  so a candidate with 60 busy children gets no more of it than a neighbour with one.

One small interface over both layouts: cgroup v2 (one unified tree, the common case) and cgroup v1 (one tree per
controller: memory, pids, cpu, cpuacct). The groups of one training process live under a folder of their own,
`trl_grpo_ext-<PID namespace>-<pid>`: under the trainer's own cgroup on v1, next to it on v2 (v2 allows no process in
a cgroup whose controllers are delegated to children). A candidate joins its group before its code runs by writing
"0" to the `cgroup.procs` descriptors it is handed (the fork server's candidate, sandbox/fork.py) or through a `sh`
wrapper (`join_command`, for a sandbox process of its own).
"""

from __future__ import annotations

import atexit
import errno
import itertools
import logging
import os
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path

logger = logging.getLogger("trl_grpo_ext.verifiers")

V1_CONTROLLERS = ("memory", "pids", "cpu", "cpuacct")
V2_CONTROLLERS = ("memory", "pids", "cpu")
REMOVE_WAIT_S = 2.0  # how long a killed group's processes may take to be reaped before its folder can go


class CgroupUnavailable(RuntimeError):
    """No cgroup per candidate can be made here; the message says why."""


@dataclass(frozen=True)
class Layout:
    version: int  # 1 or 2
    folders: dict  # controller -> the folder of this process's groups in its tree (v2: the same folder for all)

    @property
    def parents(self) -> tuple[Path, ...]:
        return tuple(dict.fromkeys(self.folders.values()))


def _mounts() -> list[tuple[str, str, set[str]]]:
    """(mount point, file system type, super options) of the cgroup mounts, from /proc/self/mountinfo."""
    found = []
    with open("/proc/self/mountinfo") as lines:
        for line in lines:
            fields = line.split()
            dash = fields.index("-")
            fstype, options = fields[dash + 1], set(fields[dash + 3].split(","))
            if fstype in ("cgroup", "cgroup2"):
                found.append((fields[4].replace("\\040", " "), fstype, options))
    return found


def _own_cgroups() -> dict[str, str]:
    """Controller (or "" for v2) -> this process's cgroup path, from /proc/self/cgroup."""
    own = {}
    with open("/proc/self/cgroup") as lines:
        for line in lines:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            for controller in controllers.split(",") if controllers else [""]:
                own[controller] = path
    return own


def _layout_v2(mounts, own) -> Path:
    point = next((Path(p) for p, fstype, _ in mounts if fstype == "cgroup2"), None)
    if point is None or "" not in own:
        raise CgroupUnavailable("no cgroup v2 tree is mounted")
    here = point / own[""].lstrip("/")
    parent = here if here == point else here.parent  # a cgroup with processes cannot delegate its controllers
    available = set((parent / "cgroup.controllers").read_text().split())
    if missing := [c for c in V2_CONTROLLERS if c not in available]:
        raise CgroupUnavailable(f"cgroup v2 at {parent} lacks the controllers {', '.join(missing)}")
    enabled = set((parent / "cgroup.subtree_control").read_text().split())
    if not set(V2_CONTROLLERS) <= enabled:
        _write(parent / "cgroup.subtree_control", " ".join(f"+{c}" for c in V2_CONTROLLERS))
    return parent


def _layout_v1(mounts, own) -> dict:
    folders = {}
    for controller in V1_CONTROLLERS:
        point = next((Path(p) for p, fstype, opts in mounts if fstype == "cgroup" and controller in opts), None)
        if point is None or controller not in own:
            raise CgroupUnavailable(f"the cgroup v1 controller {controller!r} is not mounted")
        folders[controller] = point / own[controller].lstrip("/") / own_folder_name()
    return folders


class CgroupTree:
    """The folder holding this process's candidate groups (`own_folder_name`), made on first use."""

    def __init__(self):
        mounts, own = _mounts(), _own_cgroups()
        reasons = []
        try:
            parent = _layout_v2(mounts, own)
            folder = parent / own_folder_name()
            self.layout = Layout(2, dict.fromkeys(V2_CONTROLLERS, folder))
        except (CgroupUnavailable, OSError) as exc:
            reasons.append(f"v2: {exc}")
            try:
                folders = _layout_v1(mounts, own)
            except (CgroupUnavailable, OSError) as exc_v1:
                reasons.append(f"v1: {exc_v1}")
                raise CgroupUnavailable("; ".join(reasons)) from None
            self.layout = Layout(1, folders)
        self._names = itertools.count()
        self._lock = threading.Lock()
        self._weight = 1
        self._free: dict[tuple[int, int], list[CandidateGroup]] = {}
        try:
            for folder in self.layout.parents:
                _remove_left_by_dead_processes(folder.parent)
                folder.mkdir(exist_ok=True)
            if self.layout.version == 2:
                _write(self.layout.parents[0] / "cgroup.subtree_control", " ".join(f"+{c}" for c in V2_CONTROLLERS))
        except OSError as exc:
            self.close()
            raise CgroupUnavailable(f"cannot create {self.layout.parents[0]}: {exc}") from None

    @property
    def version(self) -> int:
        return self.layout.version

    def weigh(self, candidates: int) -> None:
        """Give the folder of all this process's candidates the CPU weight of `candidates` processes (the most that
        run at once): each candidate then weighs what one process does against the machine's other work, as it
        did without cgroups, however many processes it starts."""
        with self._lock:
            self._weight = max(self._weight, candidates)
            folder = self.layout.folders["cpu"]
            try:
                if self.layout.version == 1:
                    _write(folder / "cpu.shares", str(min(1024 * self._weight, 262144)))
                else:
                    _write(folder / "cpu.weight", str(min(100 * self._weight, 10000)))
            except OSError as exc:
                logger.warning("code verifier: cannot set the candidates' CPU weight in %s: %s", folder, exc)

    def group(self, memory_bytes: int, pids: int) -> CandidateGroup:
        """An empty group with these limits: one a finished candidate left empty, or a new one."""
        with self._lock:
            free = self._free.get((memory_bytes, pids))
            if free:
                return free.pop()
            name = f"c{next(self._names)}"
        return CandidateGroup(self, name, memory_bytes, pids)

    def judge_group(self, memory_bytes: int, pids: int, cpus: int) -> CandidateGroup:
        """The group of the judge process and its children, beside the candidates' (it shares their folder's CPU
        weight): memory and processes bounded as a whole, at most `cpus` CPUs of time. An out-of-memory kill there
        takes the process that allocated, not the whole group (the other judges serve other candidates)."""
        with self._lock:
            name = f"judge{next(self._names)}"
        group = CandidateGroup(self, name, memory_bytes, pids, oom_group=False)
        try:
            group.bound_cpu(cpus)
        except OSError as exc:
            group.remove()
            raise CgroupUnavailable(
                f"cannot set the CPU quota of the judge's cgroup {group.folders[0]}: {exc}"
            ) from None
        return group

    def recycle(self, group: CandidateGroup) -> None:
        """Keep an empty group for the next candidate: making and removing one costs the kernel more than a verdict
        on a trivial program takes. Nothing of the previous candidate is in it: no process (checked), no file (its
        /tmp went with its mount namespace), no CPU time (the clock counts from each start)."""
        with self._lock:
            self._free.setdefault(group.limits, []).append(group)

    def drain(self) -> None:
        """Remove the groups kept for reuse (a pool that closes)."""
        with self._lock:
            groups = [group for free in self._free.values() for group in free]
            self._free.clear()
        for group in groups:
            group.remove()

    def close(self) -> None:
        self.drain()
        for folder in self.layout.parents:
            try:
                folder.rmdir()
            except OSError:
                pass


class CandidateGroup:
    """One candidate's cgroup (or the judge's): limits set at creation, `join_fds` for its first process to enter it."""

    def __init__(self, tree: CgroupTree, name: str, memory_bytes: int, pids: int, oom_group: bool = True):
        self.tree = tree
        self.layout = layout = tree.layout
        self.limits = (memory_bytes, pids)
        self.folders = tuple(parent / name for parent in layout.parents)
        self.removed = False
        try:
            for folder in self.folders:
                folder.mkdir()
            memory = layout.folders["memory"] / name
            pids_folder = layout.folders["pids"] / name
            if layout.version == 2:
                _write(memory / "memory.max", str(memory_bytes))
                _write_if_present(memory / "memory.swap.max", "0")
                if oom_group:  # an OOM kill ends the whole candidate
                    _write_if_present(memory / "memory.oom.group", "1")
            else:
                _write(memory / "memory.limit_in_bytes", str(memory_bytes))
                _write_if_present(memory / "memory.memsw.limit_in_bytes", str(memory_bytes))  # no swap either
            _write(pids_folder / "pids.max", str(pids))
        except OSError as exc:
            self.remove()
            raise CgroupUnavailable(f"cannot set up the candidate's cgroup {self.folders[0]}: {exc}") from None
        self._usage = layout.folders["cpuacct" if layout.version == 1 else "cpu"] / name
        self._cpu = layout.folders["cpu"] / name
        self._threads = pids_folder / ("tasks" if layout.version == 1 else "cgroup.threads")
        self._memory = memory
        self.memory_bytes = memory_bytes  # the bound now: `bound_memory` may lower it for one candidate

    def bound_memory(self, memory_bytes: int) -> None:
        """Bound the group's memory at `memory_bytes` for this candidate (a dataset row's own limit, below the pool's);
        `release` restores the pool's before the group serves another. OSError where the kernel refuses it (v1: the
        group already holds more)."""
        value = str(memory_bytes)
        if self.layout.version == 2:
            _write(self._memory / "memory.max", value)
        else:
            # v1 keeps memory.limit_in_bytes <= memory.memsw.limit_in_bytes at each write: lower it first, raise last.
            limit, memsw = self._memory / "memory.limit_in_bytes", self._memory / "memory.memsw.limit_in_bytes"
            if memory_bytes < self.memory_bytes:
                _write(limit, value)
                _write_if_present(memsw, value)
            else:
                _write_if_present(memsw, value)
                _write(limit, value)
        self.memory_bytes = memory_bytes

    def bound_cpu(self, cpus: int) -> None:
        """At most `cpus` CPUs of time, over each 100 ms period (a CFS quota)."""
        period = 100_000
        if self.layout.version == 2:
            _write(self._cpu / "cpu.max", f"{cpus * period} {period}")
        else:
            _write(self._cpu / "cpu.cfs_period_us", str(period))
            _write(self._cpu / "cpu.cfs_quota_us", str(cpus * period))

    def join_fds(self) -> list[int]:
        """Descriptors of each folder's `cgroup.procs`, open for writing: a process that writes "0" to each joins."""
        fds = []
        try:
            for folder in self.folders:
                fds.append(os.open(folder / "cgroup.procs", os.O_WRONLY | os.O_CLOEXEC))
        except OSError:
            for fd in fds:
                os.close(fd)
            raise
        return fds

    def move(self, pid: int) -> None:
        """Move process `pid` (all its threads) into the group."""
        for folder in self.folders:
            _write(folder / "cgroup.procs", str(pid))

    def cpu_s(self) -> float:
        """CPU time used by every process that was ever in the group, in seconds."""
        if self.layout.version == 1:
            return int((self._usage / "cpuacct.usage").read_text()) / 1e9
        for line in (self._usage / "cpu.stat").read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == "usage_usec":
                return int(value) / 1e6
        return 0.0

    def threads(self) -> list[int]:
        try:
            return [int(t) for t in self._threads.read_text().split()]
        except (OSError, ValueError):
            return []

    def throttled_s(self) -> float:
        """The longest time the group or a cgroup above it was held off the CPU by a quota (`cpu.stat`), in seconds
        since each was made: a container's CPU limit shows here, not in the machine's idle time."""
        folder, longest = self._cpu, 0.0
        while (stat := folder / "cpu.stat").exists() and folder != folder.parent:
            for line in stat.read_text().splitlines():
                key, _, value = line.partition(" ")
                if key in ("throttled_time", "throttled_usec"):  # v1: nanoseconds; v2: microseconds
                    longest = max(longest, int(value) / (1e9 if key == "throttled_time" else 1e6))
            folder = folder.parent
        return longest

    def runnable(self) -> bool:
        """Whether a thread of the group is running or waiting for a CPU (or in uninterruptible I/O) right now."""
        return any(thread_runnable(tid) for tid in self.threads())

    def kill(self) -> None:
        """SIGKILL every process of the group (v2's cgroup.kill where the kernel has it)."""
        if self.layout.version == 2 and _write_if_present(self.folders[0] / "cgroup.kill", "1"):
            return
        for tid in self.threads():
            try:
                os.kill(tid, signal.SIGKILL)
            except OSError:
                pass

    def release(self) -> None:
        """The candidate has ended: keep the group for the next one if it is empty, else kill and remove it."""
        if not self.removed and not self.threads():
            if self.memory_bytes != self.limits[0]:
                try:
                    self.bound_memory(self.limits[0])
                except OSError:
                    self.remove()
                    return
            self.tree.recycle(self)
        else:
            self.remove()

    def remove(self) -> bool:
        """Kill what is left and remove the group's folders; False if some could not be removed in time."""
        if self.removed:
            return True
        deadline = time.monotonic() + REMOVE_WAIT_S
        left = list(self.folders)
        while left:
            for folder in list(left):
                try:
                    folder.rmdir()
                    left.remove(folder)
                except FileNotFoundError:
                    left.remove(folder)
                except OSError as exc:
                    if exc.errno != errno.EBUSY:
                        left.remove(folder)
            if not left or time.monotonic() > deadline:
                break
            self.kill()
            time.sleep(0.005)
        if left:
            logger.error("code verifier: cannot remove the candidate cgroups %s", ", ".join(map(str, left)))
        self.removed = not left
        return self.removed


def _pid_namespace() -> int:
    return os.stat("/proc/self/ns/pid").st_ino


def own_folder_name() -> str:
    """`trl_grpo_ext-<PID namespace>-<pid>`: a pid names a process only within its PID namespace (a container, `unshare
    --pid`), and training processes of several namespaces may share one cgroup tree."""
    return f"trl_grpo_ext-{_pid_namespace()}-{os.getpid()}"


def _remove_left_by_dead_processes(parent: Path) -> None:
    """The empty groups of training processes that died without removing them (killed, or crashed). Only those of this
    PID namespace: another namespace's pids cannot be looked up here (and its processes' folders must stay)."""
    namespace = str(_pid_namespace())
    for folder in parent.glob("trl_grpo_ext-*-*"):
        _, folder_namespace, pid = folder.name.split("-", 2)
        if folder_namespace != namespace or not pid.isdigit() or os.path.exists(f"/proc/{pid}"):
            continue
        for group in [*folder.glob("c*"), *folder.glob("judge*"), folder]:
            try:
                group.rmdir()
            except OSError:  # still holds a process, or another process removed it first
                pass


# Kernel functions (`/proc/<tid>/wchan`) of an uninterruptible sleep that waits for the disk or for memory: the
# machine's time. Any other one (a parent held in `vfork` while its child sleeps: `kernel_clone`) is the candidate's.
PAGING_WAITS = ("io_schedule", "folio", "page", "filemap", "swap", "bit_wait_io", "blk", "rq_qos", "shrink", "reclaim")


def thread_runnable(tid: int) -> bool:
    """R (running or runnable) in /proc/<tid>/stat, or D (uninterruptible) while it pages or waits for the disk;
    False once it is gone. A D sleep of any other kind accrues no CPU time and no idle time: counted as busy, it
    would stop the candidate's clock, so it counts as the candidate's own sleep."""
    try:
        with open(f"/proc/{tid}/stat", "rb") as stat:
            state = stat.read().rpartition(b")")[2].split(maxsplit=1)[0]
    except (OSError, IndexError):
        return False
    return state == b"R" or (state == b"D" and _paging(tid))


def _paging(tid: int) -> bool:
    try:
        with open(f"/proc/{tid}/wchan") as wchan:
            where = wchan.read()
    except OSError:
        return False
    return any(name in where for name in PAGING_WAITS)


def join_command(group: CandidateGroup, command: list[str]) -> list[str]:
    """`command` run by a shell that first joins `group` (writes "0" to each folder's `cgroup.procs`), then execs it."""
    procs = [str(folder / "cgroup.procs") for folder in group.folders]
    script = 'n=$1; shift; while [ "$n" -gt 0 ]; do echo 0 > "$1" || exit 125; shift; n=$((n - 1)); done; exec "$@"'
    return ["/bin/sh", "-c", script, "sh", str(len(procs)), *procs, *command]


def _write(path: Path, value: str) -> None:
    with open(path, "w") as f:
        f.write(value)


def _write_if_present(path: Path, value: str) -> bool:
    try:
        _write(path, value)
    except FileNotFoundError:
        return False
    return True


_TREE: CgroupTree | None = None
_TREE_ERROR: str | None = None
_TREE_LOCK = threading.Lock()


def cgroup_tree() -> CgroupTree:
    """This process's tree of candidate groups, made once; CgroupUnavailable (with why) where none can be made."""
    global _TREE, _TREE_ERROR
    with _TREE_LOCK:
        if _TREE is None and _TREE_ERROR is None:
            try:
                _TREE = CgroupTree()
                atexit.register(_TREE.close)
            except (CgroupUnavailable, OSError) as exc:
                _TREE_ERROR = str(exc)
        if _TREE is None:
            raise CgroupUnavailable(_TREE_ERROR)
        return _TREE


def candidate_cgroups(wanted: bool) -> CgroupTree | None:
    """The tree of candidate groups, or None when `cgroup=False` was asked for by name (then with a warning).
    RuntimeError, saying what to do, where cgroups are wanted but cannot be made."""
    if not wanted:
        logger.warning(
            "code verifier: cgroup=False: each candidate is bounded by per-process rlimits only. Memory held in "
            "memfd files, a tmpfs or spread over child processes is not bounded, a candidate's children each get "
            "the CPU limit anew, its deadline is a wall-clock one (the machine's load can time out a correct "
            "program), and a candidate with many busy processes takes the CPU from its neighbours."
        )
        return None
    try:
        return cgroup_tree()
    except CgroupUnavailable as exc:
        raise RuntimeError(
            f"code verifier: a cgroup per candidate is needed to bound its memory, processes and CPU as a whole, but "
            f"none can be made here ({exc}). Run the training as root on a machine with cgroup v2 (memory, pids and "
            "cpu controllers) or v1 (memory, pids, cpu, cpuacct) mounted under /sys/fs/cgroup, or pass cgroup=False "
            "to accept per-process rlimits only (see docs/code_verifier_sandbox.md, A cgroup per candidate)."
        ) from None
