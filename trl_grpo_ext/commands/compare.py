"""`trl-grpo-ext compare`: stock GRPOTrainer against extension variants, on the same model, data and seeds.

trl-grpo-ext compare                                          # built-in task: stock vs the extension's defaults
trl-grpo-ext compare --seeds 5 --variant rloo:advantage_estimator=rloo --variant k2:kl_estimator=k2
trl-grpo-ext compare --config my_task.yaml --seeds 3 --variant reward_kl:kl_estimator=k1,kl_placement=reward
accelerate launch --num_processes 2 -m trl_grpo_ext.cli compare --config my_task.yaml   # each run on 2 processes
trl-grpo-ext compare --group_sizes 2 4 8 16                    # reward against rollouts spent, per G
trl-grpo-ext compare --replot outputs/compare                  # redraw results.md/.json and plots from the files
trl-grpo-ext compare --variant ds:dynamic_sampling=true --x_axis completions   # against completions generated
trl-grpo-ext compare --budget_completions 2048 --eval_every_completions 1024 --control shuffled --seeds 5

Run again with the same --output_dir to resume: finished runs (variant, seed) are not trained again.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from trl_grpo_ext.commands.help_text import add_task_file, describe
from trl_grpo_ext.trainer.reward_control import REWARD_CONTROLS
from trl_grpo_ext.usage import UsageError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    describe(parser, __doc__)
    add_task_file(
        parser,
        "YAML file of the task: model_name_or_path, dataset_name (Hub name or local folder), prompt_column, "
        "reference_column, reward_verifiers, system_prompt, verifier_imports, and any GRPOConfig field shared by "
        "every run. Default: none, the built-in task (tiny model, single-digit arithmetic, math verifier, CPU).",
    )
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="NAME[:FIELD=VALUE,...]",
        help="A GRPOExtTrainer run with these GRPOExtConfig settings (repeatable). Default: one variant 'ext' with "
        "no settings, which must match stock exactly.",
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="FIELD=VALUE,...",
        help="GRPOConfig settings for every run, stock included (e.g. beta=0,learning_rate=5e-4). Default: none; "
        "the built-in task starts from beta=0.04, learning_rate=1e-3, num_generations=8 (examples/demo.py).",
    )
    parser.add_argument(
        "--seeds", type=int, default=1, metavar="N", help="Seeds per variant, the same for all (default 1)."
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=None,
        metavar="S",
        help="First seed; seeds are S..S+N-1 (default 0, or the file's seed).",
    )
    parser.add_argument(
        "--max_steps", type=int, default=None, help="Steps per run (default 200, or the --config file's max_steps)."
    )
    parser.add_argument(
        "--budget_completions",
        type=int,
        default=None,
        metavar="N",
        help="Stop every run at the first step at which it has generated N completions (dynamic sampling's extra "
        "rounds count), instead of after a number of steps: variants compared at equal generation cost. Default: "
        "off (runs stop after --max_steps).",
    )
    parser.add_argument(
        "--eval_every_completions",
        type=int,
        default=None,
        metavar="K",
        help="With --budget_completions: evaluate every run on the held-out split each time it has generated another "
        "K completions (the same points for every run), and the base model once per seed: curves of held-out pass@1 "
        "against completions generated. Default: only at the end of each run.",
    )
    parser.add_argument(
        "--control",
        action="append",
        default=[],
        choices=REWARD_CONTROLS,
        help="Add a null-reward control run per seed, named control:<kind> (repeatable): 'shuffled' permutes each "
        "batch's rewards across the batch, 'random' draws them from the batch's rewards with replacement "
        "(GRPOExtConfig.reward_control). It learns what any training teaches, without the reward's information. "
        "Default: none.",
    )
    parser.add_argument(
        "--prompts_per_step",
        type=int,
        default=None,
        help="Prompts per device per step (default 32; with --config, per_device_train_batch_size / num_generations).",
    )
    parser.add_argument(
        "--group_sizes",
        type=int,
        nargs="+",
        metavar="G",
        help="Group-size sweep: every run once per G, each with the same budget of rollouts (default: no sweep).",
    )
    parser.add_argument(
        "--rollouts", type=int, default=51200, help="Rollout budget per run of the group-size sweep (default 51200)."
    )
    parser.add_argument(
        "--eval_samples",
        type=int,
        default=None,
        metavar="N",
        help="Samples per held-out prompt in each run's final evaluation (default 8, or the file's eval_num_samples).",
    )
    parser.add_argument(
        "--eval_k",
        default=None,
        metavar="K,...",
        help="k of the reported held-out pass@k and maj@k (default 1, or the file's eval_k). The built-in task "
        "holds out 22 of its 110 problems; a --config task is evaluated on its eval_split (of eval_dataset).",
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch CPU threads per run (default: 1 on the built-in task, whose tiny model runs fastest on one; on a "
        "--config task, the CPU count divided by the processes on this machine).",
    )
    parser.add_argument("--output_dir", default="outputs/compare", help="Default: outputs/compare.")
    parser.add_argument(
        "--replot", metavar="DIR", help="Only rebuild results.md, results.json and the plots from DIR (default: off)."
    )
    parser.add_argument(
        "--x_axis",
        choices=("steps", "completions", "both"),
        default="both",
        help="Report and plot against optimizer steps, against completions generated (num_completions_generated: "
        "sample efficiency when variants generate different amounts per step, as dynamic sampling does), or both "
        "(default).",
    )


# Settings compare sets for every run, and how to choose them instead.
RESERVED = {
    "max_steps": "use --max_steps",
    "seed": "use --seed and --seeds",
    "per_device_train_batch_size": "use --prompts_per_step (and num_generations)",
    "output_dir": "use --output_dir",
    "logging_steps": "every run logs every step",
    "disable_tqdm": "compare shows one progress bar",
}


def plan(args: argparse.Namespace):
    """(task, runs) from the arguments; UsageError on a bad variant, field or setting."""
    from trl_grpo_ext.compare import Task, load_task_file, parse_variant, plan_group_sweep, plan_runs
    from trl_grpo_ext.compare.plan import CONTROL, TINY_MAX_STEPS, TINY_PROMPTS_PER_STEP, TINY_SETTINGS

    if args.config:
        task, common = load_task_file(args.config)
    else:
        task, common = Task(), dict(TINY_SETTINGS)
    if args.eval_samples is not None:
        task.eval_num_samples = args.eval_samples
    if args.eval_k is not None:
        try:
            task.eval_k = [int(k) for k in args.eval_k.split(",")]
        except ValueError:
            raise UsageError(f"--eval_k {args.eval_k!r}: write comma-separated integers, e.g. 1,8.") from None
    shared = {}
    for text in args.set:
        shared.update(parse_variant(f"set:{text}")[1])
    variants = [parse_variant(text) for text in args.variant] or ([] if args.control else [("ext", {})])
    for where, settings in [("--set", shared), *((f"--variant {name}", o) for name, o in variants)]:
        reserved = sorted(set(settings) & set(RESERVED))
        if reserved:
            raise UsageError(
                f"{where}: {', '.join(reserved)} is set by compare itself, the same for every run: "
                + "; ".join(RESERVED[k] for k in reserved)
                + "."
            )
    common.update(shared)
    names = [name for name, _ in variants]
    if len(set(names)) != len(names):
        raise UsageError(f"--variant: each NAME must be unique; got {names}.")
    variants += [(f"{CONTROL}:{kind}", {"reward_control": kind}) for kind in dict.fromkeys(args.control)]
    budget = budget_of(args)
    first_seed = args.seed if args.seed is not None else common.pop("seed", 0)
    common.pop("seed", None)
    seeds = list(range(first_seed, first_seed + args.seeds))
    if args.seeds < 1:
        raise UsageError(f"--seeds {args.seeds}: must be >= 1.")
    max_steps = args.max_steps or common.pop("max_steps", None) or (TINY_MAX_STEPS if task.builtin else None)
    common.pop("max_steps", None)
    if budget is not None:
        if args.max_steps or args.group_sizes:
            raise UsageError(
                "--budget_completions sets each run's length: give it without --max_steps and --group_sizes."
            )
        max_steps = None
    elif not max_steps or max_steps < 1:
        raise UsageError("--config: set max_steps (> 0) in the file or pass --max_steps: each run needs a length.")
    prompts = args.prompts_per_step
    if prompts is None and "per_device_train_batch_size" in common:  # the --config file's batch
        prompts = max(1, common["per_device_train_batch_size"] // common.get("num_generations", 8))
    elif prompts is None:
        prompts = TINY_PROMPTS_PER_STEP if task.builtin else 1
    common.pop("per_device_train_batch_size", None)
    if args.group_sizes:
        runs = plan_group_sweep(args.group_sizes, variants, common, args.rollouts, prompts, seeds)
    else:
        runs = plan_runs(variants, common, max_steps, prompts, seeds, budget=budget)
    return task, runs


def budget_of(args: argparse.Namespace):
    """The completion budget of `--budget_completions` and `--eval_every_completions`, or None."""
    from trl_grpo_ext.compare.plan import Budget

    if args.eval_every_completions is not None and args.budget_completions is None:
        raise UsageError("--eval_every_completions needs --budget_completions (the points run up to the budget).")
    for flag, value in (
        ("--budget_completions", args.budget_completions),
        ("--eval_every_completions", args.eval_every_completions),
    ):
        if value is not None and value < 1:
            raise UsageError(f"{flag} {value}: must be >= 1.")
    if args.budget_completions is None:
        return None
    return Budget(args.budget_completions, args.eval_every_completions)


def run(args: argparse.Namespace) -> int:
    from trl_grpo_ext.compare import replot, run_all, validate_plan
    from trl_grpo_ext.compare.plan import validate_task
    from trl_grpo_ext.compare.run import process_rank

    output_dir = Path(args.output_dir)
    if args.replot:
        print(replot(args.replot, args.x_axis), end="")
        return 0
    # The whole input, before any model loads or any run starts: a UsageError is one line (`cli.main`), never "resume".
    task, runs = plan(args)
    validate_task(task)
    validate_plan(runs, output_dir)
    try:
        from trl_grpo_ext.trainer.launch import default_threads

        threads = args.threads or (1 if task.builtin else default_threads())
        run_all(runs, task, output_dir, threads=threads)
    except RuntimeError as error:  # a run failed: its log's tail says why; finished runs stay finished
        print(f"trl-grpo-ext compare: {error}\nRun the same command again to resume.", file=sys.stderr)
        return 1
    if process_rank()[0] == 0:
        print(replot(output_dir, args.x_axis), end="")
        print(f"Results: {output_dir / 'results.md'}, results.json, plots and one JSONL per run in {output_dir}/")
    return 0
