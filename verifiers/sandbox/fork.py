"""Candidates forked from a warm interpreter inside one long-lived bubblewrap sandbox (the verifier's side).

Starting bubblewrap and a Python interpreter per candidate costs more than many candidates take to run. Under
bubblewrap as root, a pool therefore starts one sandbox running a fork server (code/standalone/zygote.py, which never runs
candidate code) and asks it for one child per candidate. Each child gets, before any candidate code runs:

- a process of its own, forked from the server's clean interpreter, so nothing a previous candidate did in memory
  (patched modules, threads, allocations) exists in it;
- fresh namespaces: mount (a new, empty, size-limited tmpfs on /tmp and one on /dev/shm), PID (its own /proc; when its first process
  ends, the kernel kills every process left in it), IPC (System V objects) and network (loopback only);
- a uid of its own, unique across the machine (sandbox/uids.py), after its rlimits are set: RLIMIT_NPROC counts this
  candidate's processes only, and it can neither signal nor trace another candidate.
- a cgroup of its own (sandbox/cgroups.py), which it joins first: memory, processes and CPU bounded and
  measured as a whole.

The host passes each child its pipes over the server's control socket, and keeps a status pipe (the child's exit
status, then the report that its PID namespace is empty) and a kill pipe (a byte or its end makes the child's
server kill the namespace). Only when the namespace is reported empty is the uid reused without a /proc scan; otherwise every
process of the uid is killed, as for a sandbox process of its own.
"""

from __future__ import annotations

import json
import logging
import os
import select
import socket
import subprocess
import time

from ..code.standalone import SCRIPT_FLAGS
from ..code.standalone.protocol import LineReader, ProtocolError
from ..core.zygote_client import ZygoteClient
from . import stages
from .cgroups import CgroupTree, CgroupUnavailable
from .isolation import INSIDE_DIR, Isolation, bwrap_command, candidate_site_packages, open_sandbox_files
from .process import SAID_CHARS, START_TIMEOUT_S, Limits, SandboxError, SandboxProcess
from .uids import UIDS

logger = logging.getLogger("trl_grpo_ext.verifiers")

# What the fork server needs beyond the uid drop: new namespaces and a tmpfs per child, loopback up in each.
SERVER_CAPS = ("CAP_SYS_ADMIN", "CAP_NET_ADMIN")
KILL_WAIT_S = 2.0  # how long the server may take to report a killed child's namespace empty


def forks_candidates(isolation: Isolation) -> bool:
    """Fork per candidate where each child can get its own uid and namespaces: bubblewrap, run as root."""
    return isolation.level == "bwrap" and isolation.dedicated_uid


class ForkServer(ZygoteClient):
    """One bubblewrap sandbox running code/standalone/zygote.py; started on first use, restarted if it ended."""

    what = "sandbox fork server"
    error = SandboxError

    def __init__(self, isolation: Isolation, limits: Limits, cgroups: CgroupTree | None = None):
        super().__init__()
        self.isolation = isolation
        self.limits = limits
        self.cgroups = cgroups

    def spawn(self) -> ForkedSandbox:
        events = stages.new_events()
        uid = UIDS.acquire()
        stages.mark(events, "uid_acquired")
        return ForkedSandbox(self, uid, events)

    def launch(self) -> tuple[subprocess.Popen, socket.socket]:
        python = self.isolation.python
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        files = open_sandbox_files()
        cmd = bwrap_command(
            python, self.limits.tmp_mb, self.isolation.site_packages, die_with_parent=False,
            cgroup_namespace=self.cgroups is None,  # with cgroups, each init unshares one rooted at its own group
            files=files,
        )  # fmt: skip
        cmd.insert(1, "--as-pid-1")  # the server is PID 1: its end, however it comes, ends every namespace it made
        for cap in SERVER_CAPS:
            cmd += ["--cap-add", cap]
        cmd += [python, *SCRIPT_FLAGS, "-S", f"{INSIDE_DIR}/zygote.py", str(theirs.fileno())]
        try:
            proc = subprocess.Popen(
                cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                pass_fds=(theirs.fileno(), *files), env={}, start_new_session=True,
            )  # fmt: skip
        except OSError as exc:
            ours.close()
            raise SandboxError(f"cannot start the sandbox fork server: {exc}") from exc
        finally:
            theirs.close()
            for fd in files:
                os.close(fd)
        ready = select.select([ours], [], [], START_TIMEOUT_S)[0]
        if not ready or ours.recv(64) != b"started":
            proc.kill()
            said = proc.communicate()[1].decode(errors="replace").strip()
            ours.close()
            why = "did not start in time" if not ready else f"ended before starting (exit status {proc.returncode})"
            raise SandboxError(f"the sandbox fork server {why}" + (f": {said[-SAID_CHARS:]}" if said else ""))
        proc.stderr.close()  # for start-up failures only; the server silences its stderr once started
        return proc, ours


