"""`trl-grpo-ext list`: every registered plug-in, the prompt sampling modes and advantage clipping, one line each."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--kind",
        choices=["advantage", "kl", "verifier", "sampling"],
        help="List only this kind of plug-in (default: all kinds).",
    )


def run(args: argparse.Namespace) -> int:
    from trl_grpo_ext.advantages import clip_advantages, list_advantage_estimators
    from trl_grpo_ext.kl import list_kl_estimators
    from trl_grpo_ext.prompt_stream import PROMPT_SAMPLINGS
    from trl_grpo_ext.registry import first_doc_line
    from trl_grpo_ext.verifiers import list_verifiers

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
