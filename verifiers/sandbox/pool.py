"""Warm sandboxes for untrusted candidate code, and the pool that keeps them started ahead.

What isolation a sandbox gets is decided in sandbox/isolation.py ("bwrap" namespaces, or "rlimits" only when asked
for by name); which uid it runs as, when the verifier runs as root, in sandbox/uids.py (one per candidate, unique
across the machine). Inside, the harness sets rlimits before the candidate runs: CPU seconds, address space, file
size, open files, no core dumps, and RLIMIT_NPROC where it holds for the sandbox alone.

Under bubblewrap as root, the pool forks each candidate from a warm interpreter in one long-lived sandbox, with fresh
namespaces, tmp and uid of its own (sandbox/fork.py); otherwise each candidate gets a sandbox process of its own
(`Sandbox`, below). What the pool hands out behaves the same either way (sandbox/process.py).
"""

from __future__ import annotations

import json
import logging
import os
import select
import shutil
import signal
import subprocess
import tempfile
import threading
import time

from ..code.standalone import SCRIPT_FLAGS, STANDALONE_DIR
from .cgroups import CgroupTree, CgroupUnavailable, join_command
from .fork import ForkServer, forks_candidates
from .isolation import (
    INSIDE_DIR,
    ISOLATION_CHOICES,
    Isolation,
    bwrap_command,
    candidate_site_packages,
    detect_isolation,
    open_sandbox_files,
    sandbox_env,
    sandbox_python,
)
from .process import SAID_CHARS, START_TIMEOUT_S, Limits, SandboxError, SandboxProcess
from .uids import FIRST_SANDBOX_UID, SANDBOX_UID_COUNT, UIDS

logger = logging.getLogger("trl_grpo_ext.verifiers")


