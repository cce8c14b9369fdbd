"""Isolation for untrusted candidate code: detection of what this machine allows, and warm sandbox processes.

Two levels, the strongest that works is picked at run time and reported in every result:

- "bwrap": bubblewrap namespaces (PID, network, IPC, UTS, mount): a read-only view of /usr and the Python install
  only (no /home, /root, /work, /etc), a private size-limited /tmp, no network device but loopback, an empty
  environment; when the PID namespace's first process ends, the kernel kills every process left in it.
- "rlimits": a plain process group with resource limits and an empty environment. It does NOT hide the file system,
  block the network or catch processes that leave the process group; a warning says so.

At both levels, when the verifier runs as root, the harness drops to a dedicated unprivileged uid (one per live
sandbox) after setting RLIMIT_NPROC: that limit is ignored for root, but holds for such a uid, so a fork bomb stops at
`processes`; after the verdict every process of that uid is killed. Other limits are rlimits set by the harness
before the candidate runs: CPU seconds, address space, file size, open files, no core dumps.
"""

from __future__ import annotations

import json
import logging
import os
import pwd
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

logger = logging.getLogger("trl_grpo_ext.verifiers")

HERE = Path(__file__).resolve().parent
SANDBOX_FILES = ("code_harness.py", "code_protocol.py")
INSIDE_DIR = "/opt/trl_grpo_ext_sandbox"
ISOLATION_CHOICES = ("auto", "bwrap", "rlimits")
FIRST_SANDBOX_UID = 61000
SANDBOX_UID_COUNT = 1024


@dataclass(frozen=True)
class Limits:
    """What one sandbox run may use. `wall_s` is enforced by the verifier, the rest by rlimits in the harness."""

    wall_s: float = 10.0
    cpu_s: int = 10
    memory_mb: int = 1024
    processes: int = 64
    file_mb: int = 16
    tmp_mb: int = 64
    open_files: int = 256
    output_bytes: int = 8 << 20

    def rlimits(self, nproc: bool) -> dict:
        mb = 1 << 20
        limits = {
            "RLIMIT_CPU": (self.cpu_s, self.cpu_s + 1),
            "RLIMIT_AS": (self.memory_mb * mb, self.memory_mb * mb),
            "RLIMIT_FSIZE": (self.file_mb * mb, self.file_mb * mb),
            "RLIMIT_NOFILE": (self.open_files, self.open_files),
            "RLIMIT_CORE": (0, 0),
        }
        if nproc:
            limits["RLIMIT_NPROC"] = (self.processes, self.processes)
        return limits


@dataclass(frozen=True)
class Isolation:
    level: str  # "bwrap" or "rlimits"
    dedicated_uid: bool  # processes run as an unprivileged uid of their own: RLIMIT_NPROC holds, kill-all by uid
    python: str
    warning: str | None = None

    @property
    def process_limit(self) -> bool:
        return self.dedicated_uid

    def describe(self) -> dict:
        return {**asdict(self), "process_limit": self.process_limit}


def _readable_by_others(path: Path) -> bool:
    """Can an unprivileged uid reach `path` (execute bit for others on every parent, read on the file)?"""
    for parent in [*reversed(path.parents)][1:] + [path]:
        mode = parent.stat().st_mode
        if not mode & (0o001 if parent != path else 0o004):
            return False
    return True


def sandbox_python() -> str:
    """The base interpreter (not the virtualenv's): the sandbox runs it with -I -S, standard library only."""
    return os.path.realpath(getattr(sys, "_base_executable", None) or sys.executable)


