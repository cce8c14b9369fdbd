"""Sandbox uids, unique across every process on the machine.

As root, each sandbox drops to a uid of its own (FIRST_SANDBOX_UID + n): RLIMIT_NPROC, which root ignores, then holds
for that sandbox alone, and whatever the candidate leaves behind is found and killed by uid. Every training process on
the machine (the ranks of one `accelerate launch`, separate trainings) draws from the same range, so a uid is claimed
machine-wide by an exclusive `flock` on a lock file per uid in a directory only root may write
(/run/trl_grpo_ext/uids). The kernel drops such a lock when its holder exits, however it exits, so a crashed training
leaves no uid behind. A process kills only the processes of uids it holds.

A process keeps the uids it has claimed (no more than the most sandboxes it had at once) and reuses them, so running a
sandbox takes no lock and no /proc scan; a uid freshly claimed is first cleared of processes a dead holder left.
Nothing is looked up at import: the password database is read only for the uids a process tries.
"""

from __future__ import annotations

import errno
import fcntl
import logging
import os
import pwd
import signal
import stat
import tempfile
import threading
import time

logger = logging.getLogger("trl_grpo_ext.verifiers")

FIRST_SANDBOX_UID = 61000
SANDBOX_UID_COUNT = 1024
LOCK_DIRS = ("/run/trl_grpo_ext/uids", os.path.join(tempfile.gettempdir(), "trl_grpo_ext_uids"))


class UidPool:
    """Claims sandbox uids machine-wide (one lock file per uid) and lends them to this process's sandboxes."""

    def __init__(self, first: int = FIRST_SANDBOX_UID, count: int = SANDBOX_UID_COUNT, lock_dirs=LOCK_DIRS):
        self.uids = range(first, first + count)
        self.lock_dirs = lock_dirs
        self.lock = threading.Lock()
        self.claims: dict[int, int] = {}  # uid -> descriptor of its locked file: held by this process
        self.spare: list[int] = []  # held, lent to no sandbox now
        self.skipped: set[int] = set()  # in the password database, or with processes that would not die
        self._dir = None
        os.register_at_fork(after_in_child=self._forget)

    def acquire(self) -> int:
        """A uid that no other process on the machine holds, with no process left running as it."""
        with self.lock:
            if self.spare:
                return self.spare.pop()
            for uid in self.uids:
                if uid in self.claims or uid in self.skipped:
                    continue
                if _uid_exists(uid):  # a real account: never ours to run as, or to kill
                    self.skipped.add(uid)
                    continue
                fd = self._try_lock(uid)
                if fd is None:
                    continue  # another process holds it
                self.claims[uid] = fd
                if not kill_processes_of(uid):  # left by a holder that died; we hold the lock now
                    logger.error("code verifier: processes of sandbox uid %d survived SIGKILL; not using it", uid)
                    self.skipped.add(uid)
                    continue
                return uid
        raise RuntimeError(
            f"all {len(self.uids)} sandbox uids ({self.uids.start}-{self.uids.stop - 1}) are held by processes on this "
            "machine; lower `workers` or the number of training processes"
        )

    def release(self, uid: int) -> None:
        """The sandbox of `uid` is gone and nothing runs as `uid`: keep it for the next sandbox of this process."""
        with self.lock:
            if uid in self.claims and uid not in self.skipped:
                self.spare.append(uid)

    def discard(self, uid: int) -> None:
        """Processes of `uid` survived: stop using it, but keep its lock so no other process gets it either."""
        with self.lock:
            self.skipped.add(uid)

    def kill(self, uid: int, patience_s: float = 5.0) -> bool:
        """SIGKILL every process of `uid`, which this process must hold; False if some survived `patience_s`."""
        if uid not in self.claims:
            raise RuntimeError(f"sandbox uid {uid} is not held by this process; its processes are not ours to kill")
        return kill_processes_of(uid, patience_s)

    def held(self) -> set[int]:
        """The uids this process holds (lent or spare)."""
        with self.lock:
            return set(self.claims)

    def _try_lock(self, uid: int) -> int | None:
        path = os.path.join(self._lock_dir(), f"{uid}.lock")
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                return None
            raise
        return fd

    def _lock_dir(self) -> str:
        """The first usable lock directory: owned by root, not writable by others, not a symlink."""
        if self._dir is not None:
            return self._dir
        problems = []
        for path in self.lock_dirs:
            try:
                os.makedirs(path, mode=0o755, exist_ok=True)
                info = os.lstat(path)
            except OSError as exc:
                problems.append(f"{path}: {exc.strerror}")
                continue
            if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o022:
                problems.append(f"{path}: not a directory owned by uid {os.geteuid()} and closed to others")
                continue
            self._dir = path
            return path
        raise RuntimeError(f"no directory for the sandbox uid locks: {'; '.join(problems)}")

    def _forget(self) -> None:
        """In a forked child: the locks belong to the parent, which keeps them; start with none."""
        for fd in self.claims.values():
            try:
                os.close(fd)
            except OSError:
                pass
        self.lock = threading.Lock()
        self.claims, self.spare, self.skipped = {}, [], set()


def _uid_exists(uid: int) -> bool:
    try:
        pwd.getpwuid(uid)
        return True
    except KeyError:
        return False


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
    """SIGKILL every process of `uid` until none is left; False if some survived `patience_s`. Callers hold `uid`.

    A killed process is a zombie until its parent reaps it. Those whose parent is this process (orphans it adopted:
    `adopt_orphans`) are reaped here; others wait for their parent, which an init that never reaps (a container whose
    first process is the training) would make forever."""
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


PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h
_adopting = False


def adopt_orphans() -> None:
    """Make this process the parent of its descendants' orphans (PR_SET_CHILD_SUBREAPER), once per process.

    Without bubblewrap there is no PID namespace whose init reaps what a candidate leaves behind: its processes, once
    killed, go to the machine's init as zombies, and they count against their uid's RLIMIT_NPROC until reaped. An init
    that reaps late costs each such candidate seconds; one that never reaps (a container whose first process is the
    training) leaves the uid unusable. Adopted, they are reaped by `kill_processes_of` at once. Only zombies of sandbox
    uids are reaped here: other orphans that come to this process stay zombies, as under an init that does not reap."""
    global _adopting
    if _adopting:
        return
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        logger.warning(
            "code verifier: cannot adopt the candidates' orphans (prctl: %s)", os.strerror(ctypes.get_errno())
        )
    _adopting = True


UIDS = UidPool()
