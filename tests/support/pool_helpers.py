"""Worker initializers for the DeadlinePool tests (importable by a fresh worker interpreter through PYTHONPATH)."""

import os
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
