"""Fidelity on the standard library: a correct program that runs under plain `python` with the standard
library runs here, within the limits, and scores what plain execution scores.

A corpus of small programs, each using a common corner of the standard library (the builtins `site` adds, such as
`exit()`; multiprocessing's locks, pools, queues and process pools; threads; temporary files; a subprocess of
`sys.executable`; signals; locale; sqlite3; decimal; recursion under a raised limit; a megabyte of output; asyncio;
sockets on loopback; the user database and `localhost`), each in the four test formats: stdin/stdout, call-based,
pytest-style and unittest. Each program and test is judged by the verifier and run by plain execution in a temporary
folder (`python main.py < input`; a driver importing the solution for call-based cases; `python -m pytest`; `python
-m unittest`), and the two verdicts must be equal: 1.0 for the correct programs, 0 for the same programs against a
wrong expected value. What the sandbox cannot allow (a connection off the machine) fails cleanly: 0 for a reason that
is a verdict on the candidate, never None or a timeout.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from code_verifier_helpers import assert_wrong_answer, make_code_verifier

from trl_grpo_ext.verifiers.code.runner import outputs_match

TIMEOUT_S = 10.0
PLAIN_TIMEOUT_S = 60.0

# Each corner: a solution defining `solve(n)`, the argument, and the expected value (JSON data: call-based rows hold
# it) with the expression that makes it in the test (a literal, or code for a megabyte of it).
CORNERS = {
    "multiprocessing_lock": (
        "import multiprocessing\n\ndef solve(n):\n    lock = multiprocessing.Lock()\n    total = 0\n"
        "    for i in range(n):\n        with lock:\n            total += i\n    return total\n",
        10,
        45,
    ),
    "multiprocessing_pool": (
        "import multiprocessing\n\ndef square(x):\n    return x * x\n\ndef solve(n):\n"
        "    with multiprocessing.Pool(2) as pool:\n        return sum(pool.map(square, range(n)))\n",
        10,
        285,
    ),
    "process_pool_executor": (
        "from concurrent.futures import ProcessPoolExecutor\n\ndef cube(x):\n    return x ** 3\n\ndef solve(n):\n"
        "    with ProcessPoolExecutor(2) as pool:\n        return sum(pool.map(cube, range(n)))\n",
        5,
        100,
    ),
    "multiprocessing_process_and_queue": (
        "import multiprocessing\n\ndef work(queue, n):\n    queue.put(sum(range(n)))\n\ndef solve(n):\n"
        "    queue = multiprocessing.Queue()\n    process = multiprocessing.Process(target=work, args=(queue, n))\n"
        "    process.start()\n    total = queue.get()\n    process.join()\n    return [total, process.exitcode]\n",
        100,
        [4950, 0],
    ),
    "threading": (
        "import threading\nfrom concurrent.futures import ThreadPoolExecutor\n\ndef solve(n):\n    lock = threading.Lock()\n"
        "    seen = []\n    def add(i):\n        with lock:\n            seen.append(i)\n        return i * 2\n"
        "    with ThreadPoolExecutor(4) as pool:\n        doubled = sum(pool.map(add, range(n)))\n"
        "    thread = threading.Thread(target=add, args=(n,))\n    thread.start()\n    thread.join()\n"
        "    return [doubled, len(seen)]\n",
        20,
        [380, 21],
    ),
    "tempfile": (
        "import os, tempfile\n\ndef solve(n):\n    with tempfile.TemporaryDirectory() as folder:\n"
        "        path = os.path.join(folder, 'numbers.txt')\n        with open(path, 'w') as f:\n"
        "            f.write('\\n'.join(map(str, range(n))))\n        with open(path) as f:\n"
        "            total = sum(int(line) for line in f)\n    with tempfile.NamedTemporaryFile('w+') as f:\n"
        "        f.write('x' * n)\n        f.seek(0)\n        return [total, len(f.read())]\n",
        100,
        [4950, 100],
    ),
    "subprocess_of_python": (
        "import subprocess, sys\n\ndef solve(n):\n    out = subprocess.run([sys.executable, '-c', f'print({n} * 6)'],\n"
        "                         capture_output=True, text=True, check=True).stdout\n    return int(out)\n",
        7,
        42,
    ),
    "signal_timer_and_handler": (
        "import signal, time\n\ndef solve(n):\n    fired = []\n"
        "    old = signal.signal(signal.SIGALRM, lambda number, frame: fired.append(number))\n"
        "    signal.setitimer(signal.ITIMER_REAL, 0.02)\n    deadline = time.monotonic() + 5\n"
        "    while not fired and time.monotonic() < deadline:\n        time.sleep(0.005)\n"
        "    signal.signal(signal.SIGALRM, old)\n    return len(fired) * n\n",
        3,
        3,
    ),
    "signal_alarm_interrupts": (
        "import signal\n\nclass Late(Exception):\n    pass\n\ndef stop(number, frame):\n    raise Late()\n\n"
        "def solve(n):\n    signal.signal(signal.SIGALRM, stop)\n    signal.alarm(1)\n    count = 0\n    try:\n"
        "        while True:\n            signal.pause()\n    except Late:\n        count = n\n"
        "    finally:\n        signal.alarm(0)\n    return count\n",
        4,
        4,
    ),
    "locale": (
        "import locale\n\ndef solve(n):\n    locale.setlocale(locale.LC_ALL, 'C')\n"
        "    text = locale.format_string('%d', n, grouping=True)\n    return [text, locale.localeconv()['decimal_point'],"
        " locale.str(2.5)]\n",
        1234567,
        ["1234567", ".", "2.5"],
    ),
    "sqlite3_in_memory": (
        "import sqlite3\n\ndef solve(n):\n    db = sqlite3.connect(':memory:')\n"
        "    db.execute('create table t (k integer primary key, v text)')\n"
        "    db.executemany('insert into t (v) values (?)', [(str(i),) for i in range(n)])\n"
        "    (total,) = db.execute('select sum(cast(v as integer)) from t').fetchone()\n    db.close()\n"
        "    return total\n",
        50,
        1225,
    ),
    "decimal": (
        "from decimal import Decimal, getcontext\n\ndef solve(n):\n    getcontext().prec = 40\n"
        "    return str(Decimal(1) / Decimal(n))\n",
        7,
        "0.1428571428571428571428571428571428571429",
    ),
    "deep_recursion_with_a_raised_limit": (
        "import sys\nsys.setrecursionlimit(10 ** 5)\n\ndef depth(k):\n    return 0 if k == 0 else 1 + depth(k - 1)\n\n"
        "def solve(n):\n    return depth(n)\n",
        30000,
        30000,
    ),
    "a_megabyte_of_output": (
        "def solve(n):\n    return '\\n'.join(str(i) for i in range(n))\n",
        150000,
        None,  # 1,038,889 bytes: made by the expression below where the test needs it
    ),
    "asyncio": (
        "import asyncio\n\nasync def twice(x):\n    await asyncio.sleep(0.001)\n    return 2 * x\n\ndef solve(n):\n"
        "    async def main():\n        return sum(await asyncio.gather(*(twice(i) for i in range(n))))\n"
        "    return asyncio.run(main())\n",
        10,
        90,
    ),
    "socket_on_loopback": (
        "import socket, threading\n\ndef solve(n):\n    server = socket.create_server(('localhost', 0))\n"
        "    port = server.getsockname()[1]\n    def serve():\n        conn, _ = server.accept()\n"
        "        with conn:\n            conn.sendall(conn.recv(64) * 2)\n    thread = threading.Thread(target=serve)\n"
        "    thread.start()\n    with socket.create_connection(('127.0.0.1', port)) as client:\n"
        "        client.sendall(str(n).encode())\n        reply = client.recv(64).decode()\n    thread.join()\n"
        "    server.close()\n    return reply\n",
        12,
        "1212",
    ),
    "user_and_group_databases": (
        "import getpass, grp, os, pwd\n\ndef solve(n):\n    user = getpass.getuser()\n"
        "    entry = pwd.getpwuid(os.getuid())\n    group = grp.getgrgid(os.getgid())\n"
        "    return [entry.pw_name == user, group.gr_gid == os.getgid(), n]\n",
        1,
        [True, True, 1],
    ),
    "site_builtins": (
        "def solve(n):\n    return [callable(exit), callable(quit), 'Copyright' in str(copyright), callable(help), n]\n",
        2,
        [True, True, True, True, 2],
    ),
}
MEGABYTE = "'\\n'.join(str(i) for i in range(150000))"


def _expected(corner: str):
    value = CORNERS[corner][2]
    return "\n".join(str(i) for i in range(150000)) if value is None else value


def _expression(corner: str) -> str:
    return MEGABYTE if CORNERS[corner][2] is None else repr(_expected(corner))


def _printed(value) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def program(corner: str, form: str, wrong: bool = False) -> tuple[str, object]:
    """(code, reference) of `corner` in `form`; `wrong`: the same program against a wrong expected value."""
    solution, argument, _ = CORNERS[corner]
    expected, expression = _expected(corner), _expression(corner)
    if wrong:
        expected, expression = ["not", "this"], "['not', 'this']"
    if form == "stdio":
        main = solution + "\nif __name__ == '__main__':\n    import json\n    result = solve(int(input()))\n"
        main += "    print(result if isinstance(result, str) else json.dumps(result))\n"
        return main, [{"input": f"{argument}\n", "output": _printed(expected) + "\n"}]
    if form == "calls":
        return solution, {"fn_name": "solve", "inputs": [[argument]], "outputs": [[expected]]}
    if form == "pytest":
        return (
            solution,
            f"from solution import solve\n\ndef test_solve():\n    assert solve({argument}) == {expression}\n",
        )
    tests = "import unittest\nfrom solution import solve\n\nclass TestSolve(unittest.TestCase):\n"
    tests += f"    def test_solve(self):\n        self.assertEqual(solve({argument}), {expression})\n"
    return solution, tests


# --- exit() and quit(): the builtins `site` adds, which `python -S` lacks ---

EXITS = {
    "exit_at_the_end": "print(int(input()) * 2)\nexit()\n",
    "quit_at_the_end": "print(int(input()) * 2)\nquit()\n",
    "exit_zero_in_main": "def main():\n    print(int(input()) * 2)\n    exit(0)\n\nif __name__ == '__main__':\n    main()\n",
    "exit_early": "n = int(input())\nif n > 0:\n    print(n * 2)\n    exit()\nprint('never')\n",
    "exit_with_a_failure_status": "print(int(input()) * 2)\nexit(3)\n",  # plain execution fails it too
    "quit_with_a_message": "print(int(input()) * 2)\nquit('bye')\n",  # status 1, as plain execution
}
EXIT_CASES = [{"input": "21\n", "output": "42\n"}]
EXIT_SOLUTION = "def check(n):\n    if n < 0:\n        exit(2)\n    if n == 0:\n        quit()\n    return n\n"
EXIT_TESTS = {
    "pytest": "import pytest\nfrom solution import check\n\ndef test_exits():\n    with pytest.raises(SystemExit) as e:\n"
    "        check(-1)\n    assert e.value.code == 2\n    with pytest.raises(SystemExit) as e:\n        check(0)\n"
    "    assert e.value.code is None\n    assert check(5) == 5\n",
    "unittest": "import unittest\nfrom solution import check\n\nclass T(unittest.TestCase):\n    def test_exits(self):\n"
    "        with self.assertRaises(SystemExit) as e:\n            check(-1)\n        self.assertEqual(e.exception.code, 2)\n"
    "        self.assertEqual(check(5), 5)\n",
    "calls": {"fn_name": "check", "inputs": [[5], [7]], "outputs": [[5], [7]]},
}


# --- plain execution ---


def plain_env(folder: str) -> dict:
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": folder, "LANG": "C.UTF-8"}


def _run(args: list[str], folder: str, stdin: str = "") -> subprocess.CompletedProcess | None:
    try:
        return subprocess.run(
            args, input=stdin.encode(), cwd=folder, env=plain_env(folder), capture_output=True, timeout=PLAIN_TIMEOUT_S
        )
    except subprocess.TimeoutExpired:
        return None


CALL_DRIVER = """
import json, sys
import solution
function = getattr(solution, sys.argv[1])
passed = True
for args, expected in json.load(open("cases.json")):
    got = function(*args)
    got = list(got) if isinstance(got, tuple) else got
    passed = passed and (got == expected or (isinstance(expected, list) and len(expected) > 0 and got == expected[0]))
