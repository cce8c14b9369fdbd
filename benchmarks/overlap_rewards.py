"""Step time with and without `overlap_rewards`, next to the ideal saving min(verification, forwards) of the same run.

The model is a randomly initialised Llama sized so that, on the CPU, the reference model's forward pass (beta > 0)
takes about as long as verifying the batch. The reward is the `math` verifier on fresh symbolic pairs: each
completion is mapped to an expression pair that no earlier step used (sympy works every step, in the verifier's
worker processes), so the verification load does not depend on what the random model writes. Learning rate 0: both
settings generate the same completions and verify the same pairs.

Rounds alternate the two settings (fresh trainer, same seed; the first step of each run is dropped as warm-up). In the
runs without overlap the benchmark also times every rollout forward (log-prob forwards without gradient: the
reference model's, and the old policy's when stock computes it) and every `verify_batch`, so

    saving = median step (overlap off) - median step (overlap on)
    ideal  = min(median verification per step, median rollout forwards per step)

are measured on the same steps. torch runs `--torch-threads` threads and the verifier `--workers` processes: on a
machine with fewer cores than both together, verification competes with torch for the cores and the saving is lower.

    python benchmarks/overlap_rewards.py                       # 3 rounds of 8 steps
    python benchmarks/overlap_rewards.py --layers 6 --items 48 # balance forward and verification on another machine
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import tempfile
import time
import warnings
from pathlib import Path

os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch  # noqa: E402
from datasets import Dataset  # noqa: E402
from trainer_overhead import StepTimer  # noqa: E402  (this folder is the script's sys.path[0])
from transformers import PrinterCallback  # noqa: E402

from trl_grpo_ext import (  # noqa: E402
    GRPOExtConfig,
    GRPOExtTrainer,
    tiny_model_path,  # noqa: E402
)
from trl_grpo_ext.verifiers import Verifier, as_reward_function, register_verifier  # noqa: E402
from trl_grpo_ext.verifiers.math.verifier import MathVerifier  # noqa: E402

VERIFY_TIMES: list[float] = []  # seconds per verify_batch, in call order


@register_verifier("symbolic_load")
class SymbolicLoad(Verifier):
    """The `math` verifier on a fresh symbolic pair per completion (benchmark load; the completion is not read)."""

    def __init__(self, n_workers: int = 1):
        self.math = MathVerifier(n_workers=n_workers)
        self.calls = 0

    def verify_batch(self, completions, references):
        self.calls += 1
        pairs = [symbolic_pair(self.calls * 10_000 + i) for i in range(len(completions))]
        start = time.perf_counter()
        results = self.math.verify_batch([p for p, _ in pairs], [r for _, r in pairs])
        VERIFY_TIMES.append(time.perf_counter() - start)
        return results

    def start(self, wait: bool = True) -> None:
        self.math.start(wait)

    def close(self) -> None:
        self.math.close()


def symbolic_pair(k: int) -> tuple[str, str]:
    """A correct answer written another way: a quotient that simplifies, a logarithm of a square (~25 ms a pair)."""
    return rf"\boxed{{\frac{{x^3 - {k}^3}}{{x - {k}}} + \ln(y^2)}}", rf"x^2 + {k}x + {k}^2 + 2\ln|y|"


class ForwardTimer:
    """Times the trainer's log-prob forwards that run without gradient: the rollout's (reference, old policy)."""

    def __init__(self, trainer: GRPOExtTrainer):
        self.per_step: list[float] = []
        forward = trainer._get_per_token_logps_and_entropies

        def timed(*args, **kwargs):
            if torch.is_grad_enabled():
                return forward(*args, **kwargs)
            start = time.perf_counter()
            try:
                return forward(*args, **kwargs)
            finally:
                self.per_step[-1] += time.perf_counter() - start

        trainer._get_per_token_logps_and_entropies = timed
        generate = trainer._generate_and_score_completions

        def per_step(inputs):
            self.per_step.append(0.0)
            return generate(inputs)

        trainer._generate_and_score_completions = per_step


def dataset(n: int) -> Dataset:
    prompts = [f"Simplify sin({a}x)cos(y) + tan(xy) for case {a}." for a in range(n)]
    return Dataset.from_dict({"prompt": prompts, "answer": ["0"] * n})


def run(model_dir: str, overlap: bool, args, workdir: str) -> dict[str, list[float]]:
    reward = as_reward_function("symbolic_load", n_workers=args.workers)
    reward.verifier.start()  # worker start-up is not part of any step
    config = GRPOExtConfig(
        output_dir=workdir,
        overlap_rewards=overlap,
        beta=0.04,
        learning_rate=0.0,
        per_device_train_batch_size=args.items,
        num_generations=8,
        max_completion_length=args.completion_length,
        max_steps=args.steps,
        logging_steps=args.steps,
        save_strategy="no",
        report_to="none",
        seed=0,
        bf16=False,
        use_cpu=True,
        disable_tqdm=True,
        dataloader_num_workers=0,
    )
    timer = StepTimer()
    trainer = GRPOExtTrainer(
        model_dir, [reward], args=config, train_dataset=dataset(args.items * args.steps), callbacks=[timer]
    )
    trainer.remove_callback(PrinterCallback)
    forwards = ForwardTimer(trainer)
    VERIFY_TIMES.clear()
    try:
        trainer.train()
    finally:
        reward.verifier.close()
    return {"step": timer.times[1:], "forward": forwards.per_step[1:], "verify": VERIFY_TIMES[1:]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--items", type=int, default=32, help="completions per step (per_device_train_batch_size)")
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--hidden", type=int, default=384)
    parser.add_argument("--completion-length", type=int, default=8)
    parser.add_argument("--torch-threads", type=int, default=1)
    parser.add_argument("--workers", type=int, default=1, help="verifier worker processes")
    args = parser.parse_args()
    torch.set_num_threads(args.torch_threads)
    warnings.filterwarnings("ignore")
    model_dir = tiny_model_path(
        Path(tempfile.gettempdir()) / f"overlap-bench-l{args.layers}-h{args.hidden}",
        num_layers=args.layers,
        hidden_size=args.hidden,
        num_heads=8,
    )
    results = {False: {"step": [], "forward": [], "verify": []}, True: {"step": [], "forward": [], "verify": []}}
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    with tempfile.TemporaryDirectory() as workdir:
        for round_index in range(args.rounds):
            order = (False, True) if round_index % 2 == 0 else (True, False)
            for overlap in order:
                gc.collect()
                for key, values in run(model_dir, overlap, args, workdir).items():
                    results[overlap][key] += values
                step = statistics.median(results[overlap]["step"])
                print(
                    f"round {round_index + 1}, overlap_rewards={overlap}: median step so far {step:.3f} s", flush=True
                )
    median = {o: {k: statistics.median(v) for k, v in r.items()} for o, r in results.items()}
    serial, overlapped = median[False], median[True]
    saving = serial["step"] - overlapped["step"]
    ideal = min(serial["verify"], serial["forward"])
    print(
        f"\nmodel: Llama {args.layers} layers x {args.hidden}, {args.items} completions of {args.completion_length} "
        f"tokens per step, beta 0.04; torch threads {args.torch_threads}, verifier workers {args.workers}; "
        f"{args.rounds} rounds x {args.steps - 1} timed steps per setting"
    )
    print(f"{'':<34} {'overlap off':>12} {'overlap on':>12}")
    for key, label in [
        ("step", "median step (s)"),
        ("forward", "median rollout forwards (s)"),
        ("verify", "median verify_batch (s)"),
    ]:
        print(f"{label:<34} {serial[key]:>12.3f} {overlapped[key]:>12.3f}")
    print(f"saving per step: {saving:.3f} s; ideal min(verification, forwards): {ideal:.3f} s; ", end="")
    print(f"achieved {saving / ideal:.0%} of the ideal (target >= 80%)")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
