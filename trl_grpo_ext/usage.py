"""A user's mistake, as the commands and the examples report it: `UsageError`, printed as one line
`<prog>: error: <what is wrong>; <what to do>` with exit status 2 and no traceback. Anything else is a bug and keeps its
traceback.

Also the checks of a model or dataset path that every command runs on its whole input before it loads a model or
starts a run. There is no network here: a name that could be a Hub id (`name` or `owner/name`, as
`huggingface_hub.utils.validate_repo_id` accepts it) is left for the loader; any other string must be an existing
path (`./models/x`, `/abs/x`, `~/x`).
"""

from __future__ import annotations

import sys
from pathlib import Path


class UsageError(ValueError):
    """A mistake in the user's input (a flag, a config key or value, a path): one sentence that says what is wrong
    and what to do. A ValueError, so that callers catching ValueError keep working."""


def one_line(error: BaseException) -> str:
    """The error's message on one line (whitespace runs, newlines included, become one space)."""
    return " ".join(str(error).split())


def report(prog: str, error: BaseException) -> int:
    """Print `prog: error: message` on one line to stderr; return the exit status of a usage error, 2."""
    print(f"{prog}: error: {one_line(error)}", file=sys.stderr)
    return 2


def not_a_hub_id(value: str) -> str | None:
    """Why `value` cannot be a Hub repository id (huggingface_hub's own rule: `name` or `owner/name`, at most 96
    characters, no `--` or `..`, ...), so that it can only be a local path; None for a possible Hub id."""
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    try:
        validate_repo_id(value)
    except HFValidationError as exc:
        return one_line(exc)
    return None


def check_model_path(field: str, value: str | None) -> None:
    """UsageError unless `value` is None, a model folder (with config.json), or a string that could be a Hub id."""
    if value is None:
        return
    path = Path(value).expanduser()
    if str(value).lower().endswith(".gguf"):
        raise UsageError(
            f"{field}={value!r} is a GGUF file, which does not train as loaded; convert it once with "
            f"`trl-grpo-ext prepare-model --gguf {value} --output_dir DIR` and give DIR instead."
        )
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise UsageError(
                f"{field}={value!r} is a folder without config.json; give a model folder written by save_pretrained "
                "(a checkpoint) or a Hub id such as Qwen/Qwen2.5-0.5B-Instruct."
            )
        return
    if path.exists():
        raise UsageError(f"{field}={value!r} is a file; give a model folder (with config.json) or a Hub id.")
    if (why := not_a_hub_id(str(value))) is not None:
        raise UsageError(
            f"{field}={value!r} does not exist; give an existing model folder (with config.json) or a Hub id such "
            f"as Qwen/Qwen2.5-0.5B-Instruct (not a Hub id: {why})"
        )


def check_dataset_path(field: str, value: str | None) -> bool:
    """UsageError for a `value` that looks like a path and does not exist, or is a file. Returns whether it is a
    local dataset (a folder), whose split and columns can then be checked; False for None or a possible Hub id."""
    if value is None:
        return False
    path = Path(value).expanduser()
    if path.is_file():
        raise UsageError(
            f"{field}={value!r} is a file; move it into a folder of its own and give the folder (a folder of data "
            "files, read with load_dataset), or a folder written by save_to_disk."
        )
    if path.exists():
        return True
    if (why := not_a_hub_id(str(value))) is not None:
        raise UsageError(
            f"{field}={value!r} does not exist; give a folder written by save_to_disk, a folder of data files, or a "
            f"Hub dataset name such as openai/gsm8k (not a Hub id: {why})"
        )
    return False
