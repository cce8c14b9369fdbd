"""trl_grpo_ext.launch.end_training: the end of a multi-process training script. The launches themselves (two
processes under `accelerate launch`, exit codes and hangs) are the slow tests of tests/examples/test_examples.py."""

from __future__ import annotations

import gc
import weakref

import torch
from accelerate import Accelerator

from trl_grpo_ext.launch import end_training


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
