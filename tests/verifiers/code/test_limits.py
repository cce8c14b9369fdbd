"""Adversarial suite, part 2: resource exhaustion, hangs and hostile I/O against the `code` verifier.

Each attack must end with reward 0, a verdict that comes back (the deadline fires) and nothing left running. Attacks
that could harm the machine run only where the limit they test is in force (a fork bomb needs a process limit).
The last section repeats the core attacks at the fallback isolation level.
"""

from __future__ import annotations

import time

import pytest
from code_verifier_helpers import make_code_verifier, sandbox_uid_processes

from trl_grpo_ext.verifiers.code.clock import BACKSTOP_MIN_S

ADD_TESTS = "assert add(1, 2) == 3\nassert add(5, 7) == 12\n"
TIMEOUT_S = 1.5


def make_verifier(**options):
    return make_code_verifier(TIMEOUT_S, **options)


@pytest.fixture(scope="module")
def verifier():
    v = make_verifier()
    yield v
    v.close()


def assert_zero_and_clean(verifier, code, tests=ADD_TESTS, max_s=BACKSTOP_MIN_S):
    """Score 0 (never None: a candidate that misbehaves cannot escape its 0), before the wall-clock backstop (the
    clock counts the candidate's CPU time, which takes longer to spend on a loaded machine), nothing left running."""
    start = time.monotonic()
    result = verifier.verify(code, tests)
    elapsed = time.monotonic() - start
    assert result.score == 0.0, (result.reason, result.details)
    # A limit's 0 (timeout, output_limit, candidate_error...), never one of the verifier's own errors.
    assert not result.reason.startswith(("judge_error", "internal_error", "comparison_error")), result.reason
    assert elapsed < max_s, f"verdict took {elapsed:.1f}s: the deadline did not fire"
    if verifier.isolation.dedicated_uid:
        assert sandbox_uid_processes() == []
    return result


EXHAUSTION = {
    "memory_bomb_at_once": "x = bytearray(64 << 30)\ndef add(a, b): return a + b",
    "memory_bomb_growing": "chunks = []\nwhile True: chunks.append(bytearray(1 << 24))",
    "disk_one_huge_file": "open('big', 'wb').write(b'0' * (1 << 30))\ndef add(a, b): return a + b",
    "disk_many_files": "for i in range(100000): open(f'f{i}', 'wb').write(b'0' * (1 << 20))\n"
    "def add(a, b): return a + b",
    "file_descriptors": "fds = [open('/dev/null') for _ in range(1 << 20)]\ndef add(a, b): return a + b",
    "thread_bomb": "import threading, time\nwhile True: threading.Thread(target=time.sleep, args=(100,)).start()",
    "cpu_in_many_processes": "import os\nfor _ in range(4): os.fork()\nwhile True: pass",
    "huge_return_value": "def add(a, b): return [a + b] * 10**9",
    "deeply_nested_return": "def add(a, b):\n    x = a + b\n    for _ in range(10**5): x = [x]\n    return x",
    "huge_integer_return": "def add(a, b): return 10**200000 + 7",
}

HANGS = {
    "loop_at_import": "while True: pass",
    "loop_in_call": "def add(a, b):\n    while True: pass",
    "sleep_forever": "import time\ndef add(a, b): time.sleep(10**6)",
    "ignore_sigterm": "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\ntime.sleep(10**6)",
    "signal_pause": "import signal\ndef add(a, b): signal.pause()",
    "self_deadlock": "import threading\nlock = threading.Lock()\ndef add(a, b):\n    lock.acquire(); lock.acquire()",
    "read_forever_from_stdin": "import sys\ndef add(a, b):\n    while True: sys.stdin.read(); import time; time.sleep(1)",
    "partial_reply_then_hang": "import os, time\nfor fd in range(3, 64):\n    try: os.write(fd, b'{\"id\": 1, ')\n"
    "    except OSError: pass\ndef add(a, b): time.sleep(10**6)",
}

HOSTILE_IO = {
    "segfault": "import ctypes\ndef add(a, b): return ctypes.string_at(0)",
    "unbounded_recursion": "import sys\nsys.setrecursionlimit(10**8)\ndef add(a, b): return add(a, b) + 1",
    "gigabytes_to_stdout": "import sys\ndef add(a, b):\n    while True: sys.stdout.write('x' * 65536)",
    "giant_line_on_every_fd": "import os, threading\nblob = b'7' * (1 << 27)\n"
    "for fd in range(3, 64):\n    threading.Thread(target=lambda fd=fd: os.write(fd, blob), daemon=True).start()\n"
    "def add(a, b): return 0",
}


@pytest.mark.parametrize("attack", sorted(EXHAUSTION))
def test_resource_exhaustion(verifier, attack):
    assert_zero_and_clean(verifier, EXHAUSTION[attack])


SLEEPERS = {name for name, code in HANGS.items() if "while True: pass" not in code}


@pytest.mark.parametrize("attack", sorted(HANGS))
def test_hang_hits_the_deadline(verifier, attack):
    # A candidate that sleeps is charged the time it sleeps: it ends at its deadline, however loaded the machine.
    result = assert_zero_and_clean(
        verifier, HANGS[attack], max_s=TIMEOUT_S + 4.0 if attack in SLEEPERS else BACKSTOP_MIN_S
    )
    assert result.reason == "timeout" or result.reason.startswith("candidate_error"), result.reason


