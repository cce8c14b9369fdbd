"""Ray's overhead per batch: the same verification with `backend="local"` and `backend="ray"` on one machine.

Starts a Ray instance on this machine (loopback only; or joins `--address`) and times, batch by batch:

- round trip: a verifier that does no work (string equality), so the Ray time is the backend's own cost: splitting
  the batch, sending it to the actors, collecting the results;
- math: the `math` verifier on fresh symbolic pairs (a correct answer written another way, about 25 ms of sympy per
  pair; no pair repeats, so no cache helps), locally with `--workers` worker processes, on one Ray actor with the
  same workers, and on `--workers` actors of one worker each.

Then the per-core throughput of the local `math` verifier (1 worker): on the same symbolic pairs and, when the
public pairs are there (`../shared/data/math_equivalence`, or MATH_EQUIVALENCE_DIR), on those, one cold pass. A
CPU node verifies about (its cores) x (per-core throughput), less Ray's overhead per batch.

    python benchmarks/ray_backend.py                   # 10 batches of 64 per setting
    python benchmarks/ray_backend.py --address 10.0.0.1:6379 --actors 4
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
FRESH = itertools.count(1000)


def symbolic_pairs(n: int) -> tuple[list[str], list[str]]:
    """n pairs never used before in this run: a quotient that simplifies and a logarithm of a square."""
    keys = [next(FRESH) for _ in range(n)]
    return (
        [rf"\boxed{{\frac{{x^3 - {k}^3}}{{x - {k}}} + \ln(y^2)}}" for k in keys],
        [rf"x^2 + {k}x + {k}^2 + 2\ln|y|" for k in keys],
    )


def round_trip_batch(n: int) -> tuple[list[str], list[str]]:
    return [f"answer {i}" for i in range(n)], [f"answer {i if i % 3 else -1}" for i in range(n)]


def seconds_per_batch(verifier, make_batch, batches: int) -> float:
    verifier.verify_batch(*make_batch())  # warm-up: pools started, actors reached
    times = []
    for _ in range(batches):
        completions, references = make_batch()
        start = time.perf_counter()
        results = verifier.verify_batch(completions, references)
        times.append(time.perf_counter() - start)
        assert not any(r.is_internal_error for r in results), [r.reason for r in results if r.is_internal_error][:3]
    return statistics.median(times)


def per_core_throughput(get_verifier, batch: int) -> dict[str, float]:
    """Items per second of the local math verifier with one worker process."""
    out = {}
    verifier = get_verifier("math", n_workers=1)
    verifier.start()
    completions, references = symbolic_pairs(batch)
    start = time.perf_counter()
    verifier.verify_batch(completions, references)
    out["symbolic pairs"] = batch / (time.perf_counter() - start)
    folder = Path(os.environ.get("MATH_EQUIVALENCE_DIR", REPO_ROOT.parent / "shared" / "data" / "math_equivalence"))
    cases = [json.loads(line) for f in sorted(folder.glob("*.jsonl")) for line in f.open() if line.strip()]
    if cases:
        start = time.perf_counter()
        verifier.verify_batch([c["pred"] for c in cases], [c["gold"] for c in cases])
        out[f"public pairs ({len(cases)}, cold)"] = len(cases) / (time.perf_counter() - start)
    verifier.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--address", default=None, help="a Ray cluster to join (default: start one on this machine)")
    parser.add_argument("--batches", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--workers", type=int, default=2, help="math worker processes in all, per setting")
    args = parser.parse_args()
    if args.address is None:
        # Ray binds to the loopback interface only with this (read at import), and needs no token there.
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
        os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    import ray

    from trl_grpo_ext.verifiers import get_verifier, register_verifier

    register_verifier("equal_for_ray_benchmark")(lambda completion, reference: float(completion == reference))
    if args.address is None:
        ray.init(address="local", num_cpus=os.cpu_count(), include_dashboard=False, log_to_driver=False)
    else:
        ray.init(address=args.address)
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {os.cpu_count()} cores")
    n, w = args.batch_size, args.workers
    settings = [
        ("round trip", "local", lambda: get_verifier("equal_for_ray_benchmark"), lambda: round_trip_batch(n)),
        (
            "round trip",
            "ray, 1 actor",
            lambda: get_verifier("equal_for_ray_benchmark", backend="ray", ray_actors=1),
            lambda: round_trip_batch(n),
        ),
        (
            "round trip",
            f"ray, {w} actors",
            lambda: get_verifier("equal_for_ray_benchmark", backend="ray", ray_actors=w),
            lambda: round_trip_batch(n),
        ),
        ("math", f"local, {w} workers", lambda: get_verifier("math", n_workers=w), lambda: symbolic_pairs(n)),
        (
            "math",
            f"ray, 1 actor x {w} workers",
            lambda: get_verifier("math", backend="ray", ray_actors=1, n_workers=w),
            lambda: symbolic_pairs(n),
        ),
        (
            "math",
            f"ray, {w} actors x 1 worker",
            lambda: get_verifier("math", backend="ray", ray_actors=w, n_workers=1),
            lambda: symbolic_pairs(n),
        ),
    ]
    print(f"\n{n} items per batch, median of {args.batches} batches")
    print(f"{'workload':<11} {'setting':<26} {'ms / batch':>11} {'vs local':>10}")
    local_ms = {}
    for workload, setting, build, make_batch in settings:
        verifier = build()
        try:
            ms = seconds_per_batch(verifier, make_batch, args.batches) * 1e3
        finally:
            verifier.close()
        local_ms.setdefault(workload, ms)
        delta = "" if setting.startswith("local") else f"{ms - local_ms[workload]:+.1f} ms"
        print(f"{workload:<11} {setting:<26} {ms:>11.1f} {delta:>10}", flush=True)
    print("\nlocal math verifier, 1 worker process:")
    for workload, rate in per_core_throughput(get_verifier, n).items():
        print(f"  {workload:<28} {rate:8.1f} items/s per core")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    ray.shutdown()


if __name__ == "__main__":
    main()
