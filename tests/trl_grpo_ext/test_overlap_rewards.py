"""`overlap_rewards`: verifier rewards start right after generation and run during the log-prob forwards, with the
same rewards, advantages and trained weights as without; no verification outlives its generation batch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import torch
from datasets import Dataset
from trainer_helpers import PROMPTS, digit_reward, losses, make_config, parameters, train

from trl_grpo_ext import GRPOExtConfig, GRPOExtTrainer
from trl_grpo_ext.verifiers import as_reward_function, register_verifier

EVENTS: list[str] = []  # what the test verifiers and forwards did, in order
FORWARD_STARTED = threading.Event()


@register_verifier("digit_share_for_overlap_tests")
def digit_share(completion, reference):
    """Share of digit characters, 1 when the completion holds the reference (test helper)."""
    if reference in completion:
        return 1.0
    return sum(ch.isdigit() for ch in completion) / max(len(completion), 1)


@register_verifier("waits_for_forward_for_overlap_tests")
def waits_for_forward(completion, reference):
    """Waits (up to 30 s) until a log-prob forward has started, then scores like digit_share (test helper)."""
    EVENTS.append(f"verify on {threading.current_thread().name}, forward started: {FORWARD_STARTED.wait(30)}")
    return digit_share(completion, reference)


@register_verifier("always_fails_for_overlap_tests")
def always_fails(completion, reference):
    """Raises on every item (test helper)."""
    raise RuntimeError("verifier broke")


def answer_dataset(n: int = 16) -> Dataset:
    return Dataset.from_dict(
        {"prompt": PROMPTS[:n], "answer": [str(sum(map(int, p[8:-1].split(" + ")))) for p in PROMPTS[:n]]}
    )


def verifier_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "verifier-reward"]


def run(model_dir, output_dir, reward_funcs, dataset=None, **overrides):
    settings = {"beta": 0.04, **overrides}
    return train(
        GRPOExtTrainer,
        make_config(GRPOExtConfig, output_dir, **settings),
        model_dir,
        reward_funcs=reward_funcs,
        dataset=dataset or answer_dataset(),
    )


def reward_functions(math_workers: int = 1):
    return [
        as_reward_function("math", timeout_s=5.0, n_workers=math_workers),
        as_reward_function("digit_share_for_overlap_tests"),
        digit_reward,  # a plain function: stock calls it as always
    ]


@pytest.mark.parametrize("overrides", [{}, {"num_iterations": 2, "gradient_accumulation_steps": 3}])
def test_overlap_is_bitwise_the_serial_computation(tiny_model_dir, tmp_path, overrides):
    trainers = {}
    for overlap in (False, True):
        funcs = reward_functions()
        try:
            trainers[overlap] = run(
                tiny_model_dir, tmp_path / str(overlap), funcs, overlap_rewards=overlap, **overrides
            )
        finally:
            for f in funcs[:2]:
                f.verifier.close()
    serial, overlapped = trainers[False], trainers[True]
    assert losses(overlapped) == losses(serial)
    assert list(overlapped._logs["advantages"]) == list(serial._logs["advantages"])
    for name in ("math_reward", "digit_share_for_overlap_tests_reward", "digit_reward"):
        assert list(overlapped._logs["rewards"][name]) == list(serial._logs["rewards"][name]), name
    for column in ("math_reason", "math_extracted", "digit_share_for_overlap_tests_reason"):
        assert list(overlapped._logs["extra"][column]) == list(serial._logs["extra"][column]), column
    assert any(a != 0 for a in serial._logs["advantages"]), "no signal to train on"
    history = [
        {k: v for k, v in e.items() if "time" not in k and "per_second" not in k} for e in serial.state.log_history
    ]
    history_overlap = [
        {k: v for k, v in e.items() if "time" not in k and "per_second" not in k} for e in overlapped.state.log_history
    ]
    assert history_overlap == history  # rewards per function, reason shares, kl: every logged number
    for name, value in parameters(serial).items():
        assert torch.equal(parameters(overlapped)[name], value), name
    assert not verifier_threads()


def test_verification_runs_while_the_forwards_do(tiny_model_dir, tmp_path, monkeypatch):
    """The verifier blocks until a log-prob forward starts: it can finish only if it runs during the forward."""
    EVENTS.clear()
    FORWARD_STARTED.clear()
    forward = GRPOExtTrainer._get_per_token_logps_and_entropies

    def recording_forward(self, *args, **kwargs):
        FORWARD_STARTED.set()
        EVENTS.append(f"forward on {threading.current_thread().name}")
        return forward(self, *args, **kwargs)

    monkeypatch.setattr(GRPOExtTrainer, "_get_per_token_logps_and_entropies", recording_forward)
    reward = as_reward_function("waits_for_forward_for_overlap_tests")
    run(tiny_model_dir, tmp_path, [reward], max_steps=1)
    verifications = [e for e in EVENTS if e.startswith("verify")]
    assert verifications and all(e == "verify on verifier-reward, forward started: True" for e in verifications)
    assert EVENTS[0] == "forward on MainThread" and all(
        e == "forward on MainThread" for e in EVENTS if e.startswith("forward")
    )


def test_a_plain_reward_function_runs_on_the_main_thread_at_stock_s_point(tiny_model_dir, tmp_path):
    threads = []

    def plain_reward(completions, **kwargs):
        threads.append(threading.current_thread().name)
        return digit_reward(completions)

    run(tiny_model_dir, tmp_path, [plain_reward, as_reward_function("digit_share_for_overlap_tests")], max_steps=1)
    assert threads and set(threads) == {"MainThread"}


@pytest.mark.parametrize("overlap", [False, True])
def test_a_failing_verifier_stops_training_after_max_failed_batches_either_way(tiny_model_dir, tmp_path, overlap):
    reward = as_reward_function("always_fails_for_overlap_tests", max_failed_batches=2)
    trainer = GRPOExtTrainer(
        model=tiny_model_dir,
        reward_funcs=[reward, digit_reward],
        args=make_config(GRPOExtConfig, tmp_path, beta=0.04, overlap_rewards=overlap),
        train_dataset=answer_dataset(),
    )
    with pytest.raises(RuntimeError, match=r"(?s)failed on every item of 2 batches in a row.*verifier broke"):
        trainer.train()
    assert trainer.state.global_step == 1  # the first batch trained with None rewards, the second raised
    assert not verifier_threads()


def test_an_error_between_generation_and_rewards_joins_the_verification(tiny_model_dir, tmp_path, monkeypatch):
    calls = []

    def failing_forward(self, *args, **kwargs):
        raise MemoryError("out of memory in the reference forward")

    def counted(completion, reference):
        calls.append(completion)
        return 0.0

    register_verifier("counted_for_overlap_tests", override=True)(counted)
    trainer = GRPOExtTrainer(
        model=tiny_model_dir,
        reward_funcs=[as_reward_function("counted_for_overlap_tests")],
        args=make_config(GRPOExtConfig, tmp_path, beta=0.04),
        train_dataset=answer_dataset(),
    )
    monkeypatch.setattr(GRPOExtTrainer, "_get_per_token_logps_and_entropies", failing_forward)
    with pytest.raises(MemoryError):
        trainer.train()
    assert calls, "the verification had started"
    assert not verifier_threads() and trainer._reward_overlap is None


def test_evaluation_overlaps_too_and_leaves_nothing_running(tiny_model_dir, tmp_path):
    funcs = reward_functions()
    try:
        trainer = GRPOExtTrainer(
            model=tiny_model_dir,
            reward_funcs=funcs,
            args=make_config(GRPOExtConfig, tmp_path, beta=0.04, eval_strategy="steps", eval_steps=2, max_steps=2),
            train_dataset=answer_dataset(),
            eval_dataset=answer_dataset(8),
        )
        trainer.train()
    finally:
        for f in funcs[:2]:
            f.verifier.close()
    assert any("eval_rewards/math_reward/mean" in e for e in trainer.state.log_history)
    assert not verifier_threads() and trainer._reward_overlap is None


TWO_PROCESS_SCRIPT = """
import json, sys, torch
from trainer_helpers import make_config
from datasets import Dataset
from trl_grpo_ext import GRPOExtConfig, GRPOExtTrainer
from trl_grpo_ext.trainer.launch import end_training
from trl_grpo_ext.verifiers import as_reward_function, register_verifier


