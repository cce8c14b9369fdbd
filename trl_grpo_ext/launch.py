"""How a training script under `accelerate launch` ends, so that every process exits cleanly.

Measured on two-process CPU launches (docs/examples.md): a process that exits with its gloo group alive can abort at
exit, and destroying the group while the DDP-wrapped model still holds it can hang. Releasing the trainer first, then
the accelerator's references, then the group avoids both.
"""

from __future__ import annotations


def end_training(trainer) -> None:
    """Release `trainer` (a `transformers.Trainer`, stock or extension) and end its accelerate run.

    The trainer is unusable afterwards: every reference it holds is dropped here, so the caller's own reference to it
    no longer keeps the DDP-wrapped model alive.
    """
    accelerator = trainer.accelerator
    vars(trainer).clear()  # the DDP-wrapped model goes before its process group: destroying the group first can hang
    accelerator.free_memory()  # drops the accelerator's references and collects the trainer's cycles
    accelerator.end_training()  # destroys the process group: a gloo group alive at exit can abort the process
