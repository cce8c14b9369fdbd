"""Where a candidate's time goes: timestamps of each stage, for `benchmarks/code_verifier.py --breakdown` only.

Off unless `TRL_GRPO_EXT_CODE_STAGES=1` is set (or `enable()` is called, as the benchmark does) before the first
sandbox starts: then each candidate's sandbox carries an `events` dict of named `time.monotonic()` readings, taken
in the verifier, the fork server, the candidate's init and harness, and the judge (CLOCK_MONOTONIC is the same clock
in every process of the machine: no time namespace is made), and `collect()` returns them once the candidate is torn
down. When off, `events` is None and each stage costs one test of it. The readings from inside the sandbox come
back with its reports (the status pipe, the set-up report through the judge's verdict), so a candidate could forge
its own harness's readings: they are measurements for a benchmark, never trusted for anything else.
"""

from __future__ import annotations

import os
import threading
import time

ENV_VAR = "TRL_GRPO_EXT_CODE_STAGES"

_lock = threading.Lock()
_records: list[dict] | None = [] if os.environ.get(ENV_VAR) == "1" else None


def enable() -> None:
    """Record the stages of every candidate from now on (the benchmark's `--breakdown`)."""
    global _records
    with _lock:
        if _records is None:
            _records = []


def new_events() -> dict | None:
    """A candidate's event dict, or None when recording is off."""
    return {"spawn": time.monotonic()} if _records is not None else None


def mark(events: dict | None, name: str) -> None:
    if events is not None:
        events[name] = time.monotonic()


def merge(events: dict | None, remote) -> None:
    """Readings another process reported (plain numbers by name); anything else is ignored."""
    if events is None or type(remote) is not dict:
        return
    for name, value in remote.items():
        if type(name) is str and type(value) in (int, float):
            events.setdefault(name, float(value))


def done(events: dict | None) -> None:
    """The candidate is torn down: keep its readings for `collect()`."""
    if events is not None:
        events["done"] = time.monotonic()
        with _lock:
            if _records is not None:
                _records.append(events)


def collect() -> list[dict]:
    """The readings of the candidates done since the last call."""
    global _records
    with _lock:
        found, _records = (_records or []), ([] if _records is not None else None)
    return found
