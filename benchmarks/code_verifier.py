"""Executions per second of the `code` verifier next to a naive subprocess-per-test harness, in one run.

    python benchmarks/code_verifier.py                  # 2 workers, trivial and 100 ms programs
    python benchmarks/code_verifier.py --workers 2 --trivial 300 --slow 40 --rounds 3
    python benchmarks/code_verifier.py --grpo 40 --rounds 3   # GRPO-shaped batches: 40 tasks x 8 completions
    python benchmarks/code_verifier.py --breakdown 300   # where a trivial candidate's time goes, stage by stage

The naive harness is what many RL code pipelines do: `subprocess.run([python, "-c", code + tests])` and reward 1 when
the exit code is 0 (no isolation, forgeable), on a thread pool of the same size. The verifier runs with its worker
pool at its strongest isolation level here (under bubblewrap as root: candidates forked from a warm interpreter, see
verifiers/sandbox/fork.py) and at the "rlimits" fallback (a process per candidate). Rounds are interleaved (naive,
verifier, fallback, naive, ...) so that load from other processes hits all of them; the median round is printed, with
the load average before and after: the ratios hold under load, absolute times need an idle machine. So does the CPU
time per execution, counted over the whole machine (/proc/stat, every process and kernel thread included): it is
what the harnesses cost, where the rates also depend on how well each fills the cores. As root with cgroup v1, the
benchmark also runs in a cpuacct group of its own and prints the CPU of its own process tree (the harness, its
subprocesses, the judge, the sandboxes; not the kernel's worker threads), which other jobs on the machine do not
inflate.

Every program of the unique-program rounds is different text (a numbered comment), in every round, so that a
verifier that runs identical work once (in-batch deduplication, a verdict cache across calls) still runs each one;
each round of GRPO-shaped batches has tasks of its own too. The GRPO-shaped batches (`--grpo`)
are what a GRPO step scores: tasks, each with its own hidden test, and G = 8 completions per task, as
`GROUP_TEMPLATES` says: 3 copies of one correct program, 2 copies of another, a third correct one, a wrong answer and
one that raises; 5 distinct programs in 8 (the duplication rate, 3/8 = 37.5% of the completions repeat one of their
group's, is printed from the batch itself). The naive harness runs all 8; the verifier gets the batch as
`verify_batch` does in training, and whatever it does with duplicates counts.
"""

from __future__ import annotations

import argparse
import atexit
import os
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from code_breakdown import ProcessCpu, physical_limits, print_process_cpu, print_stage_table

from trl_grpo_ext.verifiers import get_verifier
from trl_grpo_ext.verifiers.sandbox import stages

TESTS = "assert add(1, 2) == 3\nassert add(5, 7) == 12\nassert add(-4, 4) == 0\n"
TRIVIAL = "def add(a, b):\n    return a + b  # {n}\n"
# About 100 ms of CPU before the function is defined, as a program that does real work would.
SLOW = "import time\n_end = time.process_time() + 0.1\nwhile time.process_time() < _end:\n    pass\n" + TRIVIAL
# A GRPO group: (program, copies). The task's hidden test checks add(a, b) == a + b + k, k the task's number.
GROUP_TEMPLATES = (
    ("def add(a, b):\n    return a + b + {k}\n", 3),
    ("def add(a, b):\n    total = a + b\n    return total + {k}\n", 2),
    ("def add(x, y):\n    return sum((x, y, {k}))\n", 1),
    ("def add(a, b):\n    return a - b + {k}\n", 1),  # wrong: fails its first assert
    ("def add(a, b):\n    raise ValueError({k})\n", 1),  # raises in every call
)
GRPO_TESTS = "assert add(1, 2) == 3 + {k}\nassert add(5, 7) == 12 + {k}\nassert add(-4, 4) == {k}\n"


def naive_reward(code: str, tests: str = TESTS) -> float:
    run = subprocess.run([sys.executable, "-c", code + "\n" + tests], capture_output=True, timeout=30)
    return float(run.returncode == 0)


def unique_programs(template: str, n: int, first: int = 0) -> list[str]:
    return [template.format(n=i) for i in range(first, first + n)]


