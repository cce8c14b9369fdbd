"""Nothing a candidate does is visible to the next one in the same worker (sandbox/fork.py, code/standalone/zygote.py).

Under bubblewrap as root, candidates are forked from one warm interpreter in a long-lived sandbox. These tests make
one candidate leave every trace it can (files in /tmp and its working folder, a full tmpfs, patched standard modules,
threads, child processes and a daemon, a listening port, a System V shared memory segment, most of its address
space) and check, from inside the next candidate of the same worker and from the host, that none of it remains.
"""

from __future__ import annotations

import pytest
from code_verifier_helpers import make_code_verifier, sandbox_uid_processes

PORT = 45123
SHM_KEY = 0x5EED

# Leaves everything behind; `did()` is True only if every trace was really left (else the test proves nothing).
POLLUTER = f"""
import ctypes, math, os, socket, string, sys, threading, time
for i in range(4):  # 60 MiB of the 64 MiB /tmp (RLIMIT_FSIZE is 16 MiB per file)
    with open(f"/tmp/fill{{i}}", "wb") as f:
        f.write(b"x" * (15 << 20))
open("left_in_cwd", "w").write("hello")
math.pi = 3
string.ascii_lowercase = "pwned"
os.getcwd = lambda: "/pwned"
sys.modules["planted"] = math
hog = b"y" * (600 << 20)  # touched, not just reserved
listener = socket.socket()
listener.bind(("127.0.0.1", {PORT}))
listener.listen()
libc = ctypes.CDLL(None, use_errno=True)
shm_id = libc.shmget({SHM_KEY}, 4096, 0o1000 | 0o666)  # IPC_CREAT
threading.Thread(target=time.sleep, args=(10**6,)).start()  # not a daemon: the interpreter would wait for it
children = []
for _ in range(2):
    pid = os.fork()
    if pid == 0:
        os.setsid()
        if os.fork() == 0:
            time.sleep(10**6)  # a daemon, reparented away from the candidate
        time.sleep(10**6)
    children.append(pid)

def did():
    alive = all(os.waitpid(p, os.WNOHANG) == (0, 0) for p in children)
    return (len(os.listdir("/tmp")) >= 5 and math.pi == 3 and len(hog) == 600 << 20 and shm_id >= 0
            and threading.active_count() == 2 and alive)
"""

OBSERVER = f"""
import ctypes, math, os, socket, string, sys, threading

def tmp_is_empty():
    return os.listdir("/tmp") == [] and os.listdir(".") == []

def tmp_has_room():
    for i in range(4):
        with open(f"/tmp/room{{i}}", "wb") as f:
            f.write(b"z" * (15 << 20))
    return True

def modules_are_pristine():
    return (math.pi == 3.141592653589793 and string.ascii_lowercase == "abcdefghijklmnopqrstuvwxyz"
            and os.getcwd() == "/tmp" and "planted" not in sys.modules)

def one_thread():
    return threading.active_count() == 1

def only_own_processes():
    return sorted(int(p) for p in os.listdir("/proc") if p.isdigit()) == sorted({{1, os.getpid()}})

def memory_is_whole():
    return len(bytearray(850 << 20)) == 850 << 20

def port_is_closed():
    try:
        socket.create_connection(("127.0.0.1", {PORT}), timeout=1).close()
    except OSError:
        return True
    return False

def no_shared_memory():
    return ctypes.CDLL(None).shmget({SHM_KEY}, 0, 0) == -1
"""

OBSERVATIONS = [
    "tmp_is_empty",
    "tmp_has_room",
    "modules_are_pristine",
    "one_thread",
    "only_own_processes",
    "memory_is_whole",
    "port_is_closed",
    "no_shared_memory",
]
OBSERVER_TESTS = "\n".join(f"assert {name}() is True" for name in OBSERVATIONS)


@pytest.fixture(scope="module")
def verifier():
    v = make_code_verifier(10, workers=1, partial_credit=True)
    if v.isolation.level != "bwrap":
        v.close()
        pytest.skip("namespaces per candidate need bubblewrap")
    yield v
    v.close()


def test_candidates_are_forked_from_a_warm_interpreter_as_root(verifier):
    verifier.verify("def f(): return 1", "assert f() == 1")
    assert (verifier._pool.server is not None) == verifier.isolation.dedicated_uid


def test_nothing_a_candidate_leaves_is_visible_to_the_next(verifier):
    for round_ in range(2):  # twice: the second observer runs in a child forked after a polluter too
        polluted = verifier.verify(POLLUTER, "assert did() is True")
        assert polluted.score == 1.0, (round_, polluted.reason, polluted.details["failures"])
        if verifier.isolation.dedicated_uid:
            assert sandbox_uid_processes() == [], "the polluter's threads, children or daemon outlived it"
        observed = verifier.verify(OBSERVER, OBSERVER_TESTS)
        failed = [(OBSERVATIONS[f["line"] - 1], f["error"]) for f in observed.details["failures"]]
        assert observed.score == 1.0, (round_, observed.reason, failed)
