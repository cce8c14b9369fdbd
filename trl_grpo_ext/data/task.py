"""The task a comparison trains on and an evaluation scores: `Task` (model, data, rewards, held-out settings), the
modules that register its custom verifiers, and its datasets as training and evaluation read them.

Below both `compare/` and `evaluation/`, which share it; imports neither (nor torch: `datasets` loads on first use).
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import importlib.util
import sys
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Task:
    """The model, data and rewards every run of a comparison shares. All None / defaults: the built-in task, the
    tiny model after its format warm-up on single-digit arithmetic, scored by the `math` verifier."""

    model_name_or_path: str | None = None
    dataset_name: str | None = None
    dataset_config: str | None = None
    dataset_train_split: str = "train"
    prompt_column: str = "prompt"
    reference_column: str = "answer"
    reward_verifiers: list[str] = field(default_factory=lambda: ["math"])
    system_prompt: str | None = None
    # Modules (dotted names, or .py files) imported before the rewards are built: they register custom verifiers.
    verifier_imports: list[str] = field(default_factory=list)
    # Held-out evaluation: a split of `eval_dataset` (default: the training dataset). The built-in task holds out a
    # fixed fifth of its problems ("held_out"); for a dataset, no eval_split means no held-out evaluation in compare.
    eval_dataset: str | None = None
    eval_split: str | None = None
    eval_num_samples: int = 8  # completions per held-out prompt, at the runs' own generation settings
    eval_k: list[int] = field(default_factory=lambda: [1])  # k of the reported pass@k (and maj@k for k > 1)
    eval_max_prompts: int | None = None  # the split's first N rows only
    eval_prompts_per_call: int = 1  # held-out prompts sampled in one generate call (`evaluate --prompts_per_call`)

    @property
    def builtin(self) -> bool:
        return self.model_name_or_path is None and self.dataset_name is None


TASK_KEYS = tuple(f.name for f in dataclasses.fields(Task))


def verifier_file_module_name(path: str | Path) -> str:
    """The private module name a `verifier_imports` .py file is loaded under: its stem and a digest of its resolved
    path, so that a file named like a standard or installed module (`math.py`) never replaces that module, and two
    files with the same stem are two modules."""
    resolved = Path(path).resolve()
    digest = hashlib.sha256(str(resolved).encode()).hexdigest()[:12]
    return f"_trl_grpo_ext_verifier_file_{resolved.stem}_{digest}"


def import_verifier_modules(task: Task) -> None:
    """Import the modules that register the task's custom verifiers (dotted names, or paths to .py files), each once
    per process however often it is asked (validation, then evaluation: a second run would register twice)."""
    for name in task.verifier_imports:
        if not name.endswith(".py"):
            importlib.import_module(name)
            continue
        module_name = verifier_file_module_name(name)
        if module_name in sys.modules:
            continue
        spec = importlib.util.spec_from_file_location(module_name, name)
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module  # as an import does: the file's own classes can find their module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[module_name]  # a failed file is not counted as imported
            raise


def load_task_dataset(task: Task, seed: int):
    """The built-in arithmetic set, or the task's dataset with a `prompt` column (a chat: the system prompt, then the
    question as the user's message) and its reference column. `dataset_name`: a folder written by `save_to_disk`,
    a folder of data files or a Hub name (`load_dataset`)."""
    from trl_grpo_ext.data.datasets import arithmetic_dataset

    if task.dataset_name is None:  # the built-in task never trains on its held-out problems
        return arithmetic_dataset(seed=seed, split="train")
    return as_prompt_dataset(load_raw_dataset(task, task.dataset_train_split), task)


def load_raw_dataset(task: Task, split: str, field: str = "dataset_name", split_field: str = "dataset_train_split"):
    """The task's dataset as stored, split `split` (a `save_to_disk` folder holding one dataset has no splits), with
    its prompt and reference columns checked; UsageError naming `field` or `split_field` when it has not them."""
    from trl_grpo_ext.data.datasets import check_columns, load_split

    dataset = load_split(task.dataset_name, task.dataset_config, split, field, split_field)
    columns = {"prompt_column": task.prompt_column, "reference_column": task.reference_column}
    check_columns(task.dataset_name, dataset, columns)
    return dataset


def as_prompt_dataset(dataset, task: Task):
    """Rows {"prompt": ..., <reference column>: ...}: a text prompt becomes a chat (system prompt, then the user's
    question); a prompt that is already a conversation is kept."""

    def reshape(row: dict) -> dict:
        prompt = row[task.prompt_column]
        if isinstance(prompt, str):
            system = [{"role": "system", "content": task.system_prompt}] if task.system_prompt else []
            prompt = [*system, {"role": "user", "content": prompt}]
        return {"prompt": prompt, task.reference_column: row[task.reference_column]}

    return dataset.map(reshape, remove_columns=dataset.column_names)
