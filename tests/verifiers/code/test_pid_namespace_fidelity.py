"""What a candidate's PID namespace must not change against a plain interpreter.

Signals: a candidate that signals itself, or is signalled by its own child or by a timer, ends as it would under a
plain interpreter: the same exit status in a stdin/stdout run, no return from a call that kills its process. Each
program prints its first line, then signals; a plain interpreter (run here, in a session of its own) never prints the
second. So the candidate must not be PID 1 of its namespace: the kernel drops the signals a namespace's init has no
handler for when they come from inside it (SIGKILL and SIGSTOP included) or from the kernel (timers, SIGPIPE), and
such a program would run on and pass.

Orphans: a plain interpreter's orphaned children are reaped by the host's init when they end; in the sandbox, by the
namespace's init. Left as zombies, they would count against the candidate's process limit.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from code_verifier_helpers import make_code_verifier

PROGRAMS = {
    "sigterm_to_itself": "import os, signal\nprint(1, flush=True)\nos.kill(os.getpid(), signal.SIGTERM)\nprint(2)\n",
    "sigkill_to_itself": "import os, signal\nprint(1, flush=True)\nos.kill(os.getpid(), signal.SIGKILL)\nprint(2)\n",
    "raise_signal": "import signal\nprint(1, flush=True)\nsignal.raise_signal(signal.SIGUSR1)\nprint(2)\n",
    "its_process_group": "import os, signal\nprint(1, flush=True)\nos.killpg(0, signal.SIGTERM)\nprint(2)\n",
    "abort": "import os\nprint(1, flush=True)\nos.abort()\nprint(2)\n",
    "its_child_kills_it": "import os, signal, time\nprint(1, flush=True)\nchild = os.fork()\nif child == 0:\n"
    "    os.kill(os.getppid(), signal.SIGTERM)\n    os._exit(0)\nos.waitpid(child, 0)\ntime.sleep(0.5)\nprint(2)\n",
    "alarm_without_handler": "import signal, time\nprint(1, flush=True)\nsignal.alarm(1)\ntime.sleep(3)\nprint(2)\n",
    "sigpipe_at_default": "import os, signal\nsignal.signal(signal.SIGPIPE, signal.SIG_DFL)\nread, write = os.pipe()\n"
    "os.close(read)\nprint(1, flush=True)\nos.write(write, b'x')\nprint(2)\n",
}
EXPECTED_OUTPUT = [{"input": "", "output": "1\n2\n"}]


@pytest.fixture(scope="module")
def verifier():
    v = make_code_verifier(10)
    yield v
    v.close()


def plain_status(program: str) -> int:
    """The exit status of the program under a plain interpreter (negative: the signal that ended it)."""
    run = subprocess.run(
        [sys.executable, "-I", "-c", program], capture_output=True, timeout=30, start_new_session=True, check=False
    )
    assert run.stdout.split() == [b"1"], run.stdout
    return run.returncode


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_a_program_that_signals_itself_ends_with_the_plain_interpreters_status(verifier, name):
    status = plain_status(PROGRAMS[name])
    assert status < 0  # every one of them is ended by a signal
    result = verifier.verify(PROGRAMS[name], EXPECTED_OUTPUT)
    assert (result.score, result.reason) == (0.0, f"runtime_error: exit status {status}")


def test_a_program_that_stops_itself_does_not_go_on():
    program = "import os, signal\nprint(1, flush=True)\nos.kill(os.getpid(), signal.SIGSTOP)\nprint(2)\n"
    v = make_code_verifier(1.5)
    try:
        result = v.verify(program, EXPECTED_OUTPUT)
    finally:
        v.close()
    assert result.score == 0.0 and result.reason != "correct", result.reason


def test_a_call_that_kills_its_own_process_does_not_return(verifier):
    code = "import os, signal\ndef add(a, b):\n    os.kill(os.getpid(), signal.SIGKILL)\n    return a + b\n"
    result = verifier.verify(code, "assert add(1, 2) == 3\n")
    assert result.score == 0.0, result.reason


def test_orphans_that_ended_do_not_count_against_the_process_limit(verifier):
    """100 double-forked children that end at once, one at a time, under a limit of 64 processes."""
    code = (
        "import os\n"
        "def orphans(n):\n"
        "    for _ in range(n):\n"
        "        child = os.fork()\n"
        "        if child == 0:\n"
        "            if os.fork() == 0:\n"
        "                os._exit(0)\n"
        "            os._exit(0)\n"
        "        os.waitpid(child, 0)\n"
        "    return n\n"
    )
    result = verifier.verify(code, "assert orphans(100) == 100\n")
    assert result.score == 1.0, (result.reason, result.details["failures"])
