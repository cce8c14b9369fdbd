"""The fork server (sandbox/fork.py, code/standalone/zygote.py): what a forked candidate holds, and a server that dies.

Runs only where candidates are forked: bubblewrap, as root.
"""

from __future__ import annotations

import os
import signal

import pytest
from code_verifier_helpers import make_code_verifier

from trl_grpo_ext.verifiers.sandbox.fork import forks_candidates
from trl_grpo_ext.verifiers.sandbox.uids import UIDS

ADD = "def add(a, b):\n    return a + b\n"
ADD_TESTS = "assert add(1, 2) == 3\n"


@pytest.fixture
def verifier():
    v = make_code_verifier(10, workers=2)
    if not forks_candidates(v.isolation):
        v.close()
        pytest.skip("candidates are forked only under bubblewrap as root")
    yield v
    v.close()


def test_the_candidate_holds_only_its_own_pipes(verifier):
    """No control socket of the server, no status or kill pipe, no pidfd or namespace of the server, its own or any
    other candidate's (the pool holds children forked ahead): the candidate cannot forge the reports that let the
    verifier skip the search for its leftover processes."""
    code = (
        "import os\n"
        "def descriptors():\n"
        "    kinds = []\n"
        "    for fd in os.listdir('/proc/self/fd'):\n"
        "        try:\n"
        "            kinds.append(os.readlink(f'/proc/self/fd/{fd}').split(':')[0])\n"
        "        except FileNotFoundError:\n"
        "            pass  # the descriptor listdir used\n"
        "    return sorted(k for k in kinds if k != '/dev/null')\n"
    )
    for _ in range(3):  # the first candidate is forked alone, the next ones while others are in flight
        result = verifier.verify(code, "assert descriptors() == ['pipe', 'pipe']")  # requests in, replies out
        assert result.score == 1.0, (result.reason, result.details["failures"])


def test_a_fork_server_that_dies_is_replaced(verifier):
    assert verifier.verify(ADD, ADD_TESTS).score == 1.0
    server = verifier._pool.server
    os.killpg(server.proc.pid, signal.SIGKILL)  # bubblewrap and everything in its namespace, warm children included
    server.proc.wait()
    for _ in range(3):
        result = verifier.verify(ADD, ADD_TESTS)
        assert result.score == 1.0, result.reason
    assert server.proc.poll() is None


def test_a_fork_of_the_trainer_holding_the_kill_pipes_does_not_delay_the_kill(verifier, monkeypatch):
    """A trainer that forks (data loader workers) gives the child copies of the warm sandboxes' kill pipes, so closing
    ours is no end of file; the byte written first still makes the server kill the namespace and report it."""
    assert verifier.verify(ADD, ADD_TESTS).score == 1.0  # the pool now holds children forked ahead
    scans = []
    monkeypatch.setattr(UIDS, "kill", lambda uid, *a: scans.append(uid) or True)
    holder = os.fork()
    if holder == 0:  # holds every descriptor of this process, as a data loader worker would
        signal.pause()
        os._exit(0)
    try:
        lingering = "import threading, time\nthreading.Thread(target=time.sleep, args=(60,)).start()\n" + ADD
        for _ in range(2):
            assert verifier.verify(lingering, ADD_TESTS).score == 1.0
    finally:
        os.kill(holder, signal.SIGKILL)
        os.waitpid(holder, 0)
    assert scans == [], "the server did not report the namespace empty: the verifier fell back to a /proc scan"
