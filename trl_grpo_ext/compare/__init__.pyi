from .plan import (
    STOCK,
    RunSpec,
    Task,
    load_task_file,
    parse_variant,
    plan_group_sweep,
    plan_runs,
    validate_plan,
)
from .report import replot, results, summarize
from .run import run_all
from .stats import mean_ci, paired_difference
