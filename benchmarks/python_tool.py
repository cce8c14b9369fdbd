"""Latency of a trivial call of the sandboxed Python tool next to a plain `subprocess` run of the same code.

    python benchmarks/python_tool.py                  # 200 calls of each kind, interleaved
    python benchmarks/python_tool.py --calls 500 --code "sum(range(10))"

Three ways to run the code, one call at a time, interleaved (subprocess, stateless tool, session call, subprocess, ...)
so that load from other processes hits all of them:

- `subprocess`: `subprocess.run([python, "-c", code], capture_output=True)`: no isolation at all, what a hand-written
  TRL tool often does;
- `python` (stateless): a fresh sandboxed interpreter per call (`trl_grpo_ext.tools.python`);
- `PythonSession.python`: a call in an interpreter already started for the rollout (the first call of a session
  costs what a stateless call costs).

Printed: median, 90th percentile and mean wall time per call in milliseconds, and the load average before and after
(absolute times need an idle machine; the warm pool keeps `warm` interpreters started ahead, 2 by default).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

from trl_grpo_ext.tools import PythonSession, PythonToolConfig, make_python_tool


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200, help="calls of each kind")
    parser.add_argument("--code", default="x = 6 * 7\nprint(x)", help="the trivial code each call runs")
    parser.add_argument("--isolation", default="auto", help="the tool's isolation (auto, bwrap, rlimits)")
    args = parser.parse_args()
    config = PythonToolConfig(isolation=args.isolation)
    tool = make_python_tool(config)
    session = PythonSession(config)
    expected = subprocess.run([sys.executable, "-c", args.code], capture_output=True, text=True).stdout.strip()
    for answer in (tool(args.code), session.python(args.code)):  # warm up, and check they agree
        if answer.strip() != expected:
            raise SystemExit(f"the tool answered {answer!r}, the subprocess {expected!r}")
    runs = {
        "subprocess (no isolation)": lambda: subprocess.run([sys.executable, "-c", args.code], capture_output=True),
        "python tool, stateless": lambda: tool(args.code),
        "PythonSession call": lambda: session.python(args.code),
    }
    times = {name: [] for name in runs}
    load_before = os.getloadavg()[0]
    for _ in range(args.calls):
        for name, run in runs.items():
            start = time.perf_counter()
            run()
            times[name].append(1000 * (time.perf_counter() - start))
    session._end_session()
    print(
        f"{args.calls} calls of each kind of {args.code!r}; load average {load_before:.1f} -> {os.getloadavg()[0]:.1f}"
    )
    print(f"{'':28s} {'median ms':>10s} {'p90 ms':>8s} {'mean ms':>8s}")
    for name, values in times.items():
        p90 = statistics.quantiles(values, n=10)[-1]
        print(f"{name:28s} {statistics.median(values):10.2f} {p90:8.2f} {statistics.mean(values):8.2f}")


if __name__ == "__main__":
    main()
