"""What a spawned process does with reward functions it was handed (importable there: multiprocessing passes it
this sys.path)."""

from __future__ import annotations

import atexit
import os
from multiprocessing.connection import Connection

from process_tree import descendants, survivors


def call_and_report(rewards, calls, report: Connection, exit_at_once: bool = False) -> None:
    """Call each reward function on its batch and send (the rewards, the processes below this one, those of them
    alive once the exit handlers have run) on `report`, then end: normally, or with `os._exit` (as when killed: no
    exit handler runs; the third item is then None)."""
    outputs = [reward(**call) for reward, call in zip(rewards, calls)]
    below = descendants(os.getpid())
    if exit_at_once:
        report.send((outputs, below, None))
        os._exit(0)
    atexit._run_exitfuncs()  # what the interpreter does at exit, run now so that this process can look afterwards
    report.send((outputs, below, survivors(below)))
