"""Watch GRPO learn single-digit arithmetic on a CPU in about two minutes.

    python examples/demo.py            # or: make demo

What it does, in order:
1. Builds the embedded tiny model (a 2-layer Llama with a character tokenizer, random weights; no download).
2. A format-only supervised warm-up (about half a second): the model sees `3+4=<digit>` with a *random* digit as the
   answer, so it learns to answer with one digit but learns nothing about arithmetic; the policy starts near chance
   (1 in 10).
3. GRPO with `GRPOExtTrainer` at its default estimators (advantages `grpo`, KL `k3` in the loss: what stock TRL
   computes), beta 0.04 towards the warmed-up model, which the extension takes from memory (stock would reload it from
   `model.config._name_or_path`, which an in-memory model does not have). Reward = the `math` verifier comparing the
   completion with the answer column, on 88 of the 110 problems `a+b` and `a-b` whose result is a digit; the other 22
   are held out (the same 22 on every machine) and never trained on.
4. Held-out pass@1 before and after training: 16 samples per held-out problem at the training temperature, scored by
   the same verifier (`trl_grpo_ext.evaluation`), with a 95% bootstrap interval over the 22 problems.
5. Prints a summary line (start and final reward, steps, time, held-out pass@1), saves the reward curve to
   `outputs/demo/reward_curve.png`, the per-step log to `outputs/demo/log.jsonl` and the trained model to
   `outputs/demo/model` (`trl-grpo-ext evaluate --model outputs/demo/model` evaluates it again).

Seeds are fixed and the run trains `--max_steps` steps. What a seed fixes: the result, bit for bit, on one machine
with the same torch build and `--threads` (2), idle or loaded. Across processors the figures differ: kernels that
sum in other orders leave other last bits, and 600 steps turn them into another policy. The demo pins the CPU
kernels of torch, oneDNN and MKL to their AVX2 versions (`trl_grpo_ext.trainer.launch.PORTABLE_CPU_KERNELS`), which narrows
the differences without removing them (an AMD EPYC gave another result than an Intel Xeon with the same pin); the
range the held-out figure fell in across the processors and kernels measured is in docs/examples.md.
`--native_kernels` lets the processor choose (faster on some). `--max_seconds` adds a time cap (then the result
depends on the machine's speed too).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

DEFAULTS = dict(
    max_steps=600,
    num_generations=8,
    prompts_per_step=32,
    learning_rate=1e-3,
    beta=0.04,
    entropy_coef=0.0,
    warmup_steps=30,
    num_layers=2,
    hidden_size=64,
    seed=0,
    output_dir="outputs/demo",
)
# Rewards averaged over this many steps for the start and final figures (32 prompts x 8 completions each).
SUMMARY_WINDOW = 20
HELD_OUT_SAMPLES = 16  # samples per held-out problem for pass@1


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for name, default in DEFAULTS.items():
        parser.add_argument(f"--{name}", type=type(default), default=default)
    parser.add_argument(
        "--max_seconds", type=float, default=None, help="Stop after this many seconds (default: no time cap)."
    )
    parser.add_argument("--threads", type=int, default=2, help="torch CPU threads (part of what a seed fixes).")
    parser.add_argument(
        "--native_kernels",
        action="store_true",
        help="Let torch, oneDNN and MKL pick the CPU's fastest kernels: faster on some CPUs, but the result then depends "
        "on the processor (by default the AVX2 kernels every x86-64 CPU since 2013 has are used).",
    )
    return parser.parse_args(argv)


def greedy_accuracy(model, tokenizer, problems: list[dict]) -> float:
    """Share of all problems answered correctly by greedy decoding (one token)."""
    import torch

    batch = tokenizer([p["prompt"] for p in problems], return_tensors="pt", add_special_tokens=False)
    model.eval()
    with torch.no_grad():
        next_token = model(**batch).logits[:, -1].argmax(-1)
    answers = tokenizer.batch_decode(next_token[:, None])
    return sum(a == p["answer"] for a, p in zip(answers, problems)) / len(problems)


def held_out_pass_at_1(model, tokenizer, verifier, seed: int) -> dict:
    """pass@1 on the 22 held-out problems: {"mean": x, "ci95": [lo, hi], "n": 22}, sampled as in training."""
    from trl_grpo_ext import arithmetic_split
    from trl_grpo_ext.evaluation import EvalVerifier, evaluate_dataset
    from trl_grpo_ext.evaluation.sampling import TransformersSampler, generation_settings

    model.eval()
    settings = generation_settings({"max_completion_length": 1, "temperature": 1.0})
    sampler = TransformersSampler(model, tokenizer, settings, seed=seed)
    _, summary = evaluate_dataset(
        arithmetic_split("held_out"), sampler, [EvalVerifier("math", verifier, "answer")], HELD_OUT_SAMPLES, [1],
        seed=seed, show_progress=False,
    )  # fmt: skip
    return summary["pass@1"]


def plot_reward_curve(history: list[dict], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = [h["step"] for h in history]
    rewards = [h["reward"] for h in history]
    smooth = [
        sum(rewards[max(0, i - SUMMARY_WINDOW + 1) : i + 1]) / len(rewards[max(0, i - SUMMARY_WINDOW + 1) : i + 1])
        for i in range(len(rewards))
    ]
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(steps, rewards, color="tab:blue", alpha=0.3, label="mean reward per step")
    ax.plot(steps, smooth, color="tab:blue", label=f"moving average ({SUMMARY_WINDOW} steps)")
    ax.axhline(0.1, color="grey", linestyle=":", label="chance (1 in 10)")
    ax.set(xlabel="GRPO step", ylabel="mean reward (math verifier)", ylim=(0, 1), title=title)
    ax.legend(loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def build_trainer(model, tokenizer, args: argparse.Namespace, progress):
    from transformers import PrinterCallback, ProgressCallback

    from trl_grpo_ext import GRPOExtConfig, GRPOExtTrainer, arithmetic_dataset
    from trl_grpo_ext.verifiers import as_reward_function

    config = GRPOExtConfig(
        output_dir=args.output_dir,
        bf16=False,
        use_cpu=True,
        seed=args.seed,
        max_steps=args.max_steps,
        learning_rate=args.learning_rate,
        lr_scheduler_type="constant",
        num_generations=args.num_generations,
        per_device_train_batch_size=args.num_generations * args.prompts_per_step,
        max_completion_length=1,  # the answer is one digit, one token
        temperature=1.0,
        beta=args.beta,
        entropy_coef=args.entropy_coef,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        disable_tqdm=True,
    )
    trainer = GRPOExtTrainer(
        model=model,
        args=config,
        reward_funcs=as_reward_function("math", reference_column="answer"),
        train_dataset=arithmetic_dataset(repeats=125, seed=args.seed, split="train"),  # 11,000 rows, as before
        processing_class=tokenizer,
        callbacks=[progress],
    )
    # Our progress bar replaces the Trainer's, which would print every log dict.
    trainer.remove_callback(PrinterCallback)
    trainer.remove_callback(ProgressCallback)
    return trainer


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from trl_grpo_ext import use_portable_cpu_kernels

    kernels = {} if args.native_kernels else use_portable_cpu_kernels()
    # examples/script_setup.py, next to this script; imported here since it imports trl, which --help does not need.
    import torch
    from script_setup import quiet_libraries

    from trl_grpo_ext import arithmetic_format_warmup, arithmetic_problems, build_tiny_model

    quiet_libraries()
    chosen = ", ".join(f"{k}={v}" for k, v in kernels.items()) or "the processor's own"
    print(f"CPU kernels: {chosen}; torch {torch.__version__}, {args.threads} threads.")
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    out = Path(args.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    problems = arithmetic_problems()
    model, tokenizer = build_tiny_model(num_layers=args.num_layers, hidden_size=args.hidden_size, seed=args.seed)

    started = time.perf_counter()
    warmup_loss = arithmetic_format_warmup(model, tokenizer, args.warmup_steps, args.seed)
    warmup_s = time.perf_counter() - started
    greedy_before = greedy_accuracy(model, tokenizer, problems)
    print(f"Format warm-up: {args.warmup_steps} steps in {warmup_s:.1f} s (loss {warmup_loss:.2f}; random targets).")

    time_left = None if args.max_seconds is None else args.max_seconds - warmup_s
    from trl_grpo_ext import RewardProgress

    progress = RewardProgress(args.max_steps, SUMMARY_WINDOW, max_seconds=time_left)
    trainer = build_trainer(model, tokenizer, args, progress)
    verifier = trainer.reward_funcs[0].verifier
    eval_started = time.perf_counter()
    held_out = [held_out_pass_at_1(model, tokenizer, verifier, args.seed)]
    eval_s = time.perf_counter() - eval_started
    trainer.train()
    eval_started = time.perf_counter()
    held_out.append(held_out_pass_at_1(trainer.model, tokenizer, verifier, args.seed))
    eval_s += time.perf_counter() - eval_started
    total_s = time.perf_counter() - started
    verifier.close()
    greedy_after = greedy_accuracy(trainer.model, tokenizer, problems)
    trainer.save_model(str(out / "model"))  # with the tokenizer
    timing = (warmup_s, eval_s, total_s)
    return report(progress, out, timing, (greedy_before, greedy_after), held_out)


def report(progress, out: Path, timing: tuple, greedy: tuple, held_out: list[dict]) -> int:
    """Write the log and the curve; print the summary line. timing: (warm-up, held-out evaluation, total) seconds."""
    warmup_s, eval_s, total_s = timing
    history = progress.history
    with open(out / "log.jsonl", "w") as f:
        for row in history:
            f.write(json.dumps(row) + "\n")
    window = min(SUMMARY_WINDOW, len(history))
    start = sum(h["reward"] for h in history[:window]) / window
    final = sum(h["reward"] for h in history[-window:]) / window
    steps = history[-1]["step"]
    plot_reward_curve(history, out / "reward_curve.png", f"GRPO on single-digit arithmetic ({steps} steps)")
    stop = " (stopped by --max_seconds)" if progress.stopped_by_time else ""
    before, after = (f"{h['mean']:.2f} [{h['ci95'][0]:.2f}, {h['ci95'][1]:.2f}]" for h in held_out)
    print(
        f"Mean reward {start:.2f} -> {final:.2f} (first/last {window} steps) in {steps} steps{stop}, "
        f"{total_s:.0f} s total ({warmup_s:.1f} s warm-up, {eval_s:.1f} s held-out evaluation). Held-out pass@1 (22 problems never trained on, "
        f"{HELD_OUT_SAMPLES} samples each, 95% bootstrap interval): {before} -> {after}. Greedy accuracy on all 110 "
        f"problems: {greedy[0]:.2f} -> {greedy[1]:.2f}. Curve: {out / 'reward_curve.png'}; model: {out / 'model'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
