"""Small built-in datasets for the examples, the demo and `compare`: they need no network.

- `arithmetic_problems()` / `arithmetic_dataset()`: single-digit arithmetic whose answers are single digits
  (`"3+4="` -> `"7"`, `"9-5="` -> `"4"`), checked by the `math` verifier against the `answer` column; a fixed
  held-out part (`ARITHMETIC_SPLITS`) that the demo and `compare` never train on.
- `code_tasks()` / `code_dataset()`: a few MBPP-style tasks written for this project, checked by the `code` verifier
  against the `tests` column (assert statements).

Both return `datasets.Dataset` objects with a `prompt` column in the format TRL's GRPOTrainer reads.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from ..usage import UsageError, check_dataset_path
from ..verifiers.core.plugins import suggest

ARITHMETIC_OPERATORS = ("+", "-")
# The built-in task's splits: "held_out" is a fixed fifth of the 110 problems (drawn once with HELD_OUT_SEED), "train"
# the other four fifths, "all" every problem.
ARITHMETIC_SPLITS = ("all", "train", "held_out")
HELD_OUT_SHARE = 0.2
HELD_OUT_SEED = 22


def arithmetic_problems(operators: tuple[str, ...] = ARITHMETIC_OPERATORS) -> list[dict[str, str]]:
    """Every `a op b` with digits a, b whose result is also a single digit: 55 sums (a + b <= 9) and 55 differences
    (a >= b). Returns [{"prompt": "3+4=", "answer": "7"}, ...] in a fixed order."""
    unknown = [op for op in operators if op not in ARITHMETIC_OPERATORS]
    if unknown:
        raise ValueError(f"operators={unknown!r} are not supported. Valid choices: {', '.join(ARITHMETIC_OPERATORS)}.")
    problems = []
    for op in operators:
        for a in range(10):
            for b in range(10):
                result = a + b if op == "+" else a - b
                if 0 <= result <= 9:
                    problems.append({"prompt": f"{a}{op}{b}=", "answer": str(result)})
    return problems


def arithmetic_split(split: str = "all") -> list[dict[str, str]]:
    """The problems of one split (`ARITHMETIC_SPLITS`), in the fixed order of `arithmetic_problems()`: "held_out" is
    the same 22 problems on every machine and in every run (sums and differences), "train" the other 88."""
    if split not in ARITHMETIC_SPLITS:
        raise UsageError(
            f"split={split!r} is not a split of the built-in task. Valid choices: {', '.join(ARITHMETIC_SPLITS)}."
        )
    problems = arithmetic_problems()
    if split == "all":
        return problems
    held_out = set(random.Random(HELD_OUT_SEED).sample(range(len(problems)), round(HELD_OUT_SHARE * len(problems))))
    return [p for i, p in enumerate(problems) if (i in held_out) == (split == "held_out")]


def arithmetic_dataset(repeats: int = 100, seed: int = 0, conversational: bool = False, split: str = "all"):
    """The problems of `split` (`arithmetic_split`) repeated `repeats` times and shuffled with `seed` (one row per
    prompt; GRPO samples `num_generations` completions of each). Conversational: the prompt is a one-message chat."""
    from datasets import Dataset

    if repeats < 1:
        raise ValueError(f"repeats={repeats} must be >= 1.")
    rows = arithmetic_split(split) * repeats
    if conversational:
        rows = [{"prompt": [{"role": "user", "content": r["prompt"]}], "answer": r["answer"]} for r in rows]
    return Dataset.from_list(rows).shuffle(seed=seed)


def arithmetic_format_warmup(model, tokenizer, steps: int = 30, seed: int = 0, batch_size: int = 32) -> float:
    """Supervised steps on `prompt + random digit` (AdamW, lr 3e-3): teaches the one-digit answer format only.
    Returns the last loss.

    The target digit is drawn afresh for every example, so the best the model can learn is the uniform distribution
    over digits: no arithmetic leaks into the policy, which starts near chance (1 in 10).
    """
    import torch

    problems = arithmetic_problems()
    rng = random.Random(seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    prompt_len = len(problems[0]["prompt"])  # every prompt is "a?b=": 4 characters, 4 tokens
    model.train()
    loss = torch.tensor(float("nan"))
    for _ in range(steps):
        texts = [p["prompt"] + str(rng.randint(0, 9)) for p in rng.sample(problems, batch_size)]
        batch = tokenizer(texts, return_tensors="pt", add_special_tokens=False)
        labels = batch.input_ids.clone()
        labels[:, :prompt_len] = -100  # learn the answer token only
        loss = model(**batch, labels=labels).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    return loss.item()


# MBPP-style tasks (written here): a statement, the function name, and assert tests run by the `code` verifier.
CODE_TASKS: list[dict[str, Any]] = [
    {
        "task": "Write a function add(a, b) that returns the sum of two integers.",
        "tests": ["assert add(1, 2) == 3", "assert add(-4, 4) == 0", "assert add(10, 5) == 15"],
    },
    {
        "task": "Write a function is_even(n) that returns True when the integer n is even.",
        "tests": ["assert is_even(4) is True", "assert is_even(7) is False", "assert is_even(0) is True"],
    },
    {
        "task": "Write a function reverse_string(s) that returns the string s reversed.",
        "tests": ["assert reverse_string('abc') == 'cba'", "assert reverse_string('') == ''"],
    },
    {
        "task": "Write a function max_of_list(xs) that returns the largest element of a non-empty list.",
        "tests": ["assert max_of_list([1, 5, 3]) == 5", "assert max_of_list([-2, -7]) == -2"],
    },
    {
        "task": "Write a function count_vowels(s) that returns how many of the characters of s are vowels (aeiou).",
        "tests": ["assert count_vowels('hello') == 2", "assert count_vowels('xyz') == 0"],
    },
    {
        "task": "Write a function square_all(xs) that returns a list of the squares of the numbers in xs.",
        "tests": ["assert square_all([1, 2, 3]) == [1, 4, 9]", "assert square_all([]) == []"],
    },
    {
        "task": "Write a function factorial(n) that returns n! for a non-negative integer n.",
        "tests": ["assert factorial(0) == 1", "assert factorial(5) == 120"],
    },
    {
        "task": "Write a function first_char(s) that returns the first character of a non-empty string s.",
        "tests": ["assert first_char('grpo') == 'g'", "assert first_char('a') == 'a'"],
    },
]


def code_tasks() -> list[dict[str, str]]:
    """The MBPP-style tasks as rows {"prompt": ..., "tests": "<assert lines>"}."""
    return [{"prompt": task["task"] + "\n", "tests": "\n".join(task["tests"])} for task in CODE_TASKS]


def code_dataset(repeats: int = 50, seed: int = 0, conversational: bool = False):
    """The code tasks repeated `repeats` times and shuffled with `seed`."""
    from datasets import Dataset

    if repeats < 1:
        raise ValueError(f"repeats={repeats} must be >= 1.")
    rows = code_tasks() * repeats
    if conversational:
        rows = [{"prompt": [{"role": "user", "content": r["prompt"]}], "tests": r["tests"]} for r in rows]
    return Dataset.from_list(rows).shuffle(seed=seed)


def hub_prompt_dataset(
    name: str,
    config: str | None,
    split: str,
    prompt_column: str,
    reference_columns: dict[str, str | tuple[str, ...]],
    system_prompt: str | None = None,
):
    """A Hub (or local) dataset reshaped for GRPO: a conversational `prompt` built from `prompt_column`, plus the
    verifier's reference columns. `reference_columns` maps a target column to a source column (copied as is) or
    to a tuple of source columns (gathered into a dict, e.g. HumanEval's `("test", "entry_point")`).

    References are passed through unchanged: the `math` verifier reads GSM8K's `#### 72` and MATH's `\\boxed{}`
    solutions itself, and the `code` verifier reads MBPP's `test_list` and HumanEval's `{test, entry_point}`.
    """
    dataset = load_split(name, config, split)
    columns = {"prompt_column": prompt_column}
    for target, source in reference_columns.items():
        for column in source if isinstance(source, tuple) else [source]:
            columns[f"the {target!r} reference column"] = column
    check_columns(name, dataset, columns)

    def reshape(row: dict) -> dict:
        messages = [{"role": "system", "content": system_prompt}] if system_prompt else []
        messages.append({"role": "user", "content": row[prompt_column]})
        references = {
            target: {c: row[c] for c in source} if isinstance(source, tuple) else row[source]
            for target, source in reference_columns.items()
        }
        return {"prompt": messages, **references}

    return dataset.map(reshape, remove_columns=dataset.column_names)


SAVED_MARKERS = ("dataset_info.json", "state.json", "dataset_dict.json")


def load_split(name: str, config: str | None, split: str, field: str = "dataset_name", split_field: str = "split"):
    """Split `split` of a dataset: a folder written by `save_to_disk` (read with `load_from_disk`; one saved Dataset
    has no splits), a folder of data files or a Hub name (`load_dataset`). UsageError, naming `field` or
    `split_field`, for a path that does not exist or a split the dataset lacks."""
    from datasets import DatasetDict, load_dataset, load_from_disk

    check_dataset_path(field, name)
    path = Path(name).expanduser()
    if path.is_dir() and any((path / marker).exists() for marker in SAVED_MARKERS):
        dataset = load_from_disk(str(path))
        if isinstance(dataset, DatasetDict):
            if split not in dataset:
                raise missing_split(field, name, split_field, split, list(dataset))
            dataset = dataset[split]
        return dataset
    from datasets.utils import are_progress_bars_disabled, disable_progress_bars, enable_progress_bars

    quiet = are_progress_bars_disabled()
    disable_progress_bars()  # "Generating train split" on the first load of data files says nothing
    try:
        return load_dataset(name, config, split=split)
    except ValueError as error:
        if not str(error).startswith("Unknown split"):
            raise
        splits = str(error).partition("Should be one of ")[2].strip(" .[]").replace("'", "").split(", ")
        raise missing_split(field, name, split_field, split, splits) from None
    finally:
        if not quiet:
            enable_progress_bars()


def missing_split(field: str, name: str, split_field: str, split: str, splits: list[str]) -> UsageError:
    return UsageError(
        f"{field}={name!r} has no split {split!r}; its splits are {', '.join(splits)}.{suggest(split, splits)} "
        f"Set {split_field} to one of them."
    )


def check_columns(name: str, dataset, columns: dict[str, str]) -> None:
    """UsageError naming the dataset's missing columns, the settings (`columns`: setting -> column) that name them,
    a close match, and the columns it has."""
    missing = {setting: column for setting, column in columns.items() if column not in dataset.column_names}
    if not missing:
        return
    hints = "".join(suggest(column, dataset.column_names) for column in missing.values())
    settings = ", ".join(f"{setting} ({column!r})" for setting, column in missing.items())
    raise UsageError(
        f"dataset {name!r} has no column(s) {list(missing.values())}; its columns are {dataset.column_names}.{hints} "
        f"Set {settings} to one of them."
    )
