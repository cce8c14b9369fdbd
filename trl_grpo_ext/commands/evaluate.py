"""`trl-grpo-ext evaluate`: held-out pass@k, maj@k and greedy accuracy of a model, scored with the verifiers.

trl-grpo-ext evaluate --config task.yaml --model outputs/run/checkpoint-500 --num_samples 16 --k 1,4,16
trl-grpo-ext evaluate --model outputs/demo/model             # built-in task: its 22 held-out problems
accelerate launch --num_processes 2 -m trl_grpo_ext.cli evaluate --config task.yaml   # prompts split across processes
trl-grpo-ext evaluate --config task.yaml --split train --keep_pass_rate 0.1,0.9 --write_dataset data/kept
trl-grpo-ext evaluate --model outputs/run/model --base_model Qwen/Qwen2.5-0.5B-Instruct --num_samples 64

Writes per_prompt.jsonl and summary.json to --output_dir and prints the summary table.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

from trl_grpo_ext.commands.help_text import add_task_file, describe
from trl_grpo_ext.usage import UsageError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    describe(parser, __doc__)
    add_task_file(
        parser,
        "The task's YAML file, as for compare: model_name_or_path, dataset_name, prompt_column, "
        "reference_column, reward_verifiers, system_prompt, verifier_imports, eval_dataset, eval_split, and the "
        "generation fields (max_completion_length, temperature, top_p, top_k, min_p, repetition_penalty, "
        "generation_kwargs, chat_template_kwargs). Default: the built-in arithmetic task.",
    )
    parser.add_argument(
        "--model",
        help="Model folder or Hub name (a trained checkpoint), or a LoRA output folder (adapter_config.json: loaded on "
        "the base model it names, merged). Default: the file's model.",
    )
    parser.add_argument(
        "--split", help="Split to evaluate. Default: the file's eval_split, else 'test'; built-in task: 'held_out'."
    )
    parser.add_argument("--num_samples", type=int, default=8, help="Samples per prompt, n (default 8).")
    parser.add_argument("--k", default=None, help="Comma-separated k of pass@k and maj@k (default: 1 and n).")
    parser.add_argument("--greedy", action="store_true", help="Also decode greedily and report greedy accuracy.")
    parser.add_argument(
        "--base_model",
        help="Also evaluate this model (folder, Hub name or LoRA folder: e.g. the model training started from) with "
        "the same prompts, samples and seed, and report pass@k of both for every k up to --num_samples, with the k "
        "from which the base is ahead (pass_at_k_vs_base.json; its own files under OUTPUT_DIR/base).",
    )
    parser.add_argument(
        "--save_completions",
        action="store_true",
        help="Also write completions.jsonl: every completion with its verifiers' scores, reasons and extracted "
        "answers (one line each).",
    )
    parser.add_argument("--temperature", type=float, default=None, help="Default: the file's, else GRPOConfig's.")
    parser.add_argument(
        "--max_completion_length", type=int, default=None, help="Default: the file's, else GRPOConfig's."
    )
    parser.add_argument("--max_prompts", type=int, default=None, help="Evaluate N rows of the split only.")
    parser.add_argument(
        "--prompt_offset", type=int, default=0, help="With --max_prompts: start at this row (default 0, the first)."
    )
    parser.add_argument(
        "--prompt_subset_seed",
        type=int,
        default=None,
        help="With --max_prompts: a random subset of N rows drawn with this seed, in the split's order, instead of "
        "N consecutive rows.",
    )
    parser.add_argument("--batch_size", type=int, default=64, help="Most sequences per generate call (default 64).")
    parser.add_argument(
        "--prompts_per_call",
        type=int,
        default=1,
        help="Prompts sampled together in one left-padded generate call (their samples then depend on which rows "
        "share the call; default 1: each prompt's samples depend on it alone). On a CPU, 8 generate about 2x the "
        "sequences a second of 1.",
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch CPU threads per process (default: the CPU count divided by the processes on this machine).",
    )
    parser.add_argument("--seed", type=int, default=0, help="Seed of the samples and of the bootstrap (default 0).")
    parser.add_argument("--output_dir", default="outputs/evaluate", help="Default: outputs/evaluate.")
    parser.add_argument(
        "--keep_pass_rate",
        metavar="LO,HI",
        help="With --write_dataset: keep the rows whose pass rate (correct / n) lies in [LO, HI].",
    )
    parser.add_argument(
        "--write_dataset", metavar="DIR", help="Write the kept rows, as stored, to DIR (save_to_disk)."
    )
    parser.add_argument("--no_progress", action="store_true", help="Hide the progress bar.")


def parse_ks(text: str | None, num_samples: int) -> list[int]:
    if text is None:
        return sorted({1, num_samples})
    try:
        ks = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise UsageError(f"--k {text!r}: write comma-separated integers, e.g. 1,4,8.") from None
    bad = [k for k in ks if not 1 <= k <= num_samples]
    if not ks or bad:
        raise UsageError(f"--k {text!r}: each k must lie between 1 and --num_samples {num_samples}.")
    return sorted(set(ks))


def parse_pass_rate(args: argparse.Namespace) -> tuple[float, float] | None:
    if (args.keep_pass_rate is None) != (args.write_dataset is None):
        raise UsageError("--keep_pass_rate LO,HI and --write_dataset DIR go together: give both or neither.")
    if args.keep_pass_rate is None:
        return None
    try:
        low, high = (float(x) for x in args.keep_pass_rate.split(","))
    except ValueError:
        raise UsageError(f"--keep_pass_rate {args.keep_pass_rate!r}: write LO,HI, e.g. 0.1,0.9.") from None
    if not 0.0 <= low <= high <= 1.0:
        raise UsageError(f"--keep_pass_rate {args.keep_pass_rate}: need 0 <= LO <= HI <= 1.")
    return low, high


def load_task(args: argparse.Namespace):
    """(task, shared settings, split, model) from the arguments; UsageError on bad input."""
    from trl_grpo_ext.compare import Task, load_task_file
    from trl_grpo_ext.compare.plan import TINY_SETTINGS, validate_task
    from trl_grpo_ext.evaluation.loading import adapter_base
    from trl_grpo_ext.evaluation.tasks import held_out_split
    from trl_grpo_ext.usage import check_model_path

    task, common = load_task_file(args.config) if args.config else (Task(), dict(TINY_SETTINGS))
    model = args.model or task.model_name_or_path
    if model is None and args.config:
        raise UsageError(
            f"--config {args.config} names no model_name_or_path (compare trains the tiny model on such a task); "
            "pass --model DIR, the trained checkpoint to evaluate, or add model_name_or_path to the file."
        )
    if model is None:
        raise UsageError(
            "the built-in task has no trained model: pass --model, e.g. outputs/demo/model (saved by examples/demo.py)."
        )
    # A LoRA output folder is checked through the base model it names, which is what loads first.
    base = adapter_base(model, "--model" if args.model else "model_name_or_path")
    check_model_path("--model", None if base else args.model)
    validate_task(dataclasses.replace(task, model_name_or_path=base or model))
    split = args.split or held_out_split(task) or "test"
    if common.get("use_vllm"):
        print(
            "trl-grpo-ext evaluate: use_vllm is set in the file, but this command samples with transformers "
            "`generate` (same settings, same verdicts; slower on long completions).",
            file=sys.stderr,
        )
    if args.temperature is not None:
        common["temperature"] = args.temperature
    if args.max_completion_length is not None:
        common["max_completion_length"] = args.max_completion_length
    return task, common, split, model


def run(args: argparse.Namespace) -> int:
    # The whole input, before any model loads: a UsageError is one line (`cli.main`).
    ks = parse_ks(args.k, args.num_samples)
    pass_rate = parse_pass_rate(args)
    if args.num_samples < 1:
        raise UsageError(f"--num_samples {args.num_samples}: must be >= 1.")
    task, common, split, model_name = load_task(args)
    from trl_grpo_ext.evaluation.loading import adapter_base
    from trl_grpo_ext.evaluation.tasks import load_eval_rows
    from trl_grpo_ext.usage import check_model_path

    if args.prompts_per_call < 1:
        raise UsageError(f"--prompts_per_call {args.prompts_per_call}: must be >= 1.")
    if args.base_model is not None and adapter_base(args.base_model, "--base_model") is None:
        check_model_path("--base_model", args.base_model)
    raw, rows = load_eval_rows(task, split, args.max_prompts, args.prompt_offset, args.prompt_subset_seed)
    models = [model_name] + ([args.base_model] if args.base_model else [])
    evaluated, main = evaluate_models(args, task, common, models, rows, ks)
    if not main:
        return 0
    output_dir = Path(args.output_dir)
    results = report(args, evaluated[0], model_name, split, output_dir)
    if args.base_model:
        report_base(args, evaluated, (model_name, args.base_model), split, output_dir)
    if pass_rate is not None:
        from trl_grpo_ext.evaluation import pass_rate_rows

        kept = pass_rate_rows(results, *pass_rate)
        raw.select(kept).save_to_disk(args.write_dataset)
        print(
            f"Kept {len(kept)} of {len(results)} rows with pass rate in [{pass_rate[0]}, {pass_rate[1]}]: "
            f"{args.write_dataset}"
        )
    return 0


def report(args, evaluated, model_name: str, split: str, output_dir: Path):
    """Write one model's files to output_dir and print its table; returns its per-prompt results."""
    from trl_grpo_ext.evaluation import summary_table, write_results

    results, summary = evaluated
    summary = {**summary, "model": model_name, "split": split}
    write_results(output_dir, results, summary)
    print(summary_table(summary))
    print(f"Per prompt: {output_dir / 'per_prompt.jsonl'}; summary: {output_dir / 'summary.json'}")
    if args.save_completions:
        print(f"Completions with their verdicts: {output_dir / 'completions.jsonl'}")
    else:
        print("Add --save_completions to keep every completion with its scores and reasons.")
    return results