@pytest.mark.parametrize("attack", sorted(HOSTILE_IO))
def test_hostile_io(verifier, attack):
    assert_zero_and_clean(verifier, HOSTILE_IO[attack])


def test_fork_bomb_is_contained(verifier):
    if not verifier.isolation.process_limit:
        pytest.skip("no process limit in force here: a fork bomb would not be contained")
    bomb = "import os\nwhile True:\n    try: os.fork()\n    except OSError: pass"
    assert_zero_and_clean(verifier, bomb)


def test_stdio_program_that_hangs_after_the_right_answer(verifier):
    code = "print(int(input()) * 2, flush=True)\nwhile True: pass"
    assert_zero_and_clean(verifier, code, [{"input": "21\n", "output": "42\n"}])


def test_stdio_gigabytes_of_output_stop_at_the_output_limit(verifier):
    code = "import sys\nwhile True: sys.stdout.write('42\\n' * 65536)"
    result = assert_zero_and_clean(verifier, code, [{"input": "", "output": "42\n"}], max_s=TIMEOUT_S)
    assert result.reason == "output_limit"


def test_stdio_invalid_utf8_output(verifier):
    code = "import sys\nsys.stdout.buffer.write(b'\\xff\\xfe4\\x802\\n')"
    assert_zero_and_clean(verifier, code, [{"input": "", "output": "42\n"}])


def test_stdio_closing_stdout_is_not_an_answer(verifier):
    code = "import os\nos.close(1)\nimport time\ntime.sleep(10**6)"
    assert_zero_and_clean(verifier, code, [{"input": "", "output": ""}])


def test_stdio_crash_after_the_right_answer_is_a_runtime_error(verifier):
    code = "print(42, flush=True)\nraise SystemExit(3)"
    result = assert_zero_and_clean(verifier, code, [{"input": "", "output": "42\n"}])
    assert result.reason.startswith("runtime_error")


def test_verifier_still_works_after_all_that(verifier):
    assert verifier.verify("def add(a, b): return a + b", ADD_TESTS).score == 1.0


# The fallback level: rlimits and (as root) a dedicated uid, no namespaces.
FALLBACK_ATTACKS = {
    "sys_exit": "import sys\nsys.exit(0)",
    "always_equal": "class E:\n    def __eq__(self, o): return True\ndef add(a, b): return E()",
    "mock_any": "from unittest import mock\ndef add(a, b): return mock.ANY",
    "print_markers": "print('PASS')\ndef add(a, b): return None",
    "loop_in_call": "def add(a, b):\n    while True: pass",
    "memory_bomb": "x = bytearray(64 << 30)\ndef add(a, b): return a + b",
}


@pytest.fixture(scope="module")
def fallback():
    v = make_verifier(isolation="rlimits")
    yield v
    v.close()


@pytest.mark.parametrize("attack", sorted(FALLBACK_ATTACKS))
def test_fallback_level_attacks(fallback, attack):
    assert fallback.isolation.level == "rlimits" and fallback.isolation.warning
    assert_zero_and_clean(fallback, FALLBACK_ATTACKS[attack])


def test_fallback_fork_bomb_and_daemon_are_killed_by_uid(fallback):
    if not fallback.isolation.process_limit:
        pytest.skip("not root: the fallback has no process limit and cannot kill escaped processes")
    bomb = "import os\nwhile True:\n    try: os.fork()\n    except OSError: pass"
    assert_zero_and_clean(fallback, bomb)
    daemon = "import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(60)\ndef add(a, b): return 0"
    assert_zero_and_clean(fallback, daemon)


def test_fallback_benign_solution_scores_one(fallback):
    result = fallback.verify("import heapq\ndef add(a, b): return heapq.nsmallest(1, [a + b])[0]", ADD_TESTS)
    assert result.score == 1.0, result.reason
    assert result.details["isolation"]["level"] == "rlimits"


# Code extraction runs in the trainer's process, outside any deadline: it must take time linear in the completion.
HUGE_COMPLETIONS = {
    "unclosed_fences": "```" * 43000,
    "fence_openings_without_newline": "```x" * 32000 + "\n",
    "many_python_openings": "```python\n" * 12000,
    "many_small_blocks": "```\nx\n" * 20000,
    "deep_expression": "1+" * 64000 + "1",
    "open_parentheses": "(" * 128000,
}


@pytest.mark.parametrize("name", sorted(HUGE_COMPLETIONS))
def test_code_extraction_of_a_huge_completion_is_bounded(name):
    from trl_grpo_ext.verifiers.code.extract import extract_code, is_prose

    start = time.process_time()
    extract_code(HUGE_COMPLETIONS[name])
    is_prose(HUGE_COMPLETIONS[name])
    assert time.process_time() - start < 1.0  # the regular expression it replaces took 10-20 s on the first


def test_code_extraction_finds_the_blocks_the_fence_expression_finds():
    """Against the regular expression it replaces (an independent statement of the same rule), on random texts."""
    import random
    import re

    from trl_grpo_ext.verifiers.code.extract import fenced_blocks

    fence = re.compile(r"```[ \t]*([\w+-]*)[^\n]*\n(.*?)```", re.DOTALL)
    pieces = ["```", "`", "\n", "python", "py ", " ", "x", "\t", "```python\n", "```\n", "-", "PY", "```py3 x\n"]
    rng = random.Random(0)
    for _ in range(5000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 25)))
        assert fenced_blocks(text) == fence.findall(text), text
        assert bool(fenced_blocks(text, first_only=True)) == bool(fence.search(text)), text