class ForkedSandbox(SandboxProcess):
    """One candidate's child of the fork server, with its own namespaces and uid (see the module docstring)."""

    def __init__(self, server: ForkServer, uid: int, events: dict | None = None):
        super().__init__(server.limits)
        self.uid = uid
        self.events = events
        self.status_r = self.kill_w = -1
        self.status = LineReader(-1, 1 << 12)
        self.exit_status = None
        self.reaped = False
        self.error = None
        theirs = []
        try:
            if server.cgroups is not None:
                self.cgroup = self.limits.cgroup(server.cgroups, with_init=False)  # the init stays in the server's
                stages.mark(events, "cgroup_ready")
            request_r, self.request_w = os.pipe()
            self.reply_r, reply_w = os.pipe()
            self.stdout_r, stdout_w = os.pipe()
            self.status_r, status_w = os.pipe()
            kill_r, self.kill_w = os.pipe()
            theirs = [request_r, reply_w, stdout_w, status_w, kill_r]
            theirs += self.cgroup.join_fds() if self.cgroup is not None else []
            self.status.fd = self.status_r
            isolation = server.isolation
            harness_limits = {
                "rlimits": self.limits.rlimits(isolation.process_limit is not None), "uid": uid, "workdir": "/tmp",
                "path": candidate_site_packages(isolation.level, isolation.site_packages),
            }  # fmt: skip
            job = {"limits": harness_limits, "tmp_mb": self.limits.tmp_mb, "shm_mb": self.limits.shm_mb}
            if events is not None:  # the sandbox's own readings, for the benchmark (sandbox/stages.py)
                harness_limits["stages"] = True
                events["cpu_before_s"] = self.cgroup.cpu_s() if self.cgroup is not None else 0.0
            server.send(json.dumps(job).encode(), theirs)
            stages.mark(events, "sent")
        except BaseException as exc:
            self.finish()
            if isinstance(exc, (OSError, CgroupUnavailable)):
                raise SandboxError(f"cannot start a sandbox: {exc}") from exc
            raise
        finally:
            self._close_fds(*theirs)

    def _read_status(self, deadline: float) -> bool:
        """Read the status pipe until `deadline`; True once the child's namespace is reported empty (or it closed)."""
        while not self.reaped and self.status_r >= 0:
            remaining = deadline - time.monotonic()
            buffered = b"\n" in self.status.buffer  # the server writes the exit status and the reap back to back
            if not buffered and not select.select([self.status_r], [], [], max(0.0, remaining))[0]:
                return False
            try:
                message = self.status.read_message()
            except (ProtocolError, OSError) as exc:
                message = {"error": f"unreadable status: {exc}"}
            if message is None:  # the server ended without its report: nothing confirms the namespace is empty
                self._close_fds(self.status_r)
                self.status_r = -1
                return False
            if type(message.get("exit")) is int:
                self.exit_status = message["exit"]
            stages.merge(self.events, message.get("t"))
            self.reaped = self.reaped or message.get("reaped") is True
            self.error = self.error or message.get("error")
        return self.reaped

    def _start_failure(self) -> str:
        self._read_status(time.monotonic() + 1.0)
        return str(self.error or f"exit status {self.exit_status}")[:SAID_CHARS]

    def wait(self, deadline: float) -> int | None:
        self._read_status(deadline)
        if self.exit_status is None and (self.reaped or self.status_r < 0):
            raise SandboxError(f"the sandbox ended without an exit status ({self.error or 'killed'})")
        return self.exit_status

    def ended(self) -> bool:
        self._read_status(time.monotonic())
        return self.exit_status is not None or self.reaped or self.status_r < 0

    def finish(self, grace_s: float = 0.0) -> None:
        """Kill the child's namespace, if it still lives, and make sure nothing of its uid is left.

        No grace period: a sandbox process of its own gets one so that it can end by itself and spare the scan of
        /proc by uid; here the server's report spares it either way, and once the verdict is in, nothing the
        candidate does while exiting can change it."""
        self._close_fds(self.request_w, self.reply_r, self.stdout_r)
        self.request_w = self.reply_r = self.stdout_r = -1
        if self.kill_w >= 0:  # the server kills the namespace, if it still lives, on a byte or end of file
            try:
                os.write(self.kill_w, b"k")  # a byte, in case a fork of this process holds a copy of the pipe
            except OSError:
                pass
        self._close_fds(self.kill_w)
        self.kill_w = -1
        stages.mark(self.events, "kill_sent")
        confirmed = self._read_status(time.monotonic() + KILL_WAIT_S)
        self._close_fds(self.status_r)
        self.status_r = -1
        stages.mark(self.events, "reaped")
        if self.cgroup is not None:  # empty once the namespace is: memfd, tmpfs and all go with it
            if self.events is not None:
                self.events["cpu_after_s"] = self.cgroup.cpu_s()
            self.cgroup.release()
            self.cgroup = None
            stages.mark(self.events, "cgroup_released")
        if self.uid is None:
            return
        # An empty PID namespace holds no process of the uid; without that report, find stragglers by uid.
        if not confirmed and not UIDS.kill(self.uid):
            logger.error("code verifier: processes of sandbox uid %d survived SIGKILL; not reusing it", self.uid)
            UIDS.discard(self.uid)
        else:
            UIDS.release(self.uid)
        self.uid = None
        stages.done(self.events)
        self.events = None
