"""`trl-grpo-ext list`: every registered plug-in with a one-line description."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--kind", choices=["advantage", "kl", "verifier"], help="List only this kind of plug-in (default: all kinds)."
    )


def run(args: argparse.Namespace) -> int:
    from trl_grpo_ext.advantages import list_advantage_estimators
    from trl_grpo_ext.kl import list_kl_estimators
    from trl_grpo_ext.verifiers import list_verifiers

    sections = {
        "advantage": ("Advantage estimators (--advantage_estimator)", list_advantage_estimators()),
        "kl": ("KL estimators (--kl_estimator)", list_kl_estimators()),
        "verifier": ("Verifiers (reward functions)", list_verifiers()),
    }
    for kind, (title, entries) in sections.items():
        if args.kind and kind != args.kind:
            continue
        print(title)
        width = max(map(len, entries), default=0)
        for name, description in entries.items():
            print(f"  {name:<{width}}  {description}")
        print()
    return 0
