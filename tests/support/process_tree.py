"""The processes below a process, named so that a reused pid is not mistaken for one of them."""

from __future__ import annotations

import os


def start_time(pid: int) -> int | None:
    """When process `pid` started (clock ticks since boot), None if it is gone or a zombie: with the pid, it names one
    process even if the pid is reused later."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except OSError:
        return None
    return None if fields[0] == b"Z" else int(fields[19])


def descendants(pid: int) -> list[tuple[int, int]]:
    """Every live process below `pid` in the process tree, as (pid, start time)."""
    parents = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                parents[int(entry)] = int(f.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        for child in (p for p, pp in parents.items() if pp == parent):
            todo.append(child)
            started = start_time(child)
            if started is not None:
                found.append((child, started))
    return found


def survivors(processes: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Those of `processes` ((pid, start time) pairs) still alive: zombies and reused pids are not."""
    return [(pid, started) for pid, started in processes if start_time(pid) == started]
