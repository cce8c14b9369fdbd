"""`trl-grpo-ext compare`: stock GRPOTrainer against extension variants, same seed, data and model.

trl-grpo-ext compare                                             # stock vs the extension's defaults: identical
trl-grpo-ext compare --variant rloo:advantage_estimator=rloo --variant k2:kl_estimator=k2
trl-grpo-ext compare --variant reward_kl:kl_estimator=k1,kl_placement=reward
trl-grpo-ext compare --group_sizes 2 4 8 16                       # reward against rollouts spent, per G
trl-grpo-ext compare --replot outputs/compare                     # redraw table and plots from the JSONL files
"""

from __future__ import annotations

import argparse
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = __doc__.split("\n", 2)[2]
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="NAME[:KEY=VALUE,...]",
        help="A GRPOExtTrainer run with these GRPOExtConfig settings (repeatable). Default: one run 'ext' with none.",
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE,...",
        help="GRPOConfig settings for every run, stock included (e.g. beta=0,learning_rate=5e-4). Defaults: those of "
        "examples/demo.py (beta=0.04, learning_rate=1e-3, num_generations=8).",
    )
    parser.add_argument("--max_steps", type=int, default=200, help="Steps per run (default 200).")
    parser.add_argument("--prompts_per_step", type=int, default=32, help="Prompts per step (default 32).")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--group_sizes",
        type=int,
        nargs="+",
        metavar="G",
        help="Group-size sweep: every run once per G, each with the same budget of rollouts (--rollouts).",
    )
    parser.add_argument(
        "--rollouts", type=int, default=51200, help="Rollout budget per run of the group-size sweep (default 51200)."
    )
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads per run (default 1).")
    parser.add_argument("--output_dir", default="outputs/compare")
    parser.add_argument(
        "--replot", metavar="DIR", help="Only rebuild results.md and the plots from DIR's JSONL files."
    )


def run(args: argparse.Namespace) -> int:
    from trl_grpo_ext.compare import parse_variant, plan_group_sweep, plan_runs, replot, run_all

    if args.replot:
        print(replot(args.replot), end="")
        return 0
    variants = [parse_variant(text) for text in args.variant] or [("ext", {})]
    common: dict = {}
    for text in args.set:
        common.update(parse_variant(f"set:{text}")[1])
    if args.group_sizes:
        runs = plan_group_sweep(args.group_sizes, variants, common, args.rollouts, args.prompts_per_step, args.seed)
    else:
        runs = plan_runs(variants, common, args.max_steps, args.prompts_per_step, args.seed)
    output_dir = Path(args.output_dir)
    run_all(runs, output_dir, threads=args.threads)
    print(replot(output_dir), end="")
    print(f"Results: {output_dir / 'results.md'}, plots and one JSONL per run in {output_dir}/")
    return 0
