"""The CPU time one minimal request of the judge costs on each side of the pipes, as a start-up calibration of the
transport allowances would measure it.

    python benchmarks/transport_cost.py --starts 10 --batches 10 --calls 2000

Each start is a fresh harness (`python -I -B -S harness.py`, its limits and seccomp filter as in a sandbox; no
namespaces, no dedicated uid) answering `add(i, 1)` (an int in and out) in lock-step, as the judge asks: a request
written, its reply read and parsed. Per batch: the harness's CPU time (`/proc/PID/schedstat`, nanoseconds on the CPU)
and this process's (the judge's side: write, read, parse) divided by the calls. A start's figure is the least of its
batches (the one least disturbed by the machine's load); printed are each start's figures and their spread, the
quantity a calibration at start-up would rely on (docs/code_verifier_sandbox.md, The candidate's clock). The
allowances it would replace are printed alongside: `CALL_ALLOWANCE_S` (code/clock.py) and `REPLY_ALLOWANCE_S`
(code/standalone/judge_proxy.py).
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import statistics
import subprocess
import sys
import time

from trl_grpo_ext.verifiers.code.clock import CALL_ALLOWANCE_S
from trl_grpo_ext.verifiers.code.standalone import SCRIPT_FLAGS, STANDALONE_DIR
from trl_grpo_ext.verifiers.code.standalone.protocol import LineReader, write_message

WARM_UP_CALLS = 500  # the interpreter specialises `add` and the harness's loop before any batch is timed
HARNESS_LIMITS = {"rlimits": {}, "uid": None, "workdir": "/tmp", "path": []}


def script_constant(script: str, name: str):
    """A constant of a standalone script, read from its text (the scripts import their neighbours by bare name)."""
    for node in ast.parse((STANDALONE_DIR / script).read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == name for t in node.targets):
            return ast.literal_eval(node.value)
    raise LookupError(f"{name} is not a constant of {script}")


def cpu_s(pid: int) -> float:
    """Time on the CPU of the process's main thread (the harness has no other)."""
    with open(f"/proc/{pid}/schedstat") as f:
        return int(f.read().split()[0]) / 1e9


def round_trips(request_w: int, replies: LineReader, first: int, count: int) -> None:
    for i in range(first, first + count):
        write_message(request_w, {"id": i, "op": "call", "target": {"name": "add"}, "args": [i, 1], "kwargs": {}})
        reply = replies.read_message()
        if reply.get("value") != i + 1:
            raise RuntimeError(f"unexpected reply to add({i}, 1): {reply}")


def one_start(batches: int, calls: int) -> tuple[float, float]:
    """(harness, judge side) CPU seconds per request: the least over `batches` batches of `calls` requests."""
    request_r, request_w = os.pipe()
    reply_r, reply_w = os.pipe()
    command = [sys.executable, *SCRIPT_FLAGS, "-S", str(STANDALONE_DIR / "harness.py")]
    harness = subprocess.Popen(
        [*command, str(request_r), str(reply_w), json.dumps(HARNESS_LIMITS)],
        pass_fds=(request_r, reply_w),
        stderr=subprocess.DEVNULL,
    )
    os.close(request_r)
    os.close(reply_w)
    replies = LineReader(reply_r, 1 << 20)
    try:
        said = [replies.read_message()]
        write_message(request_w, {"mode": "functions", "code": "def add(a, b):\n    return a + b\n"})
        said += [replies.read_message(), replies.read_message()]
        if said[0] != {"started": True} or said[1].get("setup") != "ok" or not said[2].get("ready"):
            raise RuntimeError(f"the harness did not start: {said}")
        round_trips(request_w, replies, 1, WARM_UP_CALLS)
        figures = []
        for batch in range(batches):
            harness_before, judge_before = cpu_s(harness.pid), time.process_time()
            round_trips(request_w, replies, WARM_UP_CALLS + 1 + batch * calls, calls)
            harness_s, judge_s = cpu_s(harness.pid) - harness_before, time.process_time() - judge_before
            figures.append((harness_s / calls, judge_s / calls))
    finally:
        os.close(request_w)
        harness.wait()
        os.close(reply_r)
    return min(f[0] for f in figures), min(f[1] for f in figures)


def spread(name: str, values_s: list[float], allowance_s: float) -> str:
    us = sorted(1e6 * v for v in values_s)
    return (
        f"{name}: {' '.join(f'{u:.1f}' for u in us)} us per request (min {us[0]:.1f}, median "
        f"{statistics.median(us):.1f}, max {us[-1]:.1f}, max/min {us[-1] / us[0]:.2f}); allowance "
        f"{1e6 * allowance_s:g} us"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--starts", type=int, default=10, help="fresh harnesses, one figure each")
    parser.add_argument("--batches", type=int, default=10, help="batches per start; its figure is their least")
    parser.add_argument("--calls", type=int, default=2000, help="requests per batch")
    args = parser.parse_args()
    figures = [one_start(args.batches, args.calls) for _ in range(args.starts)]
    print(f"load average {os.getloadavg()[0]:.2f}; {args.starts} starts, least of {args.batches} x {args.calls} calls")
    print(spread("harness (CALL_ALLOWANCE_S)", [f[0] for f in figures], CALL_ALLOWANCE_S))
    reply_allowance_s = script_constant("judge_proxy.py", "REPLY_ALLOWANCE_S")
    print(spread("judge side (REPLY_ALLOWANCE_S)", [f[1] for f in figures], reply_allowance_s))


if __name__ == "__main__":
    main()
