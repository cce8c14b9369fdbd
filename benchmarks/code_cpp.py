"""C++ through the `code` verifier next to a naive compile-and-run harness, compile time and run time apart, in one run.

    python benchmarks/code_cpp.py                          # 2 workers, 16 programs x 5 cases, 3 rounds
    python benchmarks/code_cpp.py --programs 24 --cases 8 --rounds 3 --workers 2

The naive harness is what many RL code pipelines do for C++: `g++ -O2 -std=c++17 -pipe` (the flags the verifier uses) with `subprocess.run` on the host,
then the program once per case with `subprocess.run` (stdin from the case, a timeout), the output compared with the
same rule; no sandbox, no limits beyond the timeout. The verifier compiles each source in its sandbox (the compile
pool) and runs each case in a fresh sandbox of its own. Both on a thread pool of `--workers`.

Each round has programs of its own (a numbered comment), so that the verifier's compile cache cannot answer from an
earlier round; within a round the verifier's compile phase is `CodeVerifier._compiled` for each program (what a
verification does first), and its run phase is `verify_batch` on the same programs (each found compiled: the cache
is what a batch uses). Rounds are interleaved (naive, verifier) so that load from other processes hits both; the
median of each phase is printed with the load average before and after, and the ratios of the verifier's time to
the naive harness's of the same round: under load the ratios hold better than the absolute times.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from trl_grpo_ext.verifiers import get_verifier
from trl_grpo_ext.verifiers.code.native import DEFAULT_CPP_FLAGS
from trl_grpo_ext.verifiers.code.runner import outputs_match

# Prefix sums over the case's numbers: a typical small competitive-programming solution (iostream, vector).
PROGRAM = r"""// program {n}
#include <iostream>
#include <vector>
int main() {{
    std::ios::sync_with_stdio(false);
    int n; std::cin >> n;
    std::vector<long long> s(n + 1);
    for (int i = 1; i <= n; i++) {{ long long x; std::cin >> x; s[i] = s[i - 1] + x; }}
    std::cout << s[n] << "\n";
}}
"""


def cases(count: int) -> list[dict]:
    rows = []
    for k in range(count):
        xs = list(range(k, k + 1000))
        rows.append({"input": f"{len(xs)}\n{' '.join(map(str, xs))}\n", "output": f"{sum(xs)}\n"})
    return rows


def naive_compile(folder: Path, source: str, n: int) -> Path:
    main, program = folder / f"p{n}.cpp", folder / f"p{n}"
    main.write_text(source)
    subprocess.run(
        ["g++", *DEFAULT_CPP_FLAGS, "-pipe", "-o", program, main], check=True, capture_output=True, timeout=120
    )
    return program


def naive_run(program: Path, rows: list[dict]) -> bool:
    for row in rows:
        done = subprocess.run([program], input=row["input"].encode(), capture_output=True, timeout=10)
        if done.returncode != 0 or not outputs_match(done.stdout.decode(), row["output"]):
            return False
    return True


def load() -> str:
    return " ".join(open("/proc/loadavg").read().split()[:3])


def one_round(verifier, pool: ThreadPoolExecutor, tag: int, programs: int, rows: list[dict]) -> dict:
    sources = [PROGRAM.format(n=f"{tag}-{i}") for i in range(programs)]
    times = {}
    with tempfile.TemporaryDirectory() as folder:
        start = time.perf_counter()
        binaries = list(pool.map(lambda i: naive_compile(Path(folder), sources[i], i), range(programs)))
        times["naive_compile"] = time.perf_counter() - start
        start = time.perf_counter()
        passed = list(pool.map(lambda b: naive_run(b, rows), binaries))
        times["naive_run"] = time.perf_counter() - start
        assert all(passed), "the naive harness failed a correct program"
    start = time.perf_counter()
    compiled = list(pool.map(verifier._compiled, sources))
    times["verifier_compile"] = time.perf_counter() - start
    assert all(getattr(c, "program", None) for c in compiled), compiled[:1]
    start = time.perf_counter()
    results = verifier.verify_batch([f"```cpp\n{s}```" for s in sources], [rows] * programs)
    times["verifier_run"] = time.perf_counter() - start
    assert all(r.score == 1.0 for r in results), [r.reason for r in results if r.score != 1.0][:3]
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--programs", type=int, default=16, help="distinct programs per round")
    parser.add_argument("--cases", type=int, default=5, help="stdio cases per program")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    rows = cases(args.cases)
    verifier = get_verifier("code", timeout_s=10, workers=args.workers)
    print(f"isolation: {verifier.isolation.describe()['level']}, workers {args.workers}, {args.programs} programs x "
          f"{args.cases} cases per round, {args.rounds} rounds; load average before: {load()}", flush=True)  # fmt: skip
    verifier._compiled(PROGRAM.format(n="warm-up"))  # start the compile pool and the candidates' pool
    verifier.verify(f"```cpp\n{PROGRAM.format(n='warm-up')}```", rows[:1])
    rounds = []
    with ThreadPoolExecutor(args.workers) as pool:
        for r in range(args.rounds):
            rounds.append(one_round(verifier, pool, r, args.programs, rows))
            print(f"round {r + 1}: " + ", ".join(f"{k} {v:.2f} s" for k, v in rounds[-1].items()), flush=True)
    verifier.close()
    median = {k: statistics.median(t[k] for t in rounds) for k in rounds[0]}
    n_runs = args.programs * args.cases
    print(f"load average after: {load()}")
    print("| phase | naive harness | sandboxed verifier | ratio (verifier / naive), per round |")
    print("| --- | --- | --- | --- |")
    for phase, unit, count in (("compile", "program", args.programs), ("run", "case", n_runs)):
        naive, ours = median[f"naive_{phase}"], median[f"verifier_{phase}"]
        ratios = ", ".join(f"x{t[f'verifier_{phase}'] / t[f'naive_{phase}']:.2f}" for t in rounds)
        print(
            f"| {phase} | {1000 * naive / count:.1f} ms per {unit} | {1000 * ours / count:.1f} ms per {unit} | "
            f"{ratios} |"
        )


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    main()
