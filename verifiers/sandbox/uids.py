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
import stat
import tempfile
import threading

from ..code.standalone.reaper import kill_processes_of

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


UIDS = UidPool()
