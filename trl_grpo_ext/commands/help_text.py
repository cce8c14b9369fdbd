"""What the subcommands share on their command line."""

from __future__ import annotations

import argparse


def describe(parser: argparse.ArgumentParser, doc: str) -> None:
    """The command's module docstring, past its title line, as the `--help` epilog: the usage examples, kept as written."""
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = doc.split("\n", 2)[2]


def add_task_file(parser: argparse.ArgumentParser, help_text: str) -> None:
    """`--config FILE`, the task's YAML file (the format of `trl_grpo_ext.data.task.Task`)."""
    parser.add_argument("--config", metavar="FILE", help=help_text)
