"""`trl-grpo-ext list`: every registered plug-in, the prompt sampling modes and advantage clipping, one line each.

trl-grpo-ext list
trl-grpo-ext list --kind verifier --config task.yaml   # with the verifiers the task file's verifier_imports register
"""

from __future__ import annotations

import argparse

from trl_grpo_ext.commands.help_text import add_task_file, describe
from trl_grpo_ext.usage import UsageError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    describe(parser, __doc__)
    add_task_file(
        parser,
        "A task's YAML file: the modules its verifier_imports name are imported first, so their verifiers list too.",
    )
    parser.add_argument(
        "--kind",
        choices=["advantage", "kl", "verifier", "sampling"],
        help="List only this kind of plug-in (default: all kinds).",
    )


def import_task_verifiers(path: str) -> None:
    """Import the modules a task file's `verifier_imports` name; UsageError naming the module when one fails."""
    from trl_grpo_ext.compare import load_task_file
    from trl_grpo_ext.data.task import import_verifier_modules

    task, _ = load_task_file(path)
    try:
        import_verifier_modules(task)
    except Exception as error:  # the user's module
        raise UsageError(
            f"--config {path}: verifier_imports {task.verifier_imports}: importing failed with "
            f"{type(error).__name__}: {error}; fix the module or the name."
        ) from None


def run(args: argparse.Namespace) -> int:
    from trl_grpo_ext.trainer.advantages import clip_advantages, list_advantage_estimators
    from trl_grpo_ext.trainer.kl import list_kl_estimators
    from trl_grpo_ext.trainer.prompt_stream import PROMPT_SAMPLINGS
    from trl_grpo_ext.verifiers import list_verifiers
    from trl_grpo_ext.verifiers.core.plugins import first_doc_line

    if args.config:
        import_task_verifiers(args.config)
    sections = [
        ("advantage", "Advantage estimators (--advantage_estimator)", list_advantage_estimators()),
        ("advantage", "Applied after any advantage estimator", {"advantage_clip": first_doc_line(clip_advantages)}),
        ("kl", "KL estimators (--kl_estimator)", list_kl_estimators()),
        ("verifier", "Verifiers (reward functions)", list_verifiers()),
        ("sampling", "Prompt sampling (--prompt_sampling)", PROMPT_SAMPLINGS),
    ]
    for kind, title, entries in sections:
        if args.kind and kind != args.kind:
            continue
        print(title)
        width = max(map(len, entries), default=0)
        for name, description in entries.items():
            print(f"  {name:<{width}}  {description}")
        print()
    return 0
