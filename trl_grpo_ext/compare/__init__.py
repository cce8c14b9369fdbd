"""`trl-grpo-ext compare`: stock `GRPOTrainer` against `GRPOExtTrainer` variants on the same model, data and seeds.

- `plan.py`: the task (built-in, or a `--config` YAML file), variants, the list of runs, and their validation;
- `run.py` and `worker.py`: running: each run in a fresh process (so its peak memory and random state are its own),
  resumable, under one progress bar; the worker writes every logged step to `<output_dir>/<variant>-seed<s>.jsonl`;
- `stats.py`, `report.py`, `plots.py`: reporting, from the files alone (`replot`): `results.md`, `results.json`,
  the PNG curves.
"""

from typing import TYPE_CHECKING

from trl_grpo_ext.verifiers.lazy import lazy_exports

if TYPE_CHECKING:
    from trl_grpo_ext.compare.plan import (
        STOCK,
        RunSpec,
        Task,
        load_task_file,
        parse_variant,
        plan_group_sweep,
        plan_runs,
        validate_plan,
    )
    from trl_grpo_ext.compare.report import replot, results, summarize
    from trl_grpo_ext.compare.run import run_all
    from trl_grpo_ext.compare.stats import mean_ci, paired_difference

__all__ = [
    "STOCK",
    "RunSpec",
    "Task",
    "load_task_file",
    "mean_ci",
    "paired_difference",
    "parse_variant",
    "plan_group_sweep",
    "plan_runs",
    "replot",
    "results",
    "run_all",
    "summarize",
    "validate_plan",
]
__getattr__, __dir__ = lazy_exports(__name__, __file__)
