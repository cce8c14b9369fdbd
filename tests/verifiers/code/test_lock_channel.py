"""No channel through file locks between concurrent candidates, or between a candidate and the host.

Every file a candidate can open outside its own `/tmp` and `/dev/shm` is an inode it shares with the candidates that
run beside it and with the host: the read-only binds (`/etc/passwd`, `/usr/bin/env`, the interpreter) and the device
nodes (`/dev/null`). A lock on one, taken by one side and probed by the other, would carry a bit per file: `flock`
works on a read-only descriptor, and so do read locks, classic and per open file description, which a probe for a
write lock (`F_GETLK`, `F_OFD_GETLK`) reports. Here a holder takes every kind of lock it can on those files while a
neighbour of the same verifier probes them for two seconds, and the host holds the same locks while a candidate
probes: every lock call in the sandbox fails with ENOLCK (as on a file system without locks), and nothing is seen.
What a program keeps (multiprocessing, dbm, sqlite3 in memory or with `nolock=1`) and loses (its own file locks, so
sqlite3 on a database file) is checked as the docs state it.
"""

from __future__ import annotations

import fcntl
import os
import struct

import pytest
from code_verifier_helpers import make_code_verifier

from trl_grpo_ext.verifiers.sandbox.isolation import sandbox_python

SHARED_FILES = ["/etc/passwd", "/usr/bin/env", "/dev/null", sandbox_python()]  # the last: the sandbox's interpreter
LOCKS = f"""import errno, fcntl, os, struct, time
FILES = {SHARED_FILES!r}

def lock_record(lock_type):
    return struct.pack("hhqqi", lock_type, 0, 0, 0, 0) + bytes(4)

def outcome(call):
    try:
        return call()
    except OSError as exc:
        return errno.errorcode[exc.errno]
"""
HOLDER = (
    LOCKS
    + """
taken = []
for path in FILES:
    fds = [os.open(path, os.O_RDONLY) for _ in range(3)]
    taken.append(outcome(lambda: fcntl.flock(fds[0], fcntl.LOCK_EX | fcntl.LOCK_NB) or "held"))
    taken.append(outcome(lambda: fcntl.fcntl(fds[1], fcntl.F_SETLK, lock_record(fcntl.F_RDLCK)) and "held"))
    taken.append(outcome(lambda: fcntl.fcntl(fds[2], fcntl.F_OFD_SETLK, lock_record(fcntl.F_RDLCK)) and "held"))
print(sorted(set(taken)), flush=True)
time.sleep(3)
"""
)
PROBE = (
    LOCKS
    + """
def held(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        seen = []
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            fcntl.flock(fd, fcntl.LOCK_UN)
        except OSError as exc:
            seen.append("flock" if exc.errno == errno.EWOULDBLOCK else errno.errorcode[exc.errno])
        for kind, command in (("posix", fcntl.F_GETLK), ("ofd", fcntl.F_OFD_GETLK)):
            answer = outcome(lambda: fcntl.fcntl(fd, command, lock_record(fcntl.F_WRLCK)))
            if isinstance(answer, bytes):
                if struct.unpack_from("h", answer)[0] != fcntl.F_UNLCK:
                    seen.append(kind)
            else:
                seen.append(answer)
        return seen
    finally:
        os.close(fd)

seen, end = set(), time.monotonic() + DURATION
while True:
    for path in FILES:
        seen.update(f"{kind} {path}" for kind in held(path) if kind != "ENOLCK")
    if time.monotonic() >= end:
        break
    time.sleep(0.01)
print(sorted(seen))
"""
)
NOTHING_SEEN = [{"input": "", "output": "[]\n"}]


def _verifier():
    verifier = make_code_verifier(10.0, workers=2)
    if verifier.isolation.level != "bwrap":
        verifier.close()
        pytest.skip("the shared files are bound into the sandbox by bubblewrap")
    return verifier


def test_a_neighbour_sees_no_lock_on_a_shared_read_only_file():
    verifier = _verifier()
    try:
        holder, probe = verifier.verify_batch(
            [HOLDER, PROBE.replace("DURATION", "2")],
            [[{"input": "", "output": "['ENOLCK']\n"}], NOTHING_SEEN],
        )
    finally:
        verifier.close()
    assert holder.reason == "correct", (holder.reason, holder.details)
    assert probe.reason == "correct", (probe.reason, probe.details)


def test_a_candidate_sees_no_lock_the_host_holds(tmp_path):
    held = []
    for path in SHARED_FILES:
        fds = [os.open(path, os.O_RDONLY) for _ in range(3)]
        held.append(fds)
        fcntl.flock(fds[0], fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.fcntl(fds[1], fcntl.F_SETLK, struct.pack("hhqqi", fcntl.F_RDLCK, 0, 0, 0, 0) + bytes(4))
        fcntl.fcntl(fds[2], fcntl.F_OFD_SETLK, struct.pack("hhqqi", fcntl.F_RDLCK, 0, 0, 0, 0) + bytes(4))
    verifier = _verifier()
    try:
        result = verifier.verify(PROBE.replace("DURATION", "0"), NOTHING_SEEN)
    finally:
        verifier.close()
        for fd in (fd for fds in held for fd in fds):
            os.close(fd)
    assert result.reason == "correct", (result.reason, result.details)


KEPT_AND_LOST = """import dbm, errno, fcntl, multiprocessing, os, sqlite3

def square(x):
    return x * x

def table(uri):
    try:
        db = sqlite3.connect(uri, uri=uri.startswith("file:"))
        db.execute("create table t(x)")
        db.execute("insert into t values (7)")
        db.commit()
        return db.execute("select x from t").fetchall()
    except sqlite3.OperationalError as exc:
        return str(exc)

if __name__ == "__main__":
    fd = os.open("/tmp/own", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX)
        own = "locked"
    except OSError as exc:
        own = errno.errorcode[exc.errno]
    with dbm.open("/tmp/store", "c") as store:
        store["k"] = "v"
    with multiprocessing.Pool(2) as pool, multiprocessing.Lock():
        squares = pool.map(square, [1, 2, 3])
    print(own, table("/tmp/file.db"), table("file:/tmp/nolock.db?nolock=1"), table(":memory:"), squares)
"""


def test_what_a_program_keeps_and_loses():
    verifier = _verifier()
    try:
        result = verifier.verify(
            KEPT_AND_LOST, [{"input": "", "output": "ENOLCK database is locked [(7,)] [(7,)] [1, 4, 9]\n"}]
        )
    finally:
        verifier.close()
    assert result.reason == "correct", (result.reason, result.details)
