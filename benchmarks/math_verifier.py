"""Agreement and throughput of the `math` verifier against TRL's `accuracy_reward` (math-verify), side by side.

Reads the labelled pairs in ../shared/data/math_equivalence/*.jsonl at run time (override the folder with
MATH_EQUIVALENCE_DIR). Each case is called the way it is meant: `gold` is the reference, `pred` the completion; a
case agrees when the verdict (score 1 = equal; 0 or None = not equal) matches `expected`.

    python benchmarks/math_verifier.py            # summary
    python benchmarks/math_verifier.py -v         # also list every case where `math` disagrees with the label
    python benchmarks/math_verifier.py --rounds 5 # 5 fresh runs in a row: min, median and max of the ratios
    python benchmarks/math_verifier.py --probes   # verdicts on the hand-written probes (math_probes.py), side by side
    python benchmarks/math_verifier.py --grpo synthetic  # GRPO-shaped batches built from the pairs (math_grpo.py)
    python benchmarks/math_verifier.py --grpo demo       # GRPO batches recorded from examples/demo.py
    python benchmarks/math_verifier.py --first-batch     # first batch's latency, workers started in the background or not

`--probes` runs both graders on the probes of `math_probes.py` (wrong answers a policy could learn to give, and true
identities; each with a careful human grader's verdict) and prints every probe's verdicts side by side, the count of
correct verdicts per category, and the false positives (a wrong answer paid) and false negatives of each grader.

Throughput is timed over whole passes of the set, the same number for both graders, after the same warm-up inputs
(our workers' `WARM_UP_PAIRS` and `WARM_UP_LEAVES`; the run stops if any of them occurs in the data) and, for the
`math` verifier, once every worker has started. Pass 1 is cold: no timed string was seen before. Pass 2 repeats the
strings, so both graders' parse caches hit (the `math` verifier's cache of whole verdicts is cleared before each
pass); it overstates a training run, whose answers change from step to step.

Each pass of `math` also prints its CPU seconds, in this process and in the workers (from /proc): unlike the
wall-clock ratio, a before/after comparison that holds on a machine other jobs are loading.

Both graders get the same per-item limit: `accuracy_reward` hard-codes 5 s per verification (10 s per parse) in the
main thread; the `math` verifier runs with timeout_s=5 on its worker processes (one per core).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
PER_ITEM_LIMIT_S = 5.0


def data_dir() -> Path:
    return Path(os.environ.get("MATH_EQUIVALENCE_DIR", REPO_ROOT.parent / "shared" / "data" / "math_equivalence"))


def load_cases(folder: Path) -> dict[str, list[dict]]:
    return {
        path.name: [json.loads(line) for line in path.open() if line.strip()]
        for path in sorted(folder.glob("*.jsonl"))
    }


def warm_up_overlap(cases: list[dict]) -> list[str]:
    """Warm-up inputs that also occur in the benchmark data: any would make the cold figure a warm one for them."""
    from trl_grpo_ext.verifiers.math.warmup import WARM_UP_LEAVES, WARM_UP_PAIRS

    def squeeze(text: str) -> str:
        return "".join(text.split()).strip("$")

    data = [squeeze(case[key]) for case in cases for key in ("gold", "pred")]
    warm = {squeeze(text) for pair in WARM_UP_PAIRS for text in pair} | {squeeze(text) for text in WARM_UP_LEAVES}
    return sorted(text for text in warm if any(text == item or (len(text) >= 8 and text in item) for item in data))


def run_math(cases: list[dict], n_workers: int | None, passes: int) -> tuple[list[bool], list, list[float]]:
    from trl_grpo_ext.verifiers import get_verifier

    verifier = get_verifier("math", timeout_s=PER_ITEM_LIMIT_S, n_workers=n_workers)
    start = time.perf_counter()
    verifier.start()  # start the workers and wait until each has warmed up, before timing
    print(f"math: starting and warming the workers took {time.perf_counter() - start:.2f} s (once per training run)")
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from math_grpo import CpuClock

    clock = CpuClock(verifier)
    seconds = []
    for i in range(passes):
        verifier.clear_cache()  # time the comparisons, not the verdict cache (the workers keep their parse caches)
        before = clock.read()
        start = time.perf_counter()
        results = verifier.verify_batch([c["pred"] for c in cases], [c["gold"] for c in cases])
        seconds.append(time.perf_counter() - start)
        print(f"math pass {i + 1}: {clock.since(before)}")
    verifier.close()
    return [r.score == 1.0 for r in results], results, seconds


def run_accuracy_reward(cases: list[dict], passes: int) -> tuple[list[bool], list[float]]:
    from trl.rewards import accuracy_reward

    from trl_grpo_ext.verifiers.math.warmup import WARM_UP_LEAVES, WARM_UP_PAIRS

    # The same warm-up inputs as our workers get: imports and parser caches are ready before timing.
    for pred, gold in [*WARM_UP_PAIRS, *((leaf, leaf) for leaf in WARM_UP_LEAVES)]:
        accuracy_reward([[{"role": "assistant", "content": f"$\\boxed{{{pred}}}$"}]], [f"${gold}$"])
    seconds = []
    for _ in range(passes):
        verdicts = []
        start = time.perf_counter()
        for case in cases:  # one at a time: one pathological case must not change the verdict of the others
            score = accuracy_reward([[{"role": "assistant", "content": case["pred"]}]], [case["gold"]])[0]
            verdicts.append(score == 1.0)
        seconds.append(time.perf_counter() - start)
    return verdicts, seconds


def run_probes() -> int:
    """Both graders on the hand-written probes: verdicts side by side, then each grader's false positives and negatives."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))  # math_probes.py lies beside this script
    from math_probes import CATEGORIES, PROBES, Probe
    from math_probes_classes import CLASS_CATEGORIES, CLASS_PROBES
    from math_probes_completions import COMPLETION_CATEGORIES, COMPLETION_PROBES
    from trl.rewards import accuracy_reward

    from trl_grpo_ext.verifiers import get_verifier

    # The value probes are bare answers (boxed here); the class and completion probes are whole completions, used as
    # they are; the real completions of SmolLM2-135M (tests/verifiers/math/data) are labelled by hand.
    real = real_completions()
    completions = [rf"\boxed{{{p.pred}}}" for p in PROBES] + [p.pred for p in (*CLASS_PROBES, *COMPLETION_PROBES)]
    completions += [row["completion"] for row in real]
    real_probes = [
        Probe("real SmolLM2-135M completions", row["completion"], row["reference"], row["label"]) for row in real
    ]
    PROBES = [*PROBES, *CLASS_PROBES, *COMPLETION_PROBES, *real_probes]
    CATEGORIES = [*CATEGORIES, *CLASS_CATEGORIES, *COMPLETION_CATEGORIES, "real SmolLM2-135M completions"]
    verifier = get_verifier("math", timeout_s=PER_ITEM_LIMIT_S)
    ours = [r.score == 1.0 for r in verifier.verify_batch(completions, [p.ref for p in PROBES])]
    verifier.close()
    theirs = [
        accuracy_reward(
            [[{"role": "assistant", "content": f"${text}$" if "\\boxed" in text else text}]], [f"${p.ref}$"]
        )[0]
        == 1.0
        for text, p in zip(completions, PROBES)
    ]

    def mark(verdict: bool, expected: bool) -> str:
        return ("equal" if verdict else "differ") + ("" if verdict == expected else " (WRONG)")

    print(f"{'expected':<8} {'math':<15} {'math-verify':<15} prediction  |  reference")
    for probe, mine, trl in zip(PROBES, ours, theirs):
        print(
            f"{'equal' if probe.equal else 'differ':<8} {mark(mine, probe.equal):<15} {mark(trl, probe.equal):<15} "
            f"{short(probe.pred)}  |  {probe.ref}"
        )
    print(f"\n{'category':<42} {'probes':>6} {'math':>6} {'math-verify':>12}")
    for category in [*CATEGORIES, None]:
        span = [i for i, p in enumerate(PROBES) if category in (None, p.category)]
        right = sum(ours[i] == PROBES[i].equal for i in span)
        right_trl = sum(theirs[i] == PROBES[i].equal for i in span)
        print(f"{category or 'all':<42} {len(span):>6} {right:>6} {right_trl:>12}")
    for name, verdicts in (("math", ours), ("math-verify", theirs)):
        positives = [p for p, v in zip(PROBES, verdicts) if v and not p.equal]
        negatives = [p for p, v in zip(PROBES, verdicts) if not v and p.equal]
        print(f"\n{name}: {len(positives)} false positives (wrong answers paid), {len(negatives)} false negatives")
        for kind, probes in (("false positive", positives), ("false negative", negatives)):
            for p in probes:
                print(f"  {kind}: {short(p.pred)}  for  {p.ref}  ({p.category})")
    return 0