@register_verifier("digit_share")
def digit_share(completion, reference):
    return sum(ch.isdigit() for ch in completion) / max(len(completion), 1)


output, model_dir, overlap = sys.argv[1], sys.argv[2], sys.argv[3] == "on"
torch.set_num_threads(1)
rewards = [as_reward_function("math", n_workers=1), as_reward_function("digit_share")]
prompts = [f"What is {a} + {b}?" for a in range(4) for b in range(4)]
config = make_config(GRPOExtConfig, output + "/trainer", beta=0.04, overlap_rewards=overlap, max_steps=2)
dataset = Dataset.from_dict({"prompt": prompts, "answer": [str(i % 7) for i in range(16)]})
trainer = GRPOExtTrainer(model_dir, rewards, args=config, train_dataset=dataset)
trainer.train()
rewards[0].verifier.close()
model = trainer.accelerator.unwrap_model(trainer.model)
record = {
    "losses": [e["loss"] for e in trainer.state.log_history if "loss" in e],
    "rewards": trainer._gathered_rewards_per_func.tolist(),
    "parameters": {n: p.detach().flatten().tolist() for n, p in model.named_parameters()},
}
with open(f"{output}/rank{trainer.accelerator.process_index}.json", "w") as f:
    json.dump(record, f)
del model
end_training(trainer)
"""


@pytest.mark.slow
def test_two_processes_overlap_gives_the_serial_training(tiny_model_dir, tmp_path):
    """Two processes (gloo): every gather stays on the main thread in stock's order, so both ranks train as without
    the overlap, bit for bit."""
    script = tmp_path / "train_two.py"
    script.write_text(TWO_PROCESS_SCRIPT)
    support = Path(__file__).parents[1] / "support"
    env = {
        **os.environ,
        "PYTHONPATH": f"{support}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
        "OMP_NUM_THREADS": "1",
    }
    records = {}
    for setting in ("off", "on"):
        output = tmp_path / setting
        output.mkdir()
        command = [
            sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2",
            "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no", "--main_process_port", "29519",
            str(script), str(output), tiny_model_dir, setting,
        ]  # fmt: skip
        result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
        assert result.returncode == 0, result.stderr[-4000:]
        records[setting] = [json.loads((output / f"rank{rank}.json").read_text()) for rank in (0, 1)]
    assert records["on"] == records["off"]
    assert records["on"][0]["parameters"] == records["on"][1]["parameters"]
    assert len(records["on"][0]["losses"]) == 2
