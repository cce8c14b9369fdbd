"""Per-step time of GRPOExtTrainer against stock GRPOTrainer on the same work, alternating in one process.

For each variant, rounds alternate stock and extension (fresh trainers from the same seed, model and data, learning
rate 0 so that both generate the same completions); the median step time of each side (first step of every run
dropped as warm-up) gives the ratio extension / stock.
Stock runs with the stock settings the variant corresponds to (beta, loss type); the extension adds its estimator.

    python benchmarks/trainer_overhead.py            # every estimator, 3 rounds of 16 steps
    python benchmarks/trainer_overhead.py --quick    # defaults and a few estimators
    python benchmarks/trainer_overhead.py --quick --device cuda --bf16   # on a GPU (benchmarks/gpu_suite.sh)
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
sys.path.insert(0, str(Path(__file__).parents[1] / "tests" / "support"))

import torch  # noqa: E402
from trainer_helpers import digit_reward, make_config, prompt_dataset  # noqa: E402
from transformers import PrinterCallback, TrainerCallback  # noqa: E402
from trl import GRPOConfig, GRPOTrainer  # noqa: E402

from trl_grpo_ext import (  # noqa: E402
    GRPOExtConfig,
    GRPOExtTrainer,
    list_advantage_estimators,  # noqa: E402
    list_kl_estimators,  # noqa: E402
    tiny_model_path,  # noqa: E402
)


class StepTimer(TrainerCallback):
    def __init__(self):
        self.times: list[float] = []
        self._start = 0.0

    def on_step_begin(self, args, state, control, **kwargs):
        self._start = time.perf_counter()

    def on_step_end(self, args, state, control, **kwargs):
        self.times.append(time.perf_counter() - self._start)


def step_times(trainer_cls, config_cls, settings, reward, model_dir, steps, workdir, device="cpu") -> list[float]:
    timer = StepTimer()
    # learning_rate=0: both sides generate exactly the same completions every step, so the ratio measures the
    # extension's own work and not a different workload (a variant that trains differently generates other lengths).
    config = make_config(
        config_cls,
        workdir,
        max_steps=steps,
        logging_steps=steps,
        disable_tqdm=True,
        learning_rate=0.0,
        per_device_train_batch_size=16,
        num_generations=8,
        max_completion_length=32,
        **device_settings(device, settings),
    )
    trainer = trainer_cls(model_dir, [reward], args=config, train_dataset=prompt_dataset(), callbacks=[timer])
    trainer.remove_callback(PrinterCallback)
    trainer.train()
    return timer.times[1:]


def device_settings(device: str, settings: dict) -> dict:
    """`settings` plus where to train: "cpu", "cuda" (fp32) or "cuda-bf16"."""
    if device == "cpu":
        return settings
    return {**settings, "use_cpu": False, "bf16": device == "cuda-bf16"}


def binary_digit_reward(completions, **kwargs):
    return [float(any(ch.isdigit() for ch in c)) for c in completions]


def variants(quick: bool) -> list[tuple[str, dict, dict]]:
    """(name, stock settings, extension-only settings)."""
    out = [("defaults (grpo, beta=0)", {}, {}), ("defaults, beta=0.04 (k3 in loss)", {"beta": 0.04}, {})]
    advantage = [e for e in list_advantage_estimators() if e != "grpo"]
    kl = [k for k in list_kl_estimators() if k != "k3"]
    if quick:
        advantage, kl = ["rloo", "rank"], ["k2"]
    out += [(f"advantage={e}", {}, {"advantage_estimator": e}) for e in advantage]
    out += [(f"kl={k} in loss", {"beta": 0.04}, {"kl_estimator": k, "use_bias_correction_kl": False}) for k in kl]
    out.append(
        (
            "kl=k1 in reward",
            {"beta": 0.04},
            {"kl_estimator": "k1", "kl_placement": "reward", "advantage_estimator": "dr_grpo"},
        )
    )
    return out


def hook_costs(batch=16, group=8, length=32, repeats=2000, device="cpu") -> dict[str, float]:
    """Seconds per call of the extension's own per-step work, on tensors of the benchmark's shapes: the part of the
    step-time ratio that is not noise."""
    from trl_grpo_ext import kl_divergence
    from trl_grpo_ext.trainer.advantages import advantage_metrics, compute_advantages

    rewards = torch.rand(batch, device=device)
    logp = (-torch.rand(batch, length, device=device)).requires_grad_()
    ref, mask = -torch.rand(batch, length, device=device), torch.ones(batch, length, device=device)

    def advantage_step():
        advantage_metrics(compute_advantages(rewards, group, "grpo"), group)

    def kl_step():
        kl = kl_divergence(logp, ref, "k2") * torch.exp(logp - logp.detach())
        ((kl * mask).sum(-1) / mask.sum(-1)).mean().item()

    costs = {}
    for name, fn in [("advantages + metrics", advantage_step), ("KL term in the loss (k2)", kl_step)]:
        start = time.perf_counter()
        for _ in range(repeats):
            fn()
        if device != "cpu":
            torch.cuda.synchronize()
        costs[name] = (time.perf_counter() - start) / repeats
    return costs


def dry_run(quick: bool, device: str) -> None:
    """Each variant's stock and extension configs, built on CPU (device settings checked, not used)."""
    with tempfile.TemporaryDirectory() as workdir:
        for name, stock_settings, ext_settings in variants(quick):
            settings = {**device_settings(device, stock_settings), "use_cpu": True}
            make_config(GRPOConfig, workdir, **settings)
            make_config(GRPOExtConfig, workdir, **settings, **ext_settings)
            print(f"{name}: configs built ({device})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=16)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--bf16", action="store_true", help="bf16 autocast (with --device cuda).")
    parser.add_argument(
        "--dry-run", action="store_true", help="Print the variants and build their configs; no training."
    )
    args = parser.parse_args()
    import warnings

    warnings.filterwarnings("ignore")
    device = args.device + ("-bf16" if args.bf16 else "")
    if args.dry_run:
        return dry_run(args.quick, device)
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit(
            "benchmarks/trainer_overhead.py --device cuda: no CUDA GPU visible (torch.cuda.is_available() is False)."
        )
    torch.set_num_threads(1)
    model_dir = tiny_model_path()
    print(f"{'variant':<40} {'stock s/step':>12} {'ext s/step':>11} {'ratio':>7}")
    stock_step = None
    with tempfile.TemporaryDirectory() as workdir:
        for name, stock_settings, ext_settings in variants(args.quick):
            stock, ext = [], []
            # pass@k needs binary rewards; both sides get the same reward function.
            reward = binary_digit_reward if ext_settings.get("advantage_estimator") == "pass_at_k" else digit_reward
            ext_all = {**stock_settings, **ext_settings}
            runs = [
                (stock, GRPOTrainer, GRPOConfig, stock_settings),
                (ext, GRPOExtTrainer, GRPOExtConfig, ext_all),
            ]
            for round_index in range(args.rounds):
                # Alternate which side goes first, so that drift and the previous run's garbage hit both equally.
                for times, trainer_cls, config_cls, settings in runs if round_index % 2 == 0 else runs[::-1]:
                    gc.collect()
                    times += step_times(
                        trainer_cls, config_cls, settings, reward, model_dir, args.steps, workdir, device
                    )
            s, e = statistics.median(stock), statistics.median(ext)
            print(f"{name:<40} {s:>12.4f} {e:>11.4f} {e / s:>7.3f}", flush=True)
            stock_step = stock_step or s
    print(f"\nThe extension's own work per step, timed alone (share of the stock default step, {stock_step:.4f} s):")
    for name, seconds in hook_costs(device=args.device).items():
        print(f"  {name:<30} {seconds * 1e3:8.3f} ms  ({seconds / stock_step:.2%})")


if __name__ == "__main__":
    main()
