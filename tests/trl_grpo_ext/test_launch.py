"""trl_grpo_ext.trainer.launch.end_training: the end of a multi-process training script. The launches themselves (two
processes under `accelerate launch`, exit codes and hangs) are the slow tests of tests/examples/test_examples.py."""

from __future__ import annotations

import gc
import platform
import weakref

import pytest
import torch
from accelerate import Accelerator

from trl_grpo_ext.trainer.launch import end_training, use_portable_cpu_kernels


class FinishedTrainer:
    """What end_training reads of a transformers Trainer: an accelerator that prepared the model."""

    def __init__(self):
        self.accelerator = Accelerator(cpu=True)
        self.model = self.accelerator.prepare(torch.nn.Linear(2, 2))
        self.callbacks = [self]  # a cycle, as a Trainer's callback handler makes


def test_end_training_frees_the_model_while_the_caller_still_holds_the_trainer():
    trainer = FinishedTrainer()
    model = weakref.ref(trainer.model)
    accelerator = trainer.accelerator
    end_training(trainer)
    gc.collect()
    assert model() is None, "the model outlived end_training: the process group would be destroyed under it"
    assert vars(trainer) == {} and accelerator._models == []


def _kernels_in_a_fresh_process(env_extra: dict[str, str]) -> list[str]:
    import os
    import subprocess
    import sys

    code = (
        "from trl_grpo_ext.trainer.launch import use_portable_cpu_kernels\n"
        "chosen = use_portable_cpu_kernels()\n"
        "import torch\n"
        "print(chosen.get('ATEN_CPU_CAPABILITY'), chosen.get('MKL_CBWR'), torch.backends.cpu.get_cpu_capability())\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("ATEN_CPU_CAPABILITY", "DNNL_MAX_CPU_ISA", "MKL_CBWR")}
    done = subprocess.run(
        [sys.executable, "-c", code], env={**env, **env_extra}, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"), reason="the pins are for x86-64")
def test_portable_kernels_select_avx2_before_torch_loads_and_leave_a_users_choice_alone():
    assert _kernels_in_a_fresh_process({}) == ["avx2", "AVX2", "AVX2"]
    assert _kernels_in_a_fresh_process({"ATEN_CPU_CAPABILITY": "default"}) == ["default", "AVX2", "DEFAULT"]
    with pytest.warns(RuntimeWarning, match="after torch was imported"):
        assert use_portable_cpu_kernels() == {}  # this process imported torch above