sys.exit(0 if passed else 1)
"""


def plain_execution(code: str, form: str, reference) -> bool:
    """Whether plain `python` passes `code` against `reference` in `form`, run in a temporary folder."""
    with tempfile.TemporaryDirectory() as folder:
        if form == "stdio":
            Path(folder, "main.py").write_text(code)
            for case in reference:
                run = _run([sys.executable, "main.py"], folder, case["input"])
                if run is None or run.returncode != 0 or not outputs_match(run.stdout.decode(), case["output"]):
                    return False
            return True
        Path(folder, "solution.py").write_text(code)
        if form == "calls":
            Path(folder, "driver.py").write_text(CALL_DRIVER)
            cases = [[args, expected] for args, expected in zip(reference["inputs"], reference["outputs"])]
            Path(folder, "cases.json").write_text(json.dumps(cases))
            run = _run([sys.executable, "driver.py", reference["fn_name"]], folder)
        elif form == "pytest":
            Path(folder, "test_solution.py").write_text(reference)
            run = _run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_solution.py"], folder)
        else:
            Path(folder, "test_solution.py").write_text(reference)
            run = _run([sys.executable, "-m", "unittest", "-q", "test_solution"], folder)
        return run is not None and run.returncode == 0


@pytest.fixture(scope="module")
def verifier():
    v = make_code_verifier(TIMEOUT_S, memory_mb=1024)
    yield v
    v.close()


FORMS = ("stdio", "calls", "pytest", "unittest")


def compare(verifier, items: list[tuple[str, str, object]]) -> list[tuple]:
    """(form, code, reference) each judged here and by plain execution; the disagreements, with both verdicts."""
    results = [verifier.verify(code, reference) for _, code, reference in items]
    with ThreadPoolExecutor(2) as pool:
        plain = list(pool.map(lambda item: plain_execution(item[1], item[0], item[2]), items))
    return [
        (form, passed, (result.score, result.reason, result.details.get("failures")))
        for (form, _, _), passed, result in zip(items, plain, results)
        if passed != (result.score == 1.0)
    ]


@pytest.mark.parametrize("corner", sorted(CORNERS))
def test_a_correct_program_scores_as_under_plain_python(verifier, corner):
    items = [(form, *program(corner, form)) for form in FORMS]
    assert compare(verifier, items) == []
    for form, code, reference in items:  # and they are correct programs: both pass them
        result = verifier.verify(code, reference)
        assert (result.score, result.reason) == (1.0, "correct"), (form, result.reason, result.details)


@pytest.mark.slow  # 72 more runs of each kind: about 25 s on 2 shared cores
@pytest.mark.parametrize("corner", sorted(CORNERS))
def test_the_same_program_against_a_wrong_value_fails_as_under_plain_python(verifier, corner):
    items = [(form, *program(corner, form, wrong=True)) for form in FORMS]
    assert compare(verifier, items) == []
    for _, code, reference in items:
        assert_wrong_answer(verifier.verify(code, reference))


EXIT_STATUS = {"exit_with_a_failure_status": 3, "quit_with_a_message": 1}  # the others exit with 0


@pytest.mark.parametrize("name", sorted(EXITS))
def test_exit_and_quit_end_a_stdio_program_as_under_plain_python(verifier, name):
    assert compare(verifier, [("stdio", EXITS[name], EXIT_CASES)]) == []
    result = verifier.verify(EXITS[name], EXIT_CASES)
    if name in EXIT_STATUS:
        assert (result.score, result.reason) == (0.0, f"runtime_error: exit status {EXIT_STATUS[name]}"), result.reason
    else:
        assert (result.score, result.reason) == (1.0, "correct"), (result.reason, result.details)


@pytest.mark.parametrize("form", sorted(EXIT_TESTS))
def test_exit_and_quit_in_a_call_raise_system_exit_as_under_plain_python(verifier, form):
    assert compare(verifier, [(form, EXIT_SOLUTION, EXIT_TESTS[form])]) == []
    assert verifier.verify(EXIT_SOLUTION, EXIT_TESTS[form]).score == 1.0


# --- what the sandbox cannot allow fails cleanly ---

OFF_THE_MACHINE = {  # a connection to a host outside: the candidate has a network namespace of its own, loopback only
    "tcp": "import socket\nsocket.create_connection(('192.0.2.1', 80), timeout=2)\nprint(42)\n",
    "udp": "import socket\ns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\ns.sendto(b'x', ('192.0.2.1', 53))\n"
    "print(42)\n",
    "name_resolution": "import socket\nsocket.getaddrinfo('example.com', 80)\nprint(42)\n",
}


@pytest.mark.parametrize("attempt", sorted(OFF_THE_MACHINE))
def test_a_program_that_needs_the_network_fails_cleanly(verifier, attempt):
    # 0 for the candidate's own reason (its exception, exit status 1), quickly: never None, never a timeout
    result = verifier.verify(OFF_THE_MACHINE[attempt], [{"input": "", "output": "42\n"}])
    assert (result.score, result.reason) == (0.0, "runtime_error: exit status 1"), (result.reason, result.details)