def bwrap_command(python: str, tmp_mb: int) -> list[str]:
    prefix = str(Path(python).resolve().parent.parent)
    cmd = ["bwrap", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
    cmd += ["--die-with-parent", "--new-session", "--ro-bind", "/usr", "/usr"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            cmd += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            cmd += ["--ro-bind", top, top]
    if not prefix.startswith("/usr/"):
        cmd += _open_parents(prefix) + ["--ro-bind", prefix, prefix]
    cmd += _open_parents(f"{INSIDE_DIR}/x")
    for name in SANDBOX_FILES:
        cmd += ["--ro-bind", str(HERE / name), f"{INSIDE_DIR}/{name}"]
    cmd += [
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--size",
        str(tmp_mb << 20),
        "--tmpfs",
        "/tmp",
        "--chmod",
        "1777",
        "/tmp",
    ]
    cmd += ["--clearenv", "--chdir", "/tmp"]
    for key, value in sandbox_env("/tmp").items():
        cmd += ["--setenv", key, value]
    if os.geteuid() == 0:  # keep only what the uid drop needs
        cmd += ["--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    else:
        cmd += ["--unshare-user"]
    return cmd


def _open_parents(path: str) -> list[str]:
    """bwrap creates missing parents of a mount point with mode 0700; the uid the candidate runs as needs 0755."""
    cmd = []
    for parent in reversed(Path(path).parents[:-1]):
        cmd += ["--perms", "0755", "--dir", str(parent)]
    return cmd


def sandbox_env(home: str) -> dict:
    # Two malloc arenas: glibc reserves 64 MiB of address space per thread arena, which RLIMIT_AS would count.
    return {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": home, "LANG": "C.UTF-8", "MALLOC_ARENA_MAX": "2"}


_DETECTED: dict[tuple[str, str], Isolation] = {}
_DETECT_LOCK = threading.Lock()


def detect_isolation(requested: str = "auto", python: str | None = None) -> Isolation:
    """The strongest isolation that works here, probed once per process by starting a real sandbox."""
    if requested not in ISOLATION_CHOICES:
        raise ValueError(f"isolation={requested!r} is not supported. Valid choices: {', '.join(ISOLATION_CHOICES)}.")
    python = python or sandbox_python()
    with _DETECT_LOCK:
        if (requested, python) not in _DETECTED:
            _DETECTED[(requested, python)] = _detect(requested, python)
    return _DETECTED[(requested, python)]


def _detect(requested: str, python: str) -> Isolation:
    root = os.geteuid() == 0
    problem = "bwrap is not installed (apt-get install -y bubblewrap)" if shutil.which("bwrap") is None else None
    if requested != "rlimits" and problem is None:
        probe = (
            f"import os; os.setgroups([]); os.setgid({FIRST_SANDBOX_UID}); os.setuid({FIRST_SANDBOX_UID})"
            if root
            else ""
        )
        run = subprocess.run([*bwrap_command(python, 1), python, "-I", "-S", "-c", probe], capture_output=True)
        if run.returncode == 0:
            return Isolation("bwrap", dedicated_uid=root, python=python)
        problem = f"bwrap cannot start a sandbox here: {run.stderr.decode(errors='replace').strip()[:300]}"
    if requested == "bwrap":
        raise RuntimeError(f"isolation='bwrap' was requested but {problem}. Use isolation='auto' to fall back.")
    if root:  # never run untrusted code as root: the harness must be able to drop to a dedicated uid
        python = _python_for_others(python)
        if python is None:
            raise RuntimeError(
                f"refusing to run candidate code as root without isolation ({problem or 'rlimits requested'}) and "
                "without an interpreter and harness that an unprivileged uid can read: install bubblewrap "
                "(apt-get install -y bubblewrap) or pass python= a world-readable interpreter."
            )
    warning = (
        f"code verifier: weak isolation ({problem or 'requested'}): the candidate can read the file system, use the "
        "network and leave files in world-writable folders"
        + ("" if root else "; no process limit, and processes that leave the process group are not killed")
    )
    logger.warning(warning)
    return Isolation("rlimits", dedicated_uid=root, python=python, warning=warning)


def _python_for_others(python: str) -> str | None:
    """`python`, or else a system interpreter of the same version, if an unprivileged uid can run it and the harness."""
    if not all(_readable_by_others(HERE / name) for name in SANDBOX_FILES):
        return None
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for candidate in (python, shutil.which(version, path="/usr/local/bin:/usr/bin:/bin")):
        if candidate and _readable_by_others(Path(os.path.realpath(candidate))):
            return os.path.realpath(candidate)
    return None


class UidPool:
    """Dedicated uids, one per live sandbox, so that RLIMIT_NPROC and kill-by-uid see only that sandbox."""

    def __init__(self):
        self.lock = threading.Lock()
        self.free = [u for u in range(FIRST_SANDBOX_UID, FIRST_SANDBOX_UID + SANDBOX_UID_COUNT) if not _uid_exists(u)]

    def acquire(self) -> int:
        with self.lock:
            if not self.free:
                raise RuntimeError("all sandbox uids are in use; lower `workers`")
            return self.free.pop(0)

    def release(self, uid: int) -> None:
        with self.lock:
            self.free.append(uid)


def _uid_exists(uid: int) -> bool:
    try:
        pwd.getpwuid(uid)
        return True
    except KeyError:
        return False


UIDS = UidPool()


def pids_of_uid(uid: int) -> list[int]:
    """Processes whose real uid is `uid` (read from /proc/PID/status, which a process cannot hide by prctl)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status", "rb") as status:
                for line in status:
                    if line.startswith(b"Uid:"):
                        if int(line.split()[1]) == uid:
                            found.append(int(entry))
                        break
        except (OSError, ValueError, IndexError):
            continue
    return found


def kill_uid(uid: int, patience_s: float = 5.0) -> bool:
    """SIGKILL every process of `uid` until none is left; False if some survived `patience_s`."""
    deadline = time.monotonic() + patience_s
    while pids := pids_of_uid(uid):
        if time.monotonic() > deadline:
            return False
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.002)
    return True


class Sandbox:
    """One started harness process, waiting for its candidate. Used once, then `finish()` kills what is left.

    Pipes: `request_w` (init message, then the judge's requests), `reply_r` (the harness's replies), `stdout_r` (the
    candidate's stdout, read only in script mode).
    """

    def __init__(self, isolation: Isolation, limits: Limits):
        self.isolation = isolation
        self.limits = limits
        self.uid = UIDS.acquire() if isolation.dedicated_uid else None
        self.workdir = None
        request_r, self.request_w = os.pipe()
        self.reply_r, reply_w = os.pipe()
        self.stdout_r, stdout_w = os.pipe()
        try:
            cmd, env, cwd = self._command()
            harness_limits = {"rlimits": limits.rlimits(self.uid is not None), "uid": self.uid, "workdir": cwd}
            cmd += [str(request_r), str(reply_w), json.dumps(harness_limits)]
            self.proc = subprocess.Popen(
                cmd, stdin=subprocess.DEVNULL, stdout=stdout_w, stderr=subprocess.DEVNULL, pass_fds=(request_r, reply_w),
                env=env, cwd=None if isolation.level == "bwrap" else cwd, process_group=0,
            )  # fmt: skip
        except BaseException:
            self._close_fds(self.request_w, self.reply_r, self.stdout_r)
            self._release()
            raise
        finally:
            self._close_fds(request_r, reply_w, stdout_w)

    def _command(self) -> tuple[list[str], dict, str]:
        python = self.isolation.python
        if self.isolation.level == "bwrap":
            return (
                [*bwrap_command(python, self.limits.tmp_mb), python, "-I", "-S", f"{INSIDE_DIR}/code_harness.py"],
                {},
                "/tmp",
            )
        self.workdir = tempfile.mkdtemp(prefix="trl_grpo_ext_code_")
        if self.uid is not None:
            os.chown(self.workdir, self.uid, self.uid)
        os.chmod(self.workdir, 0o700)
        return [python, "-I", "-S", str(HERE / "code_harness.py")], sandbox_env(self.workdir), self.workdir

    def send(self, message: dict) -> None:
        from .code_protocol import write_message

        write_message(self.request_w, message)

    def read_stdout(self, deadline: float) -> tuple[bytes, str | None]:
        """Everything the candidate prints until it closes stdout; the second item is "timeout", "output_limit"."""
        chunks, size = [], 0
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return b"".join(chunks), "timeout"
            if not select.select([self.stdout_r], [], [], remaining)[0]:
                continue
            chunk = os.read(self.stdout_r, 1 << 16)
            if not chunk:
                return b"".join(chunks), None
            chunks.append(chunk)
            size += len(chunk)
            if size > self.limits.output_bytes:
                return b"".join(chunks), "output_limit"

    def wait(self, deadline: float) -> int | None:
        try:
            return self.proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            return None

    def finish(self, grace_s: float = 0.0) -> None:
        """Kill the sandbox and every process it started; remove its files. Safe to call more than once."""
        self._close_fds(self.request_w, self.reply_r, self.stdout_r)
        self.request_w = self.reply_r = self.stdout_r = -1
        exited = grace_s > 0 and self.wait(time.monotonic() + grace_s) is not None
        if not exited and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()
        # A PID namespace dies with its first process; without one (or when killed) find stragglers by uid.
        if self.uid is not None and (not exited or self.isolation.level != "bwrap") and not kill_uid(self.uid):
            logger.error("code verifier: processes of sandbox uid %d survived SIGKILL; not reusing it", self.uid)
            self.uid = None
        if self.workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None
        self._release()

    def _release(self) -> None:
        if self.uid is not None:
            UIDS.release(self.uid)
            self.uid = None

    @staticmethod
    def _close_fds(*fds: int) -> None:
        for fd in fds:
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass


class SandboxPool:
    """Keeps `size` sandboxes started ahead, so a verification does not wait for an interpreter to boot."""

    def __init__(self, isolation: Isolation, limits: Limits, size: int):
        self.isolation = isolation
        self.limits = limits
        self.size = size
        self.idle: list[Sandbox] = []
        self.lock = threading.Lock()
        self.closed = False

    def acquire(self) -> Sandbox:
        with self.lock:
            sandbox = self.idle.pop(0) if self.idle else None
        if sandbox is None or sandbox.proc.poll() is not None:  # a warm one that died is no use
            if sandbox is not None:
                sandbox.finish()
            sandbox = Sandbox(self.isolation, self.limits)
        self._refill()
        return sandbox

    def _refill(self) -> None:
        while not self.closed:
            with self.lock:
                if len(self.idle) >= self.size:
                    return
            fresh = Sandbox(self.isolation, self.limits)
            with self.lock:
                if not self.closed:
                    self.idle.append(fresh)
                    continue
            fresh.finish()  # closed meanwhile

    def close(self) -> None:
        self.closed = True
        with self.lock:
            idle, self.idle = self.idle, []
        for sandbox in idle:
            sandbox.finish()