def report_base(args, evaluated, names: tuple[str, str], split: str, output_dir: Path) -> None:
    """The base model's files under output_dir/base, and pass@k of both side by side (pass_at_k_vs_base.json)."""
    import json

    from trl_grpo_ext.evaluation.base_comparison import compare_with_base, comparison_table

    print(f"\nBase model {names[1]}, same prompts, samples and seed:")
    report(args, evaluated[1], names[1], split, output_dir / "base")
    comparison = compare_with_base(evaluated[0][0], evaluated[1][0], args.seed)
    path = output_dir / "pass_at_k_vs_base.json"
    path.write_text(json.dumps({"trained_model": names[0], "base_model": names[1], **comparison}, indent=2) + "\n")
    print(f"\npass@k, trained against base:\n{comparison_table(comparison, names[0], names[1])}\nEvery k: {path}")


def evaluate_models(args, task, common, model_names, rows, ks):
    """([(per-prompt results, summary) of each model], whether this is the main process), on every process of the
    launch: each model in turn, with the same rows, settings and seed."""
    import torch
    from accelerate import PartialState

    from trl_grpo_ext.evaluation import evaluate_dataset
    from trl_grpo_ext.evaluation.loading import load_model_and_tokenizer
    from trl_grpo_ext.evaluation.sampling import TransformersSampler, generation_settings
    from trl_grpo_ext.evaluation.tasks import build_verifiers
    from trl_grpo_ext.trainer.launch import default_threads

    state = PartialState(cpu=not torch.cuda.is_available())
    torch.set_num_threads(args.threads or default_threads())
    verifiers = build_verifiers(task)
    for spec in verifiers:
        spec.verifier.start(wait=False)  # worker processes warm up while the model loads
    evaluated = []
    try:
        for model_name in model_names:
            model, tokenizer = load_model_and_tokenizer(model_name, common.get("model_init_kwargs") or {})
            sampler = TransformersSampler(
                model.to(state.device).eval(), tokenizer, generation_settings(common), args.seed, args.batch_size
            )
            evaluated.append(evaluate_dataset(
                rows, sampler, verifiers, args.num_samples, ks, args.greedy, args.seed, not args.no_progress,
                prompts_per_call=args.prompts_per_call, keep_completions=args.save_completions,
            ))  # fmt: skip
            del model, sampler
    finally:
        for spec in verifiers:
            spec.verifier.close()
    main = state.is_main_process
    state.destroy_process_group()
    return evaluated, main
