"""What the example scripts share: their command line (`--help` opens with the script's docstring and the flags a
newcomer looks for first: `--config`, the script's own, the extension's; then TRL's full list), the CPU-sized
defaults of the embedded tiny model, and the tiny model itself. Used by grpo_math.py, grpo_code.py and
custom_verifier.py; they import it from this folder."""

from __future__ import annotations

import argparse
import dataclasses
import sys
import textwrap
import warnings

from accelerate import PartialState
from trl import GRPOConfig, TrlParser

from trl_grpo_ext import GRPOExtConfig, tiny_model_path
from trl_grpo_ext.usage import UsageError, check_dataset_path, check_model_path, report

# Fields of TRL's ScriptArguments and ModelConfig that a newcomer sets first.
HIGHLIGHTED = ("model_name_or_path", "dataset_name", "dataset_config", "dataset_train_split", "use_peft")


class HelpFormatter(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    """Keep the description's layout; add "(default: ...)" to every flag, as TRL's parser does."""


def describe_fields(fields: list[dataclasses.Field]) -> list[str]:
    lines = []
    for f in fields:
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
        text = f"--{f.name} (default: {default}): {f.metadata.get('help', '')}"
        lines += textwrap.wrap(text, width=116, initial_indent="  ", subsequent_indent="      ")
    return lines


def tiny_defaults(script: str, **sizes) -> dict:
    """A script's defaults for the embedded tiny model on a CPU, used only when no --model_name_or_path is given (a
    Hub model keeps GRPOConfig's own defaults); a flag or a YAML key overrides each of them. `sizes`: the script's
    steps, group and batch sizes and lengths."""
    return dict(
        output_dir=f"outputs/{script}",
        learning_rate=1e-3,
        logging_steps=5,
        save_strategy="no",
        report_to="none",
        **sizes,
    )


def script_parser(doc: str, script: str, dataclass_types: tuple, tiny_defaults: dict | None = None) -> TrlParser:
    """A TrlParser whose --help opens with `doc`, `--config`, the extension's flags and the script's own flags (those
    its first class declares, plus HIGHLIGHTED ones of TRL's classes), before every flag."""
    stock = {f.name for f in dataclasses.fields(GRPOConfig)}
    extension = [f for f in dataclasses.fields(GRPOExtConfig) if f.name not in stock]
    script_fields = []
    for i, dtype in enumerate(dataclass_types):
        if dtype is not GRPOExtConfig:
            own = vars(dtype).get("__annotations__", {}) if i == 0 else {}  # declared by the script itself
            script_fields += [f for f in dataclasses.fields(dtype) if f.name in own or f.name in HIGHLIGHTED]
    lines = [
        doc.strip(),
        "",
        "--config FILE: a YAML file whose keys are any of the flags below (see examples/configs/);",
    ]
    lines += ["    flags given on the command line override the file's values."]
    lines += [
        "--threads N: torch CPU threads per process (default: the CPUs divided by the processes on this machine)."
    ]
    lines += ["", "The extension's flags (GRPOExtConfig; at their defaults the trainer computes what stock TRL does):"]
    lines += describe_fields(extension)
    if script_fields:
        lines += ["", f"{script}'s own flags and the first ones to set:", *describe_fields(script_fields)]
    if tiny_defaults:
        settings = ", ".join(f"{k}={v}" for k, v in tiny_defaults.items())
        text = f"Without --model_name_or_path (the embedded tiny model) these defaults apply instead of TRL's: {settings}."
        lines += ["", *textwrap.wrap(text, 118)]
    names = ", ".join(t.__name__ for t in dataclass_types)
    text = f"Every flag follows, with TRL's help, class by class ({names}); the extension's come after GRPOConfig's."
    lines += ["", *textwrap.wrap(text, 118)]
    usage = f"python examples/{script} [--config FILE] [--FLAG VALUE ...]"
    parser = TrlParser(dataclass_types, usage=usage, description="\n".join(lines), formatter_class=HelpFormatter)
    return one_line_errors(parser)


def one_line_errors(parser: TrlParser) -> TrlParser:
    """argparse's errors (a value of the wrong type, a choice not offered) on one line, without the usage above."""

    def error(message: str):
        parser.exit(2, f"{parser.prog}: error: {message}; `--help` lists every flag.\n")

    parser.error = error
    return parser


def parse_script_args(doc: str, script: str, dataclass_types: tuple, tiny_defaults: dict) -> tuple:
    """Parse the command line (and `--config` file) into instances of `dataclass_types`, the last one a `ModelConfig`.

    Without `--model_name_or_path` the script trains the embedded tiny model on a CPU, so `tiny_defaults` replace
    TRL's defaults (which are sized for a Hub model on a GPU); any flag or YAML key still overrides them.
    """

    def parse(argv: list[str]) -> tuple:
        args = script_parser(doc, script, dataclass_types, tiny_defaults).parse_args_and_config(argv)
        if args[-1].model_name_or_path is None:
            parser = one_line_errors(TrlParser(dataclass_types))
            parser.set_defaults(**tiny_defaults)
            args = parser.parse_args_and_config(argv)
        return args

    return parse_checked(script, sys.argv[1:], dataclass_types, parse)


def parse_checked(script: str, argv: list[str], dataclass_types: tuple, parse) -> tuple:
    """`parse(argv)` after `--threads` and the names of the flags and `--config` keys are checked, then the paths and
    columns the values name (`check_inputs`): all before the script loads a model. A mistake exits with one line
    `script: error: ...` and status 2, no traceback."""
    try:
        argv = set_threads(argv)
        check_names(argv, dataclass_types)
        try:
            args = parse(argv)
        except ValueError as error:  # a value the config refuses (a choice, a contradiction): its own sentence
            raise UsageError(str(error)) from None
        check_inputs(args)
    except UsageError as error:
        raise SystemExit(report(script, error)) from None
    return args


def check_names(argv: list[str], dataclass_types: tuple) -> None:
    """UsageError naming an unknown flag or `--config` key and the closest valid one, before TRL's parser fails on it
    with a traceback."""
    import yaml

    from trl_grpo_ext.verifiers.core.plugins import suggest

    fields = {f.name for dtype in dataclass_types for f in dataclasses.fields(dtype)}
    # TRL's parser adds --no_NAME for a boolean field whose default is True.
    negations = {f"no_{f.name}" for dtype in dataclass_types for f in dataclasses.fields(dtype) if f.default is True}
    names = [(arg[2:].split("=")[0].replace("-", "_"), "flag --") for arg in argv if arg.startswith("--")]
    if "--config" in argv[:-1]:
        path = argv[argv.index("--config") + 1]
        try:
            with open(path) as file:
                keys = yaml.safe_load(file) or {}
        except (OSError, yaml.YAMLError) as error:
            raise UsageError(f"--config {path}: {error}; give a readable YAML file.") from None
        names += [(key, f"key in {path}: ") for key in keys]
    for name, where in names:
        if name not in fields and name not in ("config", "help") and name not in negations:
            hint = suggest(name, sorted(fields))
            raise UsageError(f"unknown {where}{name}.{hint} `--help` lists every flag.")


def check_inputs(args: tuple) -> None:
    """The model and dataset the parsed arguments name: a path that does not exist, a model folder without
    config.json, a local dataset without the split or a column a `*_column` flag names. UsageError naming the flag."""
    from trl_grpo_ext.data.datasets import check_columns, load_split

    for values in args:
        check_model_path("--model_name_or_path", getattr(values, "model_name_or_path", None))
        name = getattr(values, "dataset_name", None)
        if not check_dataset_path("--dataset_name", name):
            continue  # none, or a Hub name: the script loads it
        dataset = load_split(
            name, values.dataset_config, values.dataset_train_split, "--dataset_name", "--dataset_train_split"
        )
        columns = {
            f"--{f.name}": getattr(values, f.name)
            for f in dataclasses.fields(values)
            if f.name.endswith("_column") and getattr(values, f.name) is not None
        }
        check_columns(name, dataset, columns)


def set_threads(argv: list[str]) -> list[str]:
    """Set torch's CPU threads from `--threads N` (default: `default_threads()`); the other arguments, for TRL's
    parser, which does not know the flag."""
    import torch

    from trl_grpo_ext import default_threads

    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--threads", type=int, default=None)
    known, rest = pre.parse_known_args(argv)
    if known.threads is not None and known.threads < 1:
        raise UsageError(f"--threads {known.threads}: must be >= 1.")
    torch.set_num_threads(known.threads or default_threads())
    return rest


def tiny_model() -> str:
    """The embedded tiny model's folder, built on first use."""
    # One process builds and saves the tiny model, the others then load it: under an initialised process group
    # `save_pretrained` writes the weights from the main process only.
    with PartialState().main_process_first():
        return tiny_model_path()


def quiet_libraries() -> None:
    """Silence library chatter that says nothing about a run (the examples' progress bars and summaries do)."""
    import transformers

    transformers.logging.set_verbosity_error()
    warnings.filterwarnings("ignore", module=r"(trl|transformers|accelerate|torch)(\.|$)")
