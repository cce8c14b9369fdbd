"""Command-line conventions of `compare` and `memory`: TRL's underscore flags, help that states each default, and
`memory`'s dashed spellings of earlier versions still accepted (hidden from --help)."""

from __future__ import annotations

import argparse

import pytest

from trl_grpo_ext.cli import build_parser


def subcommand(name: str) -> argparse.ArgumentParser:
    subparsers = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return subparsers.choices[name]


@pytest.mark.parametrize("command", ["compare", "memory"])
def test_every_visible_flag_uses_underscores_and_states_its_default(command):
    for action in subcommand(command)._actions:
        if action.help == argparse.SUPPRESS or "-h" in action.option_strings:
            continue
        (flag,) = action.option_strings
        assert "-" not in flag[2:], flag
        assert "default" in action.help.lower(), f"{flag}: {action.help}"


def test_memory_accepts_the_dashed_spellings_of_earlier_versions():
    parser = build_parser()
    underscored = parser.parse_args(
        "memory --preset qwen2.5-7b --zero_stage 3 --num_gpus 8 --lora_rank 16 --no_gradient_checkpointing".split()
    )
    dashed = parser.parse_args(
        "memory --preset qwen2.5-7b --zero-stage 3 --num-gpus 8 --lora-rank 16 --no-gradient-checkpointing".split()
    )
    assert vars(underscored) == vars(dashed)
    assert (dashed.zero_stage, dashed.num_gpus, dashed.lora_rank, dashed.gradient_checkpointing) == (3, 8, 16, False)
    defaults = parser.parse_args("memory --preset qwen2.5-7b".split())
    assert (defaults.zero_stage, defaults.group_size, defaults.gradient_checkpointing) == (0, 8, True)
    assert "--zero-stage" not in subcommand("memory").format_help()


def test_every_help_page_formats():
    assert "compare" in build_parser().format_help()
    for command in ("list", "memory", "compare"):
        assert subcommand(command).format_help().startswith(f"usage: trl-grpo-ext {command}")


def test_an_unknown_example_config_key_exits_with_one_line_in_a_subprocess(tmp_path):
    """The real exit path; every other mistake is fed in-process in test_bad_input.py."""
    import subprocess
    import sys
    from pathlib import Path

    (tmp_path / "run.yaml").write_text("advantage_estimater: rloo\n")
    script = Path(__file__).resolve().parents[2] / "examples" / "grpo_math.py"
    completed = subprocess.run(
        [sys.executable, str(script), "--config", str(tmp_path / "run.yaml"), "--output_dir", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.returncode == 2
    assert ": advantage_estimater. Did you mean 'advantage_estimator'?" in completed.stderr
    assert "Traceback" not in completed.stderr and len(completed.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()