def naive_rate(codes: list[str], tests: list[str], workers: int) -> tuple[float, list[float]]:
    with ThreadPoolExecutor(workers) as pool:
        start = time.perf_counter()
        rewards = list(pool.map(naive_reward, codes, tests))
        elapsed = time.perf_counter() - start
    return len(codes) / elapsed, rewards


def verifier_rate(verifier, codes: list[str], tests: list[str]) -> tuple[float, list[float]]:
    verifier.verify(TRIVIAL.format(n=f"warm {time.monotonic()}"), TESTS)  # warm: judge started, pool filled
    start = time.perf_counter()
    results = verifier.verify_batch(codes, tests)
    elapsed = time.perf_counter() - start
    return len(codes) / elapsed, [r.score for r in results]


def grpo_batch(tasks: int, first: int = 0) -> tuple[list[str], list[str]]:
    codes, tests = [], []
    for k in range(first, first + tasks):
        for template, copies in GROUP_TEMPLATES:
            codes += [template.format(k=k)] * copies
            tests += [GRPO_TESTS.format(k=k)] * copies
    return codes, tests


def duplication_rate(codes: list[str], tests: list[str]) -> float:
    """The share of items that repeat an earlier item's program and test exactly."""
    return 1 - len(set(zip(codes, tests))) / len(codes)


def busy_seconds() -> float:
    """CPU time the machine has spent, all cores, everything but idle and I/O wait."""
    with open("/proc/stat") as stat:
        ticks = [int(field) for field in stat.readline().split()[1:]]
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


class OwnCpu:
    """The CPU time of this process and everything it starts, from a cgroup v1 cpuacct group of its own (as root);
    unavailable (None) elsewhere."""

    def __init__(self):
        self.group = None
        try:
            line = next(x for x in Path("/proc/self/cgroup").read_text().splitlines() if x.split(":")[1] == "cpuacct")
            parent = Path("/sys/fs/cgroup/cpuacct") / line.split(":", 2)[2].lstrip("/")
            group = parent / f"code_verifier_benchmark-{os.getpid()}"
            group.mkdir()
            (group / "cgroup.procs").write_text(str(os.getpid()))
        except (StopIteration, OSError, IndexError):
            return
        self.group, self.parent = group, parent
        atexit.register(self.close)  # before the verifier's own groups are made, so after they are removed

    def seconds(self) -> float | None:
        if self.group is None:
            return None
        return int((self.group / "cpuacct.usage").read_text()) / 1e9

    def close(self) -> None:
        try:
            (self.parent / "cgroup.procs").write_text(str(os.getpid()))
            self.group.rmdir()
        except OSError:
            pass


def measured(measure, codes: list[str], tests: list[str], own: OwnCpu) -> tuple[float, list, float, float | None]:
    """(executions per second, rewards, ms of machine CPU per execution, ms of own-tree CPU per execution)."""
    before, own_before = busy_seconds(), own.seconds()
    rate, rewards = measure(codes, tests)
    machine = 1000 * (busy_seconds() - before) / len(codes)
    tree = None if own_before is None else 1000 * (own.seconds() - own_before) / len(codes)
    return rate, rewards, machine, tree


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--trivial", type=int, default=300, help="executions of the trivial program per round")
    parser.add_argument("--slow", type=int, default=40, help="executions of the 100 ms program per round")
    parser.add_argument(
        "--grpo", type=int, default=40, metavar="TASKS", help="tasks of 8 completions per round (0: none)"
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--breakdown", type=int, metavar="N", default=0,
        help="instead: time each stage of N trivial candidates (median per stage) and the machine's physical limits",
    )  # fmt: skip
    args = parser.parse_args(argv)
    own = OwnCpu()
    if args.breakdown:
        return breakdown(args.breakdown, args.workers, own)

    strong = get_verifier("code", workers=args.workers, timeout_s=30)
    fallback = get_verifier("code", workers=args.workers, timeout_s=30, isolation="rlimits")
    harnesses = {
        "naive subprocess (no isolation)": lambda codes, tests: naive_rate(codes, tests, args.workers),
        f"code verifier ({strong.isolation.level})": lambda codes, tests: verifier_rate(strong, codes, tests),
        f"code verifier ({fallback.isolation.level})": lambda codes, tests: verifier_rate(fallback, codes, tests),
    }
    # Each round gets programs (and GRPO tasks) of its own: a verdict cache across calls would otherwise answer the
    # later rounds from the first.
    workloads = [
        (
            "unique trivial programs",
            lambda r: (unique_programs(TRIVIAL, args.trivial, r * args.trivial), [TESTS] * args.trivial),
        ),
        ("unique 100 ms programs", lambda r: (unique_programs(SLOW, args.slow, r * args.slow), [TESTS] * args.slow)),
    ]
    if args.grpo:
        workloads.append(("GRPO-shaped batch (G=8)", lambda r: grpo_batch(args.grpo, r * args.grpo)))
    print(f"workers={args.workers}  rounds={args.rounds}  python={sys.version.split()[0]}  {load_average()}")
    try:
        for label, make in workloads:
            run_workload(label, make, harnesses, args, own)
        print(f"\nafter: {load_average()}")
    finally:
        strong.close()
        fallback.close()