REAL_COMPLETIONS = (
    Path(__file__).resolve().parents[1] / "tests" / "verifiers" / "math" / "data" / "smollm2_completions.jsonl"
)


def short(text: str, limit: int = 100) -> str:
    """A probe's text on one line: long or multi-line completions as a shortened repr."""
    return (
        text if len(text) <= limit and "\n" not in text else repr(text[:limit]) + ("..." if len(text) > limit else "")
    )


def real_completions() -> list[dict]:
    """Completions of SmolLM2-135M-Instruct recorded by `benchmarks/record_completions.py`, labelled by hand."""
    with REAL_COMPLETIONS.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


DIFFERENTIAL_FILE = Path(__file__).resolve().parent / "math_differential.json"


def case_key(case: dict) -> str:
    """A public pair's name in the committed differential file: its source and a hash of its strings (the data stays
    out of the repository)."""
    digest = hashlib.sha1(f"{case['gold']}\x00{case['pred']}".encode()).hexdigest()[:10]
    return f"{case['source']}#{digest}"


def math_verify_verdicts(cases: list[dict]) -> list[bool]:
    """math-verify itself (`verify(parse(gold), parse(pred))`), a bare string read as inline math when plain parsing
    finds nothing in it."""
    from math_verify import parse, verify

    def read(text: str) -> list:
        return parse(text) or parse(f"${text}$")

    verdicts = []
    for case in cases:
        try:
            verdicts.append(bool(verify(read(case["gold"]), read(case["pred"]))))
        except Exception:  # math-verify's own failure: not a verdict "equal"
            verdicts.append(False)
    return verdicts


