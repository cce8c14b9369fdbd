"""What `GRPOExtTrainer` does for the Python tool after each generation: log its metrics, end its sessions."""

from __future__ import annotations

import torch

from .metrics import ToolCounts
from .python_tool import IS_PYTHON_TOOL, PythonSession


def uses_python_tool(tools) -> bool:
    """Whether the trainer's tools include this package's Python tool (the stateless function or a session's method).
    The same on every process, so the metrics' gather below is called by all of them or by none."""
    return any(_is_python_tool(tool) for tool in tools or ())


def _is_python_tool(tool) -> bool:
    return isinstance(getattr(tool, "__self__", None), PythonSession) or getattr(tool, IS_PYTHON_TOOL, False)


def log_tool_step(trainer, counts: ToolCounts, completions: int) -> None:
    """Append this generation's tool metrics, summed over the processes, to the trainer's metrics."""
    device = trainer.accelerator.device
    local = torch.tensor([counts.calls, counts.machinery_errors, counts.seconds, completions], dtype=torch.float64)
    total = trainer.accelerator.gather(local.to(device)).reshape(-1, 4).sum(dim=0).tolist()
    calls, errors, seconds, completions = total
    mode = "train" if trainer.model.training else "eval"
    summed = ToolCounts(int(calls), int(errors), seconds)
    for name, value in summed.step_metrics(int(completions)).items():
        trainer._metrics[mode][name].append(value)


def end_sessions(trainer) -> None:
    """End the interpreter of every PythonSession: generation is over, so are the rollouts that used them."""
    for instances in (getattr(trainer, "_environment_pool", None) or {}).values():
        for instance in instances:
            if isinstance(instance, PythonSession):
                instance._end_session()
