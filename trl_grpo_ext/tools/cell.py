"""The interpreter side of the Python tool: runs the model's code cells inside the code verifier's sandbox.

Not imported by the package: its text is handed to the sandbox harness as the candidate's code in the harness's
`functions` mode (code/standalone/harness.py), so it runs with `python -I -S`, standard library only (both rules are
checked by tests/test_layout.py), after the harness has set the rlimits and dropped to the sandbox's own uid. The host then calls `run_cell` once per tool call
over the harness's request pipe. Nothing it returns is trusted: the model's code shares this interpreter and may
rewrite any of it, so the host bounds and truncates what comes back, and keeps the wall-clock deadline itself.

State persists across the cells of one session in `SESSION` (a notebook's globals), and nowhere else: a new session is
a new sandbox.
"""

import ast
import builtins
import os
import resource
import signal
import sys
import traceback

SESSION = {"__name__": "__main__", "__builtins__": builtins}


def _cpu_exceeded(signum, frame):
    raise TimeoutError("the call used up its CPU time")


# SIGXCPU at the soft CPU limit of a call raises in the cell (the session survives); the hard limit, the session's
# total, kills the interpreter. Writing past the file-size limit raises OSError rather than killing it.
signal.signal(signal.SIGXCPU, _cpu_exceeded)
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)


def _set_cpu_soft_limit(extra_s):
    """Soft RLIMIT_CPU at the CPU time spent so far plus `extra_s` (None: at the hard limit)."""
    hard = resource.getrlimit(resource.RLIMIT_CPU)[1]
    if extra_s is None:
        soft = hard
    else:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        soft = int(usage.ru_utime + usage.ru_stime) + 1 + int(extra_s)
        soft = soft if hard == resource.RLIM_INFINITY else min(soft, hard)
    resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))


def _last_line(exc):
    try:
        return traceback.format_exception_only(type(exc), exc)[-1].strip()
    except BaseException:  # an exception may break its own __str__
        return type(exc).__name__


def _execute(code):
    """Run the cell in the session; the repr of its final expression, if it is one and not None."""
    tree = ast.parse(code, "<cell>", "exec")
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    exec(compile(tree, "<cell>", "exec"), SESSION)
    if last is None:
        return None
    value = eval(compile(ast.Expression(last.value), "<cell>", "eval"), SESSION)
    return None if value is None else repr(value)


def _read_capture(fd, max_chars):
    size = os.lseek(fd, 0, os.SEEK_END)
    os.lseek(fd, 0, os.SEEK_SET)
    head = os.read(fd, 4 * max_chars + 4)
    return head.decode("utf-8", errors="replace")[: max_chars + 1], size


def run_cell(code, cpu_s, max_chars):
    """Run one cell: {"output": stdout and stderr, "output_bytes", "value": repr or None, "value_chars",
    "error": last line or None}.

    `output` and `value` are cut a little past `max_chars` here, to bound what crosses the pipe; the host truncates."""
    capture = os.memfd_create("cell_output")
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os.dup2(capture, 1)
    os.dup2(capture, 2)
    value = error = None
    owner = os.getpid()
    try:
        _set_cpu_soft_limit(cpu_s)
        value = _execute(code)
    except BaseException as exc:  # SystemExit and KeyboardInterrupt too: the model sees them as any error
        error = _last_line(exc)
    finally:
        if os.getpid() != owner:  # a child the cell forked ends here, rather than answer the host as well
            os._exit(0)
        _set_cpu_soft_limit(None)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException as exc:  # the cell may have closed or replaced them
            error = error or _last_line(exc)
    output, size = _read_capture(capture, max_chars)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    os.close(devnull)
    os.close(capture)
    value_chars = len(value) if value is not None else 0
    value = value[: max_chars + 1] if value is not None else None
    return {"output": output, "output_bytes": size, "value": value, "value_chars": value_chars, "error": error}
