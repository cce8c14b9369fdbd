"""The parent of a sandbox without a PID namespace (isolation="rlimits" as root): it adopts and reaps what the
candidate leaves behind, so that the training process never has to.

Run as `python -I -B -S reaper.py UID COMMAND...` by the verifier (sandbox/pool.py), as root: it becomes a child
subreaper (PR_SET_CHILD_SUBREAPER), forks COMMAND (the harness, which drops to UID itself), then waits. Every process
the candidate orphans is reparented here rather than to the machine's init, which may reap late or never (a container
whose first process is the training). When the harness ends, or this process gets SIGTERM (the verifier's way to end
the sandbox: a candidate cannot signal root), it kills every process of UID, reaps them, and exits as the harness did.
Under bubblewrap the PID namespace does this job, and no reaper runs.

The package also imports `processes_of_uid` and `kill_processes_of` from here (sandbox/uids.py): one definition of
how a uid is emptied, for this process and for the verifier's own clean-up.
"""

import ctypes
import os
import resource
import signal
import sys
import time

PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h


def processes_of_uid(uid: int) -> list[tuple[int, bool, int]]:
    """(pid, is a zombie, parent pid) of the processes whose real uid is `uid` (read from /proc/PID/status, which a
    process cannot hide by prctl)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status", "rb") as status:
                fields = dict(line.split(b":", 1) for line in status if line[:4] in (b"Stat", b"PPid", b"Uid:"))
            if int(fields[b"Uid"].split()[0]) == uid:
                found.append((int(entry), fields[b"State"].split()[0] == b"Z", int(fields[b"PPid"])))
        except (OSError, ValueError, IndexError, KeyError):
            continue
    return found


def kill_processes_of(uid: int, patience_s: float = 5.0) -> bool:
    """SIGKILL every process of `uid` until none is left; False if some survived `patience_s`.

    A killed process is a zombie until its parent reaps it. Those whose parent is this process (in a reaper, the
    orphans it adopted) are reaped here; others wait for their parent."""
    deadline = time.monotonic() + patience_s
    me = os.getpid()
    while processes := processes_of_uid(uid):
        if time.monotonic() > deadline:
            return False
        for pid, zombie, parent in processes:
            try:
                if not zombie:
                    os.kill(pid, signal.SIGKILL)
                elif parent == me:
                    os.waitpid(pid, os.WNOHANG)
            except (ProcessLookupError, ChildProcessError):
                pass
        time.sleep(0.002)
    return True


class Stop(Exception):
    """SIGTERM: the verifier ends the sandbox."""


def _stop(signum, frame):
    raise Stop


def _let_go_of_the_sandbox_pipes() -> None:
    """Leave the sandbox's pipes to the harness alone: the verifier sees their end when the harness ends."""
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.closerange(3, resource.getrlimit(resource.RLIMIT_NOFILE)[0])


def _exit_as(wait_status: int | None) -> None:
    """Exit with the harness's exit status, or by the signal that ended it (without a core dump of this process)."""
    code = 1 if wait_status is None else os.waitstatus_to_exitcode(wait_status)
    if code < 0:
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if -code not in (signal.SIGKILL, signal.SIGSTOP):  # the two whose action cannot be changed
            signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
        code = 128 - code  # a signal whose default action does not end the process
    os._exit(code)


def main(uid: int, command: list[str]) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        sys.exit(f"reaper: cannot adopt the candidate's orphans (prctl: {os.strerror(ctypes.get_errno())})")
    signal.signal(signal.SIGTERM, _stop)
    harness = os.fork()
    if harness == 0:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        try:
            os.execv(command[0], command)
        finally:
            os._exit(127)
    wait_status = None
    harness_fd = -1
    try:
        _let_go_of_the_sandbox_pipes()
        harness_fd = os.pidfd_open(harness)  # signals it, never a process that reused its pid once it is reaped
        while wait_status is None:
            pid, status = os.wait()
            if pid == harness:
                wait_status = status
    except Stop:
        if wait_status is None:  # it may not have dropped to the uid yet
            if harness_fd >= 0:
                signal.pidfd_send_signal(harness_fd, signal.SIGKILL)
            else:
                os.kill(harness, signal.SIGKILL)  # not waited for yet, so its pid is still its own
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # from here on the end is the same either way
    kill_processes_of(uid)  # reaps the orphans it kills: they are this process's children now
    if wait_status is None:
        try:
            wait_status = os.waitpid(harness, 0)[1]
        except ChildProcessError:  # reaped just as SIGTERM came
            pass
    _exit_as(wait_status)


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2:])
