"""Worker initializers and task functions for the DeadlinePool tests (importable by a fresh worker interpreter through
PYTHONPATH)."""

import os
import signal
import time


def record_start() -> None:
    """Take a moment, then leave a file named after this worker's pid in $POOL_TEST_DIR."""
    time.sleep(0.5)
    with open(os.path.join(os.environ["POOL_TEST_DIR"], str(os.getpid())), "w"):
        pass


def fail_to_start() -> None:
    raise RuntimeError("this initializer always fails")


def slow_start() -> None:
    """A worker that takes 3 s to start, like one importing and warming a large library."""
    time.sleep(3.0)


def burn_cpu(seconds: float) -> float:
    """Busy-loop until this process has used `seconds` more of CPU time, however long that takes on the wall clock."""
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass
    return seconds


def exit_after_recording(directory: str, code: int) -> None:
    """Leave a file named after this worker's pid in `directory`, then end the process at once with `code`."""
    with open(os.path.join(directory, str(os.getpid())), "w"):
        pass
    os._exit(code)


def segfault() -> None:
    os.kill(os.getpid(), signal.SIGSEGV)


def exit_on_first_attempt(directory: str) -> str:
    """The first call (no marker file yet) ends its process; the retry on a fresh worker returns "second attempt"."""
    marker = os.path.join(directory, "first")
    if not os.path.exists(marker):
        open(marker, "w").close()
        os._exit(1)
    return "second attempt"


def wait_to_be_killed_on_first_attempt(directory: str) -> str:
    """The first call writes its pid to `directory`/pid and sleeps for the test to kill it; the retry returns."""
    path = os.path.join(directory, "pid")
    if not os.path.exists(path):
        with open(path + ".tmp", "w") as f:
            f.write(str(os.getpid()))
        os.rename(path + ".tmp", path)
        time.sleep(60)
    return "second attempt"


def do_nothing() -> None:
    """An initializer that starts a worker at once (in place of the math verifier's sympy warm-up)."""


def compare_segfaulting(*_args) -> None:
    segfault()


def compare_raising_type_error(*_args) -> None:
    raise TypeError("a bug in the comparison")


def compare_raising_on_answers_only(groups, *_args) -> tuple[bool, str]:
    """A comparison with a bug that only answers other than the reference meet: it decides (reference, reference)."""
    if any(pred != ref for pairs in groups for pred, ref in pairs):
        raise TypeError("a bug in the comparison")
    return True, "symbolic"


def compare_raising_recursion_error(*_args) -> None:
    raise RecursionError("maximum recursion depth exceeded")


def compare_raising_memory_error(*_args) -> None:
    raise MemoryError()


def sleep_then_time(seconds: float) -> float:
    """Sleep (using no CPU), then return the wall-clock time at which the item ended."""
    time.sleep(seconds)
    return time.time()


def keyed_task(key: str, action: str) -> str:
    """One item of a keyed batch (`DeadlinePool.map`'s affinity): returns its key, or misbehaves as `action` says
    ("slow": burns CPU for a minute; "exit": ends the process; "memory": raises MemoryError)."""
    if action == "slow":
        burn_cpu(60)
    elif action == "exit":
        os._exit(3)
    elif action == "memory":
        raise MemoryError()
    return key


def keyed_pid(key: str, seconds: float) -> int:
    """Sleep `seconds` (no CPU), then return this worker's pid: which worker ran an item of `key`."""
    time.sleep(seconds)
    return os.getpid()


def compare_with_a_bug_in_set_simplify(*args):
    """The math verifier's comparison, run where sympy's simplify raises ZeroDivisionError on sets: a bug, not a
    documented "cannot" (tests/verifiers/math/test_sympy_failures.py)."""
    import sympy

    from trl_grpo_ext.verifiers.math import verifier

    simplify = sympy.simplify

    def simplify_or_fail(expr, *rest, **kwargs):
        if isinstance(expr, sympy.Set):
            raise ZeroDivisionError("a bug")
        return simplify(expr, *rest, **kwargs)

    sympy.simplify = simplify_or_fail
    try:
        return verifier.compare_task(*args)
    finally:
        sympy.simplify = simplify


def wait_for_files(paths, timeout_s: float = 60.0) -> bool:
    """Whether every file of `paths` exists within `timeout_s`: a handshake with another process or thread (the
    bound only ends a test that is failing)."""
    deadline = time.monotonic() + timeout_s
    while not all(os.path.exists(p) for p in paths):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True


def touch(path: str) -> None:
    with open(path + ".tmp", "w") as f:
        f.write(str(os.getpid()))
    os.rename(path + ".tmp", path)


def signal_and_wait(mark: str | None, wait_for: tuple[str, ...] = (), seconds: float = 0.0) -> bool:
    """An item that says it runs (creates `mark`, holding its worker's pid), waits until every file of `wait_for`
    exists, then sleeps `seconds` (using no CPU); returns whether the files came (within a minute)."""
    if mark:
        touch(mark)
    came = wait_for_files(wait_for)
    time.sleep(seconds)
    return came


def mark_then_burn(mark: str | None, seconds: float) -> None:
    """Say the item runs (create `mark`), then burn CPU for `seconds`."""
    if mark:
        touch(mark)
    burn_cpu(seconds)