def run_workload(label: str, make, harnesses: dict, args, own: OwnCpu) -> None:
    """`make(round)`: that round's (programs, tests), the same for every harness."""
    rows = {name: [] for name in harnesses}
    for round_ in range(args.rounds):
        codes, tests = make(round_)
        expected = [naive_reward(code, test) for code, test in zip(codes[:8], tests[:8])]  # the truth, unsandboxed
        for name, measure in harnesses.items():
            rate, rewards, machine, tree = measured(measure, codes, tests, own)
            assert rewards[:8] == expected, f"{name} disagrees with plain execution on {label}: {rewards[:8]}"
            rows[name].append((rate, machine, tree))
    naive = statistics.median(rate for rate, _, _ in rows[next(iter(harnesses))])
    dup = f", {duplication_rate(codes, tests):.1%} of them repeats" if "GRPO" in label else ""
    print(f"\n{label}, {len(codes)} executions per round{dup} (median of {args.rounds}):")
    for name, values in rows.items():
        rate = statistics.median(v[0] for v in values)
        trees = [v[2] for v in values if v[2] is not None]
        tree = f"  {statistics.median(trees):6.1f} ms own-tree CPU/exec" if trees else ""
        print(
            f"  {name:38s} {rate:7.1f} exec/s  x{rate / naive:4.2f}"
            f"  {statistics.median(v[1] for v in values):6.1f} ms machine CPU/exec{tree}"
        )


def breakdown(n: int, workers: int, own: OwnCpu) -> None:
    """Per-stage medians over `n` trivial candidates verified in one batch, the CPU of each process of the verifier
    (where cpuacct groups can be made), then the physical limits."""
    stages.enable()
    verifier = get_verifier("code", workers=workers, timeout_s=30)
    print(f"workers={workers}  python={sys.version.split()[0]}  {load_average()}")
    processes = None
    try:
        verifier_rate(verifier, unique_programs(TRIVIAL, workers * 4, n), [TESTS] * workers * 4)  # warm: groups, uids
        stages.collect()
        if own.group is not None and verifier.isolation.cgroup == "v1":
            processes = ProcessCpu(own.group)
            before = processes.read()
        rate, _ = verifier_rate(verifier, unique_programs(TRIVIAL, n), [TESTS] * n)
        after = processes.read() if processes is not None else None
        records = stages.collect()
    finally:
        verifier.close()
        if processes is not None:
            processes.close()
    print(f"\ncode verifier ({verifier.isolation.level}), unique trivial programs: {rate:.1f} exec/s")
    print_stage_table(records)
    if processes is not None:
        print_process_cpu(before, after, n + 1)  # and the warm call of verifier_rate
    print("\nphysical limits (200 runs each; bwrap 50):")
    for what, wall, cpu in physical_limits(200):
        print(f"  {what:72s} {wall:6.2f} ms wall  {cpu:6.2f} ms CPU")
    print(f"\nafter: {load_average()}")


def load_average() -> str:
    return (
        "load average (1, 5, 15 min): "
        + ", ".join(f"{x:.2f}" for x in os.getloadavg())
        + f" on {os.cpu_count()} cores"
    )


if __name__ == "__main__":
    main()
