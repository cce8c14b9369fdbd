"""Executions per second of the `code` verifier next to a naive subprocess-per-test harness, in one run.

    python benchmarks/code_verifier.py                  # 2 workers, trivial and 100 ms programs
    python benchmarks/code_verifier.py --workers 2 --trivial 300 --slow 40 --rounds 3

The naive harness is what many RL code pipelines do: `subprocess.run([python, "-c", code + tests])` and reward 1 when
the exit code is 0 (no isolation, forgeable), on a thread pool of the same size. The verifier runs with its worker
pool at its strongest isolation level here (under bubblewrap as root: candidates forked from a warm interpreter, see
verifiers/sandbox/fork.py) and at the "rlimits" fallback (a process per candidate). Rounds are interleaved (naive,
verifier, fallback, naive, ...) so that load from other processes hits all of them; the median round is printed, with
the load average before and after: the ratios hold under load, absolute times need an idle machine. So does the CPU
time per execution, counted over the whole machine (/proc/stat, every process and kernel thread included): it is
what the harnesses cost, where the rates also depend on how well each fills the cores.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

from trl_grpo_ext.verifiers import get_verifier

TESTS = "assert add(1, 2) == 3\nassert add(5, 7) == 12\nassert add(-4, 4) == 0\n"
TRIVIAL = "def add(a, b):\n    return a + b\n"
# About 100 ms of CPU before the function is defined, as a program that does real work would.
SLOW = "import time\n_end = time.process_time() + 0.1\nwhile time.process_time() < _end:\n    pass\n" + TRIVIAL


def naive_reward(code: str) -> float:
    run = subprocess.run([sys.executable, "-c", code + "\n" + TESTS], capture_output=True, timeout=30)
    return float(run.returncode == 0)


def naive_rate(code: str, n: int, workers: int) -> float:
    with ThreadPoolExecutor(workers) as pool:
        start = time.perf_counter()
        rewards = list(pool.map(naive_reward, [code] * n))
        elapsed = time.perf_counter() - start
    assert rewards == [1.0] * n, "the naive harness failed a correct program"
    return n / elapsed


def verifier_rate(verifier, code: str, n: int) -> float:
    verifier.verify(code, TESTS)  # warm: judge process started, pool filled
    start = time.perf_counter()
    results = verifier.verify_batch([code] * n, [TESTS] * n)
    elapsed = time.perf_counter() - start
    assert [r.score for r in results] == [1.0] * n, {r.reason for r in results}
    return n / elapsed


def busy_seconds() -> float:
    """CPU time the machine has spent, all cores, everything but idle and I/O wait."""
    with open("/proc/stat") as stat:
        ticks = [int(field) for field in stat.readline().split()[1:]]
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


def measured(measure, code: str, n: int) -> tuple[float, float]:
    """(executions per second, ms of machine CPU per execution) of one round."""
    before = busy_seconds()
    rate = measure(code, n)
    return rate, 1000 * (busy_seconds() - before) / n


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--trivial", type=int, default=300, help="executions of the trivial program per round")
    parser.add_argument("--slow", type=int, default=40, help="executions of the 100 ms program per round")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)

    strong = get_verifier("code", workers=args.workers, timeout_s=30)
    fallback = get_verifier("code", workers=args.workers, timeout_s=30, isolation="rlimits")
    harnesses = {
        "naive subprocess (no isolation)": lambda code, n: naive_rate(code, n, args.workers),
        f"code verifier ({strong.isolation.level})": lambda code, n: verifier_rate(strong, code, n),
        f"code verifier ({fallback.isolation.level})": lambda code, n: verifier_rate(fallback, code, n),
    }
    print(f"workers={args.workers}  rounds={args.rounds}  python={sys.version.split()[0]}  {load_average()}")
    try:
        for label, code, n in (("trivial", TRIVIAL, args.trivial), ("100 ms", SLOW, args.slow)):
            rates = {name: [] for name in harnesses}
            cpu = {name: [] for name in harnesses}
            for _ in range(args.rounds):
                for name, measure in harnesses.items():
                    rate, cpu_ms = measured(measure, code, n)
                    rates[name].append(rate)
                    cpu[name].append(cpu_ms)
            naive = statistics.median(rates[next(iter(harnesses))])
            print(f"\n{label} program, {n} executions per round (median of {args.rounds}):")
            for name, values in rates.items():
                rate = statistics.median(values)
                per_exec_ms = 1000 * args.workers / rate
                print(
                    f"  {name:38s} {rate:7.1f} exec/s  {per_exec_ms:6.1f} ms/exec/worker  x{rate / naive:4.2f}"
                    f"  {statistics.median(cpu[name]):6.1f} ms CPU/exec"
                )
        print(f"\nafter: {load_average()}")
    finally:
        strong.close()
        fallback.close()


def load_average() -> str:
    return (
        "load average (1, 5, 15 min): "
        + ", ".join(f"{x:.2f}" for x in os.getloadavg())
        + f" on {os.cpu_count()} cores"
    )


if __name__ == "__main__":
    main()
