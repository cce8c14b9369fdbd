"""What a spawned process does with reward functions it was handed (importable there: multiprocessing passes it
this sys.path)."""

from __future__ import annotations

import os

from process_tree import descendants


def call_and_report(rewards, calls, results, exit_at_once: bool = False) -> None:
    """Call each reward function on its batch, put (the rewards, the processes below this one) on `results`, then
    end: normally (atexit handlers run), or with `os._exit` (none run, as when killed)."""
    outputs = [reward(**call) for reward, call in zip(rewards, calls)]
    results.put((outputs, descendants(os.getpid())))
    if exit_at_once:
        results.close()
        results.join_thread()
        os._exit(0)
