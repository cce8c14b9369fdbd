"""How a script under `accelerate launch` shares the CPU between its processes, how it ends, so that every process
exits cleanly, and which CPU kernels make a seeded CPU run give the same numbers on other machines.

Measured on two-process CPU launches (docs/examples.md): a process that exits with its gloo group alive can abort at
exit, and destroying the group while the DDP-wrapped model still holds it can hang. Releasing the trainer first, then
the accelerator's references, then the group avoids both.
"""

from __future__ import annotations

import os
import platform
import sys
import warnings

# The kernels torch (ATen), oneDNN and MKL pick on an x86-64 CPU depend on its instruction sets (AVX2, AVX-512, AMX):
# they sum in different orders, and over hundreds of RL steps the last bits grow into different policies (the demo,
# seed 0: held-out pass@1 0.45, 0.57 or 0.65 on one machine, by which kernels it was told to use). Pinned to the AVX2
# kernels, present on x86-64 CPUs since 2013, and MKL in its conditional-numerical-reproducibility mode, processors
# run the same kernels; results still differ between processors (an AMD EPYC and an Intel Xeon gave different demo
# policies under this pin), so what a seed fixes is the result on one machine.
PORTABLE_CPU_KERNELS = {"ATEN_CPU_CAPABILITY": "avx2", "DNNL_MAX_CPU_ISA": "AVX2", "MKL_CBWR": "AVX2"}


def default_threads() -> int:
    """torch CPU threads for this process: the CPUs this process may run on, divided among the processes that
    `accelerate launch` or torchrun started on this machine (LOCAL_WORLD_SIZE), at least 1. More threads than cores
    oversubscribe them: on a loaded 2-core machine, 2 threads per process generated 10x slower than 1."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(1, cpus // max(1, int(os.environ.get("LOCAL_WORLD_SIZE", "1"))))


def use_portable_cpu_kernels() -> dict[str, str]:
    """Select PORTABLE_CPU_KERNELS for this process (a variable the user set keeps its value) and return what is now
    in effect; {} off x86-64. torch reads these when it is imported, so call this before: afterwards it only warns."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return {}
    if "torch" in sys.modules:
        warnings.warn(
            "use_portable_cpu_kernels() after torch was imported has no effect", RuntimeWarning, stacklevel=2
        )
        return {}
    for name, value in PORTABLE_CPU_KERNELS.items():
        os.environ.setdefault(name, value)
    return {name: os.environ[name] for name in PORTABLE_CPU_KERNELS}


def end_training(trainer) -> None:
    """Release `trainer` (a `transformers.Trainer`, stock or extension) and end its accelerate run.

    The trainer is unusable afterwards: every reference it holds is dropped here, so the caller's own reference to it
    no longer keeps the DDP-wrapped model alive.
    """
    accelerator = trainer.accelerator
    vars(trainer).clear()  # the DDP-wrapped model goes before its process group: destroying the group first can hang
    accelerator.free_memory()  # drops the accelerator's references and collects the trainer's cycles
    accelerator.end_training()  # destroys the process group: a gloo group alive at exit can abort the process
