"""The sandboxed Python tool: what the model sees, sessions, isolation between rollouts and processes, failures."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import textwrap
import threading

import pytest
from transformers.utils import get_json_schema

from trl_grpo_ext.tools import TOOL_STATS, PythonSession, PythonToolConfig, PythonToolFailure, make_python_tool, python
from trl_grpo_ext.tools import interpreter as interpreter_module
from trl_grpo_ext.tools.python_tool import FAILURES, render, stateless_call
from trl_grpo_ext.verifiers.sandbox.pool import SandboxError

CONFIG = PythonToolConfig(timeout_s=6.0, cpu_s=1, session_cpu_s=20, max_output_chars=300)


@pytest.fixture
def session():
    s = PythonSession(CONFIG)
    s.reset()
    yield s
    s._end_session()


@pytest.fixture(scope="module")
def tool():
    return make_python_tool(CONFIG)


def test_schema_is_built_from_type_hints_and_docstring():
    for function in (python, PythonSession(CONFIG).python, make_python_tool(CONFIG)):
        schema = get_json_schema(function)["function"]
        assert schema["name"] == "python"
        assert schema["parameters"]["required"] == ["code"]
        assert schema["parameters"]["properties"]["code"]["type"] == "string"
        assert "Print what you want to see" in schema["parameters"]["properties"]["code"]["description"]
        assert schema["description"].startswith("Run Python code")


def test_public_methods_of_the_session_are_reset_and_python_only():
    # TRL exposes every public method of an environment but `reset` as a tool
    public = [
        name for name in dir(PythonSession) if not name.startswith("_") and callable(getattr(PythonSession, name))
    ]
    assert sorted(public) == ["python", "reset"]


def test_what_the_model_sees(tool):
    assert tool("print('a')\nprint('b')") == "a\nb\n"
    assert tool("x = 6\nx * 7") == "42"
    assert tool("print('so far')\n[1, 2][5]") == "so far\nIndexError: list index out of range"
    assert tool("def f(:").startswith("SyntaxError: ")
    assert tool("None") == ""
    assert tool("import sys; print('warn', file=sys.stderr); 'v'") == "warn\n'v'"
    assert tool("import subprocess; subprocess.run(['echo', 'child'])\n1") == "child\n1"
    assert tool("raise SystemExit(3)") == "SystemExit: 3"


def test_long_output_is_truncated_with_a_marker_and_the_error_kept(tool):
    text = tool("print('x' * 5000)\n1 / 0")
    tail = "ZeroDivisionError: division by zero"
    assert text.endswith("\n" + tail)
    kept = 300 - len(tail) - 1
    assert text.startswith("x" * kept + "\n[... truncated: ")
    assert f"{5001 - kept} more bytes of output]" in text
    assert len(text) < 300 + 60
    assert tool("'y' * 1000") == "'" + "y" * 299 + "\n[... truncated: 702 more characters]\n"


def test_render_against_exact_cases():
    config = PythonToolConfig(max_output_chars=64)
    same = {"output": "abc\n", "output_bytes": 4, "value": "1", "value_chars": 1, "error": None}
    assert render(same, config) == "abc\n1"
    cut = {"output": "é" * 65, "output_bytes": 2 * 1000, "value": None, "value_chars": 0, "error": "E: x"}
    assert render(cut, config) == "é" * 59 + f"\n[... truncated: {2000 - 2 * 59} more bytes of output]\n" + "E: x"


def test_session_keeps_state_within_a_rollout_and_nothing_across(session):
    assert session.python("import math\nsecret = 41\nn = open('/tmp/notes', 'w').write('kept')") == ""
    assert session.python("secret + 1") == "42"
    assert session.python("math.factorial(5), open('/tmp/notes').read()") == "(120, 'kept')"
    session.reset()
    assert session.python("secret") == "NameError: name 'secret' is not defined"
    assert session.python("import os; os.path.exists('/tmp/notes')") == "False"


def test_stateless_tool_keeps_nothing(tool):
    assert tool("leak = 1\nn = open('/tmp/leak', 'w').write('x')") == ""
    assert tool("import os; 'leak' in globals(), os.listdir('/tmp')") == "(False, [])"


def test_concurrent_sessions_never_see_each_other():
    sessions = [PythonSession(CONFIG) for _ in range(4)]
    seen = [None] * 4

    def rollout(i):
        s = sessions[i]
        s.python(f"token = 'rollout-{i}'\nn = open('/tmp/mine', 'w').write(token)")
        seen[i] = s.python(
            "import os\n"
            "pids = [p for p in os.listdir('/proc') if p.isdigit()]\n"
            "token, open('/tmp/mine').read(), sorted(os.listdir('/tmp')), len(pids), os.getuid()"
        )

    threads = [threading.Thread(target=rollout, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    uids = set()
    for i, text in enumerate(seen):
        token, mine, files, processes, uid = eval(text)  # the tool's own repr of plain data
        assert token == mine == f"rollout-{i}" and files == ["mine"]
        assert processes == 2  # its namespace's init and itself: no other rollout's processes
        uids.add(uid)
    assert len(uids) == 4 or os.geteuid() != 0  # as root, each session runs as a uid of its own
    for s in sessions:
        s._end_session()


def test_sessions_in_different_processes_never_see_each_other():
    script = textwrap.dedent(
        """
        import sys
        from trl_grpo_ext.tools import PythonSession, PythonToolConfig
        s = PythonSession(PythonToolConfig(timeout_s=20.0))
        s.python(f"open('/tmp/shared_name', 'a').write('{sys.argv[1]}')")
        import time; time.sleep(1.0)  # both processes hold their sessions at once
        print(s.python("open('/tmp/shared_name').read()"))
        """
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", script, f"proc{i}"], stdout=subprocess.PIPE, text=True)
        for i in range(2)
    ]
    outputs = [p.communicate(timeout=120)[0].strip() for p in procs]
    assert outputs == ["'proc0'", "'proc1'"]


def test_host_files_are_neither_readable_nor_writable(session, tmp_path):
    secret = tmp_path / "dataset.jsonl"
    secret.write_text("the hidden answer")
    assert session.python(f"open({str(secret)!r}).read()").startswith("FileNotFoundError")
    for root in ("/work", "/home", "/etc/shadow", "/root/.cache", "/root/.ssh", os.getcwd()):
        assert session.python(f"import os; os.path.exists({root!r})") == "False"
    sentinels = [tmp_path / "escaped", "/usr/escaped", "/opt/escaped"]
    for path in sentinels:
        assert session.python(f"open({str(path)!r}, 'w').write('x')").startswith(
            ("OSError", "FileNotFoundError", "PermissionError")
        ), path  # noqa: E501
    # Its own /tmp and /dev/shm (a private tmpfs, for multiprocessing) are writable; nothing reaches the host's.
    assert session.python("open('/tmp/ok', 'w').write('fine')") == "4"
    assert session.python("open('/dev/shm/escaped', 'w').write('x')") == "1"
    assert not any(os.path.exists(p) for p in [*sentinels, "/dev/shm/escaped"])


def test_no_network(session):
    text = session.python("import socket\nsocket.create_connection(('1.1.1.1', 53), timeout=2)")
    assert text.startswith("OSError") and "unreachable" in text


def test_secret_environment_is_not_inherited(monkeypatch):
    monkeypatch.setenv("TRL_TOOL_TEST_SECRET", "hunter2")
    s = PythonSession(CONFIG)
    code = textwrap.dedent(
        """
        import os
        found = []
        for pid in [p for p in os.listdir('/proc') if p.isdigit()]:
            try: found.append(open(f'/proc/{pid}/environ', 'rb').read())
            except OSError: pass
        sorted(os.environ), any(b'hunter2' in e for e in found)
        """
    )
    text = s.python(code)
    s._end_session()
    names, leaked = eval(text)
    assert "TRL_TOOL_TEST_SECRET" not in names and leaked is False


def test_a_listening_port_does_not_reach_the_host(session):
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    text = session.python(
        f"import socket\ns = socket.socket(); s.bind(('127.0.0.1', {port})); s.listen(); 'listening'"
    )
    assert text == "'listening'"
    with socket.socket() as client, pytest.raises(OSError):
        client.settimeout(2)
        client.connect(("127.0.0.1", port))


def test_cpu_limit_per_call_keeps_the_session(session):
    session.python("kept = 'yes'")
    assert session.python("while True: pass") == "TimeoutError: the call used up its CPU time"
    assert session.python("kept") == "'yes'"


def test_memory_limit_keeps_the_session(session):
    session.python("kept = 'yes'")
    assert session.python("x = bytearray(64 << 30)") == "MemoryError"
    assert session.python("kept") == "'yes'"


# Memory held outside any one process's address space (memfd files, children each under the limit): the
# interpreter's cgroup bounds it as a whole, so the call never gets to say "held" (sandbox/cgroups.py).
MEMORY_HOLDERS = {
    "memfds": "import os\nfds = [os.memfd_create(f'h{i}') for i in range(70)]\n"
    "for fd in fds: os.write(fd, b'm' * (15 << 20))\nprint('held')",
    "children": "import os, time\nr, w = os.pipe()\nfor _ in range(5):\n    if os.fork() == 0:\n"
    "        hold = b'c' * (250 << 20)\n        os.write(w, b'.')\n        time.sleep(60)\n"
    "got = b''\nwhile len(got) < 5: got += os.read(r, 5)\nprint('held')",
}


@pytest.mark.parametrize("attack", sorted(MEMORY_HOLDERS))
def test_memory_is_bounded_per_interpreter_as_a_whole(attack):
    session = PythonSession(dataclasses.replace(CONFIG, memory_mb=256))  # each attack holds about 1 GiB
    session.reset()
    try:
        text = session.python(MEMORY_HOLDERS[attack])
        assert "held" not in text, text
        assert session.python("1 + 1") == "2"  # the tool still answers (a fresh interpreter if it was killed)
    finally:
        session._end_session()


def test_wall_clock_deadline_restarts_the_session(session):
    session.python("kept = 'yes'")
    text = session.python("import time; time.sleep(60)")
    assert text.startswith("Error: the call took longer than 6 s and was stopped; the session was restarted")
    assert session.python("kept") == "NameError: name 'kept' is not defined"


def test_fork_bomb_is_contained_and_leaves_nothing(session):
    token = f"{3000 + os.getpid() % 1000}.{os.getpid()}"  # a sleep argument unique to this test
    bomb = (
        "import os\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        f"    os.execv('/usr/bin/sleep', ['sleep', '{token}'])\n"
        "while True:\n"
        "    try: os.fork()\n"
        "    except OSError: pass\n"
    )
    text = session.python(bomb)
    assert text.startswith(("TimeoutError", "Error: ")), text
    session._end_session()
    assert not [pid for pid in os.listdir("/proc") if pid.isdigit() and token in _cmdline(pid)]
    assert session.python("1 + 1") == "2"


def test_killing_its_own_parents_ends_only_the_session(session):
    text = session.python(
        "import os, signal\nfor pid in range(1, 200):\n    try: os.kill(pid, signal.SIGKILL)\n    except OSError: pass"
    )  # noqa: E501
    assert text.startswith("Error: ") or text == ""
    assert session.python("2 + 2") == "4"


def _cmdline(pid: str) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().decode(errors="replace")
    except OSError:
        return ""


def test_machinery_failure_is_a_counted_tool_error_then_raises(monkeypatch):
    config = PythonToolConfig(timeout_s=5.0, max_failed_calls=2)
    tool = make_python_tool(config)
    runtime = interpreter_module.runtime_for(config)

    def broken():
        raise SandboxError("the sandbox fork server did not start in time")

    monkeypatch.setattr(runtime.pool, "acquire", broken)
    FAILURES.streak = 0
    before = TOOL_STATS.snapshot()
    text = tool("1 + 1")
    assert text.startswith("PythonToolError: the tool failed to run the code (not the code's fault)")
    after = TOOL_STATS.snapshot() - before
    assert (after.calls, after.machinery_errors) == (1, 1)
    with pytest.raises(PythonToolFailure, match="failed on 2 calls in a row"):
        tool("1 + 1")
    assert not isinstance(PythonToolFailure("x"), Exception)  # TRL's tool loop catches Exception only
    monkeypatch.undo()
    assert tool("1 + 1") == "2"


def test_one_machinery_failure_is_retried_on_a_fresh_sandbox(monkeypatch):
    config = PythonToolConfig(timeout_s=5.0, max_failed_calls=1)
    tool = make_python_tool(config)
    pool = interpreter_module.runtime_for(config).pool
    real, failures = pool.acquire, []

    def flaky():
        if not failures:
            failures.append(1)
            raise SandboxError("a sandbox that did not start")
        return real()

    monkeypatch.setattr(pool, "acquire", flaky)
    before = TOOL_STATS.snapshot()
    assert tool("3 * 3") == "9"
    assert (TOOL_STATS.snapshot() - before).machinery_errors == 0


def test_fails_closed_without_the_isolation(monkeypatch):
    def no_bwrap(requested):
        raise RuntimeError("code verifier: isolation='auto' needs bubblewrap, but bubblewrap (bwrap) is not installed")

    monkeypatch.setattr(interpreter_module, "detect_isolation", no_bwrap)
    config = PythonToolConfig(timeout_s=7.0)  # a runtime not made yet
    with pytest.raises(RuntimeError, match="python tool: isolation='auto' needs bubblewrap"):
        make_python_tool(config)
    with pytest.raises(RuntimeError, match="needs bubblewrap"):
        PythonSession(config)
    with pytest.raises(PythonToolFailure, match="needs bubblewrap"):
        stateless_call("1", config)  # what `python` does at its first call


def test_weak_isolation_only_by_name():
    with pytest.raises(ValueError, match="Valid choices: auto, bwrap, rlimits"):
        PythonToolConfig(isolation="none")
    tool = make_python_tool(PythonToolConfig(isolation="rlimits", timeout_s=5.0))
    assert tool("6 * 7") == "42"
    runtime = interpreter_module.runtime_for(PythonToolConfig(isolation="rlimits", timeout_s=5.0))
    assert runtime.isolation.level == "rlimits" and "weak isolation" in runtime.isolation.warning


@pytest.mark.parametrize(
    "field, value", [("timeout_s", 0), ("cpu_s", 0), ("max_output_chars", 10), ("warm", -1), ("memory_mb", 1.5)]
)
def test_bad_settings_name_the_field(field, value):
    with pytest.raises(ValueError, match=f"PythonToolConfig.{field}="):
        PythonToolConfig(**{field: value})


def test_step_metrics_from_counts():
    from trl_grpo_ext.tools import ToolCounts

    step = ToolCounts(calls=7, machinery_errors=1, seconds=3.5) - ToolCounts(calls=1, machinery_errors=0, seconds=0.5)
    assert step.step_metrics(completions=4) == {
        "tools/python/calls_per_completion": 1.5,
        "tools/python/errors": 1.0,
        "tools/python/time_s": 3.0,
        "tools/python/time_per_call_s": 0.5,
    }
    assert ToolCounts().step_metrics(completions=0)["tools/python/time_per_call_s"] == 0.0


def test_long_code_is_sent_in_pieces(session):
    literal = "ab" * 200_000  # 400 kB: many times the pipe's buffer
    assert session.python(f"x = {literal!r}\nlen(x)") == "400000"
    assert session.python("x[:4]") == "'abab'"
