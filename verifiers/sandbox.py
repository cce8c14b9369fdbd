"""Warm sandbox processes for untrusted candidate code, and the pool that keeps them started ahead.

What isolation a sandbox gets is decided in sandbox_isolation.py ("bwrap" namespaces, or "rlimits" only when asked
for by name); which uid it runs as, when the verifier runs as root, in sandbox_uids.py (one per live sandbox, unique
across the machine). Inside, the harness sets rlimits before the candidate runs: CPU seconds, address space, file
size, open files, no core dumps, and RLIMIT_NPROC where it holds for the sandbox alone.

A sandbox proves it started: the harness's first message, before it waits for a candidate, is `{"started": true}`;
one that never sends it is a failure of the verifier (`SandboxError`), never a verdict on the candidate.
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
from dataclasses import dataclass

from .code_protocol import LineReader, ProtocolError, write_message
from .sandbox_isolation import (
    HERE,
    INSIDE_DIR,
    ISOLATION_CHOICES,
    Isolation,
    bwrap_command,
    detect_isolation,
    sandbox_env,
    sandbox_python,
)
from .sandbox_uids import FIRST_SANDBOX_UID, SANDBOX_UID_COUNT, UIDS

logger = logging.getLogger("trl_grpo_ext.verifiers")

START_TIMEOUT_S = 60.0  # a sandbox that has not started by then (a machine under heavy load) is a failure


class SandboxError(RuntimeError):
    """A sandbox could not start or set itself up: the verifier failed, not the candidate."""


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


class Sandbox:
    """One started harness process, waiting for its candidate. Used once, then `finish()` kills what is left.

    Pipes: `request_w` (init message, then the judge's requests), `reply_r` (the harness's replies), `stdout_r` (the
    candidate's stdout, read only in script mode), `stderr_r` (read only when the sandbox fails to start).
    """

    def __init__(self, isolation: Isolation, limits: Limits):
        self.isolation = isolation
        self.limits = limits
        self.uid = UIDS.acquire() if isolation.dedicated_uid else None
        self.workdir = None
        self.started = False
        self.request_w = self.reply_r = self.stdout_r = self.stderr_r = -1
        try:
            request_r, self.request_w = os.pipe()
            self.reply_r, reply_w = os.pipe()
            self.stdout_r, stdout_w = os.pipe()
            self.stderr_r, stderr_w = os.pipe()  # what bwrap or Python say if they cannot start; silenced after
        except OSError as exc:
            self.finish()
            raise SandboxError(f"no pipes for a sandbox: {exc}") from exc
        try:
            cmd, env, cwd = self._command()
            harness_limits = {
                "rlimits": limits.rlimits(isolation.process_limit is not None), "uid": self.uid, "workdir": cwd,
            }  # fmt: skip
            cmd += [str(request_r), str(reply_w), json.dumps(harness_limits)]
            self.proc = subprocess.Popen(
                cmd, stdin=subprocess.DEVNULL, stdout=stdout_w, stderr=stderr_w, pass_fds=(request_r, reply_w),
                env=env, cwd=None if isolation.level == "bwrap" else cwd, start_new_session=True,
            )  # fmt: skip
        except BaseException as exc:
            self.proc = None
            self.finish()
            if isinstance(exc, OSError):
                raise SandboxError(f"cannot start a sandbox: {exc}") from exc
            raise
        finally:
            self._close_fds(request_r, reply_w, stdout_w, stderr_w)

    def wait_started(self, deadline: float) -> None:
        """Return once the harness has said it started; SandboxError (with what bwrap or Python said) otherwise."""
        if self.started:
            return
        reader = LineReader(self.reply_r, 1 << 10)
        try:
            ready = select.select([self.reply_r], [], [], max(0.0, deadline - time.monotonic()))[0]
            message = reader.read_message() if ready else None  # the harness writes nothing else before its init
        except (OSError, ProtocolError) as exc:
            message = {"error": str(exc)}
        if reader.buffer or not isinstance(message, dict) or message.get("started") is not True:
            why = "did not start in time" if not ready else f"ended before starting (exit status {self._status()})"
            said = self._stderr().strip()
            self.finish()
            raise SandboxError(f"the sandbox {why}" + (f": {said[-300:]}" if said else ""))
        self.started = True

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
        self._close_fds(self.request_w, self.reply_r, self.stdout_r, self.stderr_r)
        self.request_w = self.reply_r = self.stdout_r = self.stderr_r = -1
        if getattr(self, "proc", None) is not None:
            exited = grace_s > 0 and self.wait(time.monotonic() + grace_s) is not None
            if not exited and self.proc.poll() is None:
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.proc.wait()
        else:
            exited = False
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
        """A started sandbox: a warm one, or else a fresh one; SandboxError if the fresh one does not start."""
        with self.lock:
            sandbox = self.idle.pop(0) if self.idle else None
        fresh = sandbox is None
        if fresh:
            sandbox = Sandbox(self.isolation, self.limits)
        try:
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
            sandbox = Sandbox(self.isolation, self.limits)
            self._check_started(sandbox)
        return sandbox

    @staticmethod
    def _check_started(sandbox: Sandbox) -> None:
        sandbox.wait_started(time.monotonic() + START_TIMEOUT_S)
        if sandbox.proc.poll() is not None:
            sandbox.finish()
            raise SandboxError("a started sandbox ended before it was given a candidate")

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


__all__ = [
    "FIRST_SANDBOX_UID",
    "ISOLATION_CHOICES",
    "SANDBOX_UID_COUNT",
    "Isolation",
    "Limits",
    "Sandbox",
    "SandboxError",
    "SandboxPool",
    "detect_isolation",
    "sandbox_python",
]
