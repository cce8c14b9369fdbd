"""The held-out rows and the verifiers of a task (the `--config` YAML of `compare` and `evaluate`, or the built-in
arithmetic task), as the evaluation core takes them."""

from __future__ import annotations

import dataclasses
from typing import Any

from trl_grpo_ext.data.task import Task, as_prompt_dataset, import_verifier_modules, load_raw_dataset
from trl_grpo_ext.usage import UsageError

from .core import EvalVerifier


def held_out_split(task: Task) -> str | None:
    """The task's held-out split: `eval_split`, else the built-in task's fixed "held_out" part, else None."""
    if task.eval_split is not None:
        return task.eval_split
    return "held_out" if task.dataset_name is None else None


def load_eval_rows(
    task: Task, split: str, max_prompts: int | None = None, offset: int = 0, subset_seed: int | None = None
) -> tuple[Any, list[dict]]:
    """(the split's rows as stored, the same rows as {"prompt": ..., <reference column>: ...}). With `max_prompts`:
    that many rows only, from row `offset` on, or, with `subset_seed`, drawn at random with that seed (kept in the
    split's order). The prompts are built as training builds them (system prompt, chat)."""
    import random

    from datasets import Dataset

    from trl_grpo_ext.data.datasets import arithmetic_split

    if max_prompts is not None and max_prompts < 1:
        raise UsageError(f"--max_prompts {max_prompts}: must be >= 1.")
    if offset < 0:
        raise UsageError(f"--prompt_offset {offset}: must be >= 0.")
    if max_prompts is None and (offset or subset_seed is not None):
        raise UsageError("--prompt_offset and --prompt_subset_seed choose among rows: give --max_prompts N with them.")
    if offset and subset_seed is not None:
        raise UsageError("--prompt_offset and --prompt_subset_seed: give one of them, not both.")
    builtin = task.dataset_name is None and task.eval_dataset is None
    if builtin:
        raw = Dataset.from_list(arithmetic_split(split))
    else:
        source = dataclasses.replace(task, dataset_name=task.eval_dataset or task.dataset_name)
        field = "eval_dataset" if task.eval_dataset else "dataset_name"
        raw = load_raw_dataset(source, split, field, split_field="the split (eval_split or --split)")
    if subset_seed is not None:
        raw = raw.select(sorted(random.Random(subset_seed).sample(range(len(raw)), min(max_prompts, len(raw)))))
    elif max_prompts is not None:
        raw = raw.select(range(min(offset, len(raw)), min(offset + max_prompts, len(raw))))
    if len(raw) == 0:
        raise UsageError(f"split {split!r} of the task's dataset has no rows to evaluate.")
    return raw, (raw if builtin else as_prompt_dataset(raw, task)).to_list()


def build_verifiers(task: Task) -> list[EvalVerifier]:
    """One `EvalVerifier` per name in `reward_verifiers` (after `verifier_imports`), reading `reference_column`."""
    from trl_grpo_ext.verifiers import get_verifier

    import_verifier_modules(task)
    return [EvalVerifier(name, get_verifier(name), task.reference_column) for name in task.reward_verifiers]
