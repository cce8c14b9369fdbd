"""How a script under `accelerate launch` shares the CPU between its processes, and how it ends, so that every
process exits cleanly.

Measured on two-process CPU launches (docs/examples.md): a process that exits with its gloo group alive can abort at
exit, and destroying the group while the DDP-wrapped model still holds it can hang. Releasing the trainer first, then
the accelerator's references, then the group avoids both.
"""

from __future__ import annotations

import os


def default_threads() -> int:
    """torch CPU threads for this process: the CPUs this process may run on, divided among the processes that
    `accelerate launch` or torchrun started on this machine (LOCAL_WORLD_SIZE), at least 1. More threads than cores
    oversubscribe them: on a loaded 2-core machine, 2 threads per process generated 10x slower than 1."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(1, cpus // max(1, int(os.environ.get("LOCAL_WORLD_SIZE", "1"))))


def end_training(trainer) -> None:
    """Release `trainer` (a `transformers.Trainer`, stock or extension) and end its accelerate run.

    The trainer is unusable afterwards: every reference it holds is dropped here, so the caller's own reference to it
    no longer keeps the DDP-wrapped model alive.
    """
    accelerator = trainer.accelerator
    vars(trainer).clear()  # the DDP-wrapped model goes before its process group: destroying the group first can hang
    accelerator.free_memory()  # drops the accelerator's references and collects the trainer's cycles
    accelerator.end_training()  # destroys the process group: a gloo group alive at exit can abort the process