def run_differential(verbose: bool) -> int:
    """Every public pair where `math` pays and math-verify does not must be listed, with a justification, in
    `math_differential.json`; prints their number, and the pairs missing from the file (exit status 1 if any)."""
    from trl_grpo_ext.verifiers import get_verifier

    cases = [case for file_cases in load_cases(data_dir()).values() for case in file_cases]
    verifier = get_verifier("math", timeout_s=PER_ITEM_LIMIT_S)
    ours = [r.score == 1.0 for r in verifier.verify_batch([c["pred"] for c in cases], [c["gold"] for c in cases])]
    verifier.close()
    theirs = math_verify_verdicts(cases)
    listed = json.loads(DIFFERENTIAL_FILE.read_text())
    only_ours = [case for case, mine, other in zip(cases, ours, theirs) if mine and not other]
    missing = [case for case in only_ours if case_key(case) not in listed]
    print(f"{len(cases)} public pairs: math pays {sum(ours)}, math-verify {sum(theirs)}")
    print(
        f"math pays and math-verify does not: {len(only_ours)} pairs ({sum(c['expected'] for c in only_ours)} "
        f"labelled equal); {len(only_ours) - len(missing)} justified in {DIFFERENTIAL_FILE.name}, "
        f"{len(missing)} not listed"
    )
    for case in only_ours if verbose else missing:
        why = listed.get(case_key(case), "NOT LISTED")
        print(f"- {case_key(case)} expected={case['expected']}: {why}\n  gold={case['gold'][-120:]!r}")
        print(f"  pred={case['pred'][-120:]!r}")
    return 1 if missing else 0


ROUND_MARKER = "round result: "