class Sandbox(SandboxProcess):
    """A harness process of its own (bubblewrap, or the rlimits level), started for one candidate.

    Besides the pipes of `SandboxProcess`, `stderr_r` is read only when the sandbox fails to start.
    """

    def __init__(self, isolation: Isolation, limits: Limits, cgroups: CgroupTree | None = None):
        super().__init__(limits)
        self.isolation = isolation
        self.uid = UIDS.acquire() if isolation.dedicated_uid else None
        # No PID namespace here: a reaper process (standalone/reaper.py) adopts what the candidate leaves, so that
        # neither the machine's init nor this process has to reap it.
        self.reaper = self.uid is not None and isolation.level != "bwrap"
        self.workdir = None
        self.stderr_r = -1
        self.files = []  # the sandbox files, copied in by bubblewrap at start
        try:
            request_r, self.request_w = os.pipe()
            self.reply_r, reply_w = os.pipe()
            self.stdout_r, stdout_w = os.pipe()
            self.stderr_r, stderr_w = os.pipe()  # what bwrap or Python say if they cannot start; silenced after
        except OSError as exc:
            self.finish()
            raise SandboxError(f"no pipes for a sandbox: {exc}") from exc
        try:
            self.cgroup = limits.cgroup(cgroups) if cgroups is not None else None
            cmd, env, cwd = self._command()
            harness_limits = {
                "rlimits": limits.rlimits(isolation.process_limit is not None), "uid": self.uid, "workdir": cwd,
                "path": candidate_site_packages(isolation.level, isolation.site_packages),
            }  # fmt: skip
            cmd += [str(request_r), str(reply_w), json.dumps(harness_limits)]
            # bubblewrap forks at once, and the reaper forks the harness: either joins the group through a shell
            # before it starts (the reaper stays out). The harness alone (the rlimits level, not as root) is moved in
            # just after: it runs no candidate code before it is sent some.
            wrap = self.cgroup is not None and (isolation.level == "bwrap" or self.reaper)
            if wrap:
                cmd = join_command(self.cgroup, cmd)
            if self.reaper:
                reaper = STANDALONE_DIR / "reaper.py"
                cmd = [isolation.python, *SCRIPT_FLAGS, "-S", str(reaper), str(self.uid), *cmd]
            self.proc = subprocess.Popen(
                cmd, stdin=subprocess.DEVNULL,
                stdout=stdout_w, stderr=stderr_w, pass_fds=(request_r, reply_w, *self.files),
                env=env, cwd=None if isolation.level == "bwrap" else cwd, start_new_session=True,
            )  # fmt: skip
            if self.cgroup is not None and not wrap:
                self.cgroup.move(self.proc.pid)
        except BaseException as exc:
            self.proc = None
            self.finish()
            if isinstance(exc, (OSError, CgroupUnavailable)):
                raise SandboxError(f"cannot start a sandbox: {exc}") from exc
            raise
        finally:
            self._close_fds(request_r, reply_w, stdout_w, stderr_w, *self.files)
            self.files = []

    def _start_failure(self) -> str:
        said = self._stderr().strip()
        return f"exit status {self._status()}" + (f": {said[-SAID_CHARS:]}" if said else "")

    def _status(self) -> int | None:
        try:
            return self.proc.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            return None

    def _stderr(self) -> str:
        if self.stderr_r < 0 or not select.select([self.stderr_r], [], [], 0.05)[0]:
            return ""
        try:
            return os.read(self.stderr_r, 1 << 14).decode(errors="replace")
        except OSError:
            return ""

    def _command(self) -> tuple[list[str], dict, str]:
        python = self.isolation.python
        if self.isolation.level == "bwrap":
            self.files = open_sandbox_files()
            limits = self.limits
            bwrap = bwrap_command(
                python, limits.tmp_mb, self.isolation.site_packages, files=self.files, shm_mb=limits.shm_mb
            )
            return (
                [*bwrap, *[python, *SCRIPT_FLAGS, "-S", f"{INSIDE_DIR}/harness.py"]],
                {},
                "/tmp",
            )
        self.workdir = tempfile.mkdtemp(prefix="trl_grpo_ext_code_")
        if self.uid is not None:
            os.chown(self.workdir, self.uid, self.uid)
        os.chmod(self.workdir, 0o700)
        command = [python, *SCRIPT_FLAGS, "-S", str(STANDALONE_DIR / "harness.py")]
        return command, sandbox_env(self.workdir), self.workdir

    def wait(self, deadline: float) -> int | None:
        try:
            return self.proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            return None

    def ended(self) -> bool:
        return self.proc.poll() is not None

    def finish(self, grace_s: float = 0.0) -> None:
        """Kill the sandbox and every process it started; remove its files. Safe to call more than once."""
        self._close_fds(self.request_w, self.reply_r, self.stdout_r, self.stderr_r)
        self.request_w = self.reply_r = self.stdout_r = self.stderr_r = -1
        if getattr(self, "proc", None) is not None:
            exited = grace_s > 0 and self.wait(time.monotonic() + grace_s) is not None
            if not exited and self.proc.poll() is None:
                try:
                    if self.reaper:
                        self.proc.terminate()  # the reaper kills the harness and everything of its uid, then ends
                    else:
                        os.killpg(self.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.proc.wait()
        else:
            exited = False
        if self.cgroup is not None:
            self.cgroup.release()
            self.cgroup = None
        # A PID namespace dies with its first process; without one (or when killed) find stragglers by uid.
        if self.uid is not None and (not exited or self.isolation.level != "bwrap") and not UIDS.kill(self.uid):
            logger.error("code verifier: processes of sandbox uid %d survived SIGKILL; not reusing it", self.uid)
            UIDS.discard(self.uid)
            self.uid = None
        if self.workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None
        if self.uid is not None:
            UIDS.release(self.uid)
            self.uid = None


class SandboxPool:
    """Keeps `size` sandboxes started ahead, so a verification does not wait for an interpreter to boot."""

    def __init__(self, isolation: Isolation, limits: Limits, size: int, cgroups: CgroupTree | None = None):
        self.isolation = isolation
        self.limits = limits
        self.size = size
        self.cgroups = cgroups  # a cgroup per candidate from this tree; None only when asked for by name
        if cgroups is not None:
            cgroups.weigh(size)
        self.idle: list[SandboxProcess] = []
        self.lock = threading.Lock()
        self.closed = False
        self.server = ForkServer(isolation, limits, cgroups) if forks_candidates(isolation) else None

    def _new(self) -> SandboxProcess:
        return self.server.spawn() if self.server is not None else Sandbox(self.isolation, self.limits, self.cgroups)

    def acquire(self, refill: bool = True) -> SandboxProcess:
        """A started sandbox: a warm one, or else a fresh one; SandboxError if the fresh one does not start.
        `refill=False`: the caller calls `refill()` itself once the candidate runs, off the candidate's path."""
        with self.lock:
            sandbox = self.idle.pop(0) if self.idle else None
        fresh = sandbox is None
        if fresh:
            sandbox = self._new()
        try:
            if refill:
                self._refill()  # the next ones boot while this one is used
        except BaseException:
            sandbox.finish()
            raise
        try:
            self._check_started(sandbox)  # finishes the sandbox if it failed
        except SandboxError as exc:
            if fresh:
                raise
            logger.warning("code verifier: %s; starting another", exc)
            sandbox = self._new()
            self._check_started(sandbox)
        return sandbox

    @staticmethod
    def _check_started(sandbox: SandboxProcess) -> None:
        sandbox.wait_started(time.monotonic() + START_TIMEOUT_S)
        if sandbox.ended():
            sandbox.finish()
            raise SandboxError("a started sandbox ended before it was given a candidate")

    def refill(self) -> None:
        """Start sandboxes until `size` wait in the pool, while a candidate runs. A failure here is logged, not
        raised: it is not the running candidate's, and the next `acquire` starts a fresh one or says why not."""
        try:
            self._refill()
        except (SandboxError, OSError) as exc:
            logger.warning("code verifier: cannot start a sandbox ahead: %s", exc)

    def _refill(self) -> None:
        while not self.closed:
            with self.lock:
                if len(self.idle) >= self.size:
                    return
            fresh = self._new()
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
        if self.server is not None:
            self.server.close()
        if self.cgroups is not None:
            self.cgroups.drain()


__all__ = [
    "FIRST_SANDBOX_UID",
    "ISOLATION_CHOICES",
    "SANDBOX_UID_COUNT",
    "Isolation",
    "Limits",
    "START_TIMEOUT_S",
    "Sandbox",
    "SandboxError",
    "SandboxProcess",
    "SandboxPool",
    "detect_isolation",
    "sandbox_python",
]