def run_grpo(source: str, args: argparse.Namespace) -> int:
    """GRPO-shaped batches (math_grpo.py): throughput per epoch of both graders, the duplication, the cache hits."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from math_grpo import (
        duplication_rate,
        load_demo_steps,
        steps_of,
        synthetic_groups,
        time_accuracy_reward,
        time_math,
    )

    if source == "synthetic":
        cases = [case for file_cases in load_cases(data_dir()).values() for case in file_cases]
        epochs = [steps_of(synthetic_groups(cases, args.distinct, seed)) for seed in range(args.passes)]
        origin = f"synthetic mix from {len(cases)} public pairs, {args.distinct} distinct answers per group of 8"
    else:
        steps, how = load_demo_steps(args.rollouts)
        epochs, origin = [steps], f"examples/demo.py rollouts, {how}"
    items = [sum(len(c) for c, _ in steps) for steps in epochs]
    print(f"{origin}: {len(epochs)} epoch(s) of {len(epochs[0])} steps, {items[0]} completions per epoch")
    print(
        "duplication (same completion text and reference within a step): "
        + ", ".join(f"epoch {i + 1} {duplication_rate(steps):.1%}" for i, steps in enumerate(epochs))
    )
    ours_s, ours, stats, cpu = time_math(epochs, args.workers, PER_ITEM_LIMIT_S)
    per_epoch = len(stats) // len(epochs)
    for i in range(len(epochs)):
        batch = stats[i * per_epoch : (i + 1) * per_epoch]
        lookups, hits = sum(b.cache_lookups for b in batch), sum(b.cache_hits for b in batch)
        print(
            f"epoch {i + 1}: math dedup_rate {sum(b.duplicates for b in batch) / sum(b.items for b in batch):.1%} "
            f"(after normalisation), verdict cache hits {hits}/{lookups} worker questions; {cpu[i]}"
        )
    nan = [float("nan")] * len(epochs)
    if args.skip_trl:
        theirs_s, theirs = nan, ours
    else:
        theirs_s, theirs = time_accuracy_reward(epochs, lambda: run_accuracy_reward([], 1))
    print(f"paid: math {sum(ours)} of {len(ours)}, accuracy_reward {sum(theirs)}; load {os.getloadavg()[0]:.1f}")
    for i, (mine, trl) in enumerate(zip(ours_s, theirs_s)):
        print(
            f"throughput epoch {i + 1}: math {items[i] / mine:.1f} completions/s ({mine:.2f} s), "
            f"accuracy_reward {items[i] / trl:.1f} completions/s ({trl:.2f} s); ratio {trl / mine:.2f}x"
        )
    summary = {
        "math cases/s": [n / mine for n, mine in zip(items, ours_s)],
        "ratio": [trl / mine for mine, trl in zip(ours_s, theirs_s)],
    }
    print(ROUND_MARKER + json.dumps(summary))
    return 0


def run_first_batch(args: argparse.Namespace) -> int:
    """The first batch's latency in fresh interpreters: workers started when the reward function is built
    (background) or on the first batch (lazy), the batch coming at once or after `--delay` s (a model loading)."""
    if args.first_batch_child:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from math_grpo import first_batch_latency

        mode, delay = args.first_batch_child.split(":")
        cases = [case for file_cases in load_cases(data_dir()).values() for case in file_cases]
        print(ROUND_MARKER + json.dumps(first_batch_latency(cases, mode == "background", float(delay), args.workers)))
        return 0
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from math_grpo import first_batch_rounds

    extra = ["--workers", str(args.workers)] if args.workers else []
    rows = first_batch_rounds(
        [sys.executable, __file__, "--first-batch", *extra], args.rounds, args.delay, ROUND_MARKER
    )
    print(f"first batch (64 public pairs) latency, {args.rounds} round(s), load {os.getloadavg()[0]:.1f}:")
    for (mode, delay), values in rows.items():
        listed = ", ".join(f"{v:.2f}" for v in values)
        print(f"  workers {mode:<10} batch after {delay:>4.1f} s: median {statistics.median(values):.2f} s ({listed})")
    return 0


def run_rounds(rounds: int, forwarded: list[str]) -> int:
    """Run the benchmark in `rounds` fresh interpreters, one after the other, and summarise each pass over them:
    the `math` verifier's throughput and, unless --skip-trl, its ratio to `accuracy_reward`'s."""
    per_pass: dict[str, list[list[float]]] = {"math cases/s": [], "ratio": []}
    for round_index in range(rounds):
        print(f"--- round {round_index + 1} of {rounds}", flush=True)
        done = subprocess.run([sys.executable, __file__, *forwarded], capture_output=True, text=True, check=False)
        if done.returncode:
            sys.stderr.write(done.stderr[-2000:])
            return done.returncode
        for line in done.stdout.splitlines():
            if line.startswith(ROUND_MARKER):
                for name, values in json.loads(line[len(ROUND_MARKER) :]).items():
                    per_pass[name].extend([] for _ in range(len(values) - len(per_pass[name])))
                    for collected, value in zip(per_pass[name], values):
                        collected.append(value)
            elif round_index == 0 or line.startswith(
                ("throughput", "per-item", "math: starting", "math pass", "epoch")
            ):
                print(line)
    for name, passes in per_pass.items():
        for i, values in enumerate(passes):
            if any(math.isnan(v) for v in values):
                continue
            label = "cold" if i == 0 else "warm"
            listed = ", ".join(f"{v:.2f}" for v in values)
            print(
                f"pass {i + 1} ({label}) {name} over {len(values)} rounds: min {min(values):.2f}, "
                f"median {statistics.median(values):.2f}, max {max(values):.2f} ({listed})"
            )
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-v", "--verbose", action="store_true", help="list the cases where `math` disagrees")
    parser.add_argument("--workers", type=int, default=None, help="worker processes (default: usable cores)")
    parser.add_argument("--skip-trl", action="store_true", help="measure only the `math` verifier")
    parser.add_argument(
        "--passes",
        type=int,
        default=2,
        help="timed passes over the set; pass 1 is cold, later ones warm (caches filled)",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="repeat the whole measurement in this many fresh interpreters (each pass 1 is cold) and summarise",
    )
    parser.add_argument(
        "--probes", action="store_true", help="compare both graders on the hand-written probes instead of the pairs"
    )
    parser.add_argument(
        "--differential",
        action="store_true",
        help="list the public pairs that `math` pays and math-verify does not, against math_differential.json",
    )
    parser.add_argument("--grpo", choices=("synthetic", "demo"), help="GRPO-shaped batches (see math_grpo.py)")
    parser.add_argument("--distinct", type=int, default=4, help="--grpo synthetic: distinct answers per group of 8")
    parser.add_argument("--rollouts", help="--grpo demo: JSONL of recorded rollouts (recorded into it if missing)")
    parser.add_argument("--first-batch", action="store_true", help="first batch's latency, background start or not")
    parser.add_argument("--delay", type=float, default=8.0, help="--first-batch: seconds before the first batch")
    parser.add_argument("--first-batch-child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.probes:
        return run_probes()
    if args.first_batch:
        return run_first_batch(args)
    if args.differential:
        return run_differential(args.verbose)
    if args.rounds > 1:
        forwarded = ["--passes", str(args.passes)] + (["--workers", str(args.workers)] if args.workers else [])
        if args.grpo:
            forwarded += ["--grpo", args.grpo, "--distinct", str(args.distinct)]
            forwarded += ["--rollouts", args.rollouts] if args.rollouts else []
        return run_rounds(args.rounds, forwarded + ["--skip-trl"] * args.skip_trl + ["-v"] * args.verbose)
    folder = data_dir()
    if not folder.is_dir() and args.grpo != "demo":
        print(f"no data at {folder}; set MATH_EQUIVALENCE_DIR", file=sys.stderr)
        return 1
    if args.grpo:
        return run_grpo(args.grpo, args)
    per_file = load_cases(folder)
    cases = [case for file_cases in per_file.values() for case in file_cases]
    overlap = warm_up_overlap(cases)
    if overlap:
        print(
            f"the workers' warm-up inputs occur in the data, so pass 1 would not be cold: {overlap}", file=sys.stderr
        )
        return 1
    ours, results, ours_s = run_math(cases, args.workers, args.passes)
    nan = [float("nan")] * args.passes
    theirs, theirs_s = ([False] * len(cases), nan) if args.skip_trl else run_accuracy_reward(cases, args.passes)

    print(f"{'file':<26} {'cases':>5} {'math':>12} {'accuracy_reward':>16}")
    offset = 0
    for name, file_cases in per_file.items():
        span = range(offset, offset + len(file_cases))
        agree = sum(ours[i] == cases[i]["expected"] for i in span)
        agree_trl = sum(theirs[i] == cases[i]["expected"] for i in span)
        print(
            f"{name:<26} {len(file_cases):>5} {agree:>5} {agree / len(file_cases):>6.1%} {agree_trl:>9} "
            f"{agree_trl / len(file_cases):>6.1%}"
        )
        offset += len(file_cases)
    total = sum(o == c["expected"] for o, c in zip(ours, cases))
    total_trl = sum(t == c["expected"] for t, c in zip(theirs, cases))
    print(
        f"{'all':<26} {len(cases):>5} {total:>5} {total / len(cases):>6.1%} {total_trl:>9} {total_trl / len(cases):>6.1%}"
    )
    timeouts = sum(r.reason == "timeout" for r in results)
    print(
        f"per-item limit {PER_ITEM_LIMIT_S:g} s, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; "
        f"math timeouts: {timeouts}"
    )
    for i, (mine, trl) in enumerate(zip(ours_s, theirs_s)):
        label = "cold" if i == 0 else "warm"
        print(
            f"throughput pass {i + 1} ({label}): math {len(cases) / mine:.1f} cases/s ({mine:.2f} s), "
            f"accuracy_reward {len(cases) / trl:.1f} cases/s ({trl:.2f} s); ratio {trl / mine:.2f}x"
        )
    summary = {
        "math cases/s": [len(cases) / mine for mine in ours_s],
        "ratio": [trl / mine for mine, trl in zip(ours_s, theirs_s)],
    }
    print(ROUND_MARKER + json.dumps(summary))
    if args.verbose:
        for case, verdict, result in zip(cases, ours, results):
            if verdict != case["expected"]:
                print(
                    f"- expected={case['expected']} score={result.score} reason={result.reason!r} "
                    f"extracted={result.extracted!r}\n  gold={case['gold'][-150:]!r}\n  pred={case['pred'][-150:]!r}"
                    f"\n  {case['source']}"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
