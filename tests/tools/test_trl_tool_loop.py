"""End to end: the tiny model calls the Python tool through TRL 1.16's own tool loop during a GRPO training step."""

from __future__ import annotations

import json

import pytest
import torch
from datasets import Dataset
from trainer_helpers import make_config

from trl_grpo_ext import GRPOExtConfig, GRPOExtTrainer
from trl_grpo_ext.models.tiny_model import build_tiny_model, enable_tool_calls
from trl_grpo_ext.tools import TOOL_STATS, PythonSession, PythonToolConfig, make_python_tool

QUESTION = "What is 123*456?"
CALL = {"name": "python", "arguments": {"code": "print(123*456)"}}


def tool_call_warmup(model, tokenizer, tools, steps: int = 100) -> float:
    """Supervised steps on one completion that calls the tool: teaches the call syntax (and this one call) only."""
    prompt = tokenizer.apply_chat_template(
        [{"role": "user", "content": QUESTION}], tools=tools, tokenize=False, add_generation_prompt=True
    )
    completion = f"<tool_call>\n{json.dumps(CALL)}\n</tool_call><|im_end|>"
    batch = tokenizer([prompt + completion], return_tensors="pt", add_special_tokens=False)
    labels = batch.input_ids.clone()
    labels[:, : len(tokenizer(prompt, add_special_tokens=False).input_ids)] = -100
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    torch.manual_seed(0)
    model.train()
    for _ in range(steps):
        loss = model(**batch, labels=labels).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    return loss.item()


def answer_reward(completions, **kwargs):
    """1 when a tool result in the completion holds the product (the tool really ran the code)."""
    return [float(any(m["role"] == "tool" and "56088" in str(m["content"]) for m in c)) for c in completions]


@pytest.mark.parametrize("kind", ["stateless", "session"])
def test_one_training_step_with_real_tool_calls(tmp_path, kind):
    config = PythonToolConfig(timeout_s=20.0)
    tools = [make_python_tool(config)] if kind == "stateless" else []
    model, tokenizer = build_tiny_model()
    enable_tool_calls(tokenizer)
    schema_source = tools or [PythonSession(config).python]
    assert tool_call_warmup(model, tokenizer, schema_source) < 0.05
    args = make_config(
        GRPOExtConfig, tmp_path / "out", max_steps=1, per_device_train_batch_size=4, num_generations=4,
        max_completion_length=160, temperature=0.3, max_tool_calling_iterations=2,
    )  # fmt: skip
    extra = {"tools": tools} if tools else {"environment_factory": lambda: PythonSession(config)}
    trainer = GRPOExtTrainer(
        model=model, processing_class=tokenizer, reward_funcs=[answer_reward], args=args,
        train_dataset=Dataset.from_dict({"prompt": [[{"role": "user", "content": QUESTION}]] * 4}), **extra,
    )  # fmt: skip
    before = TOOL_STATS.snapshot()
    trainer.train()
    calls = (TOOL_STATS.snapshot() - before).calls
    assert calls >= 1
    log = next(entry for entry in trainer.state.log_history if "tools/python/calls_per_completion" in entry)
    assert log["tools/python/calls_per_completion"] == pytest.approx(calls / 4)
    assert log["tools/python/errors"] == 0.0
    assert log["tools/python/time_s"] > 0
    assert log["tools/call_frequency"] == pytest.approx(calls / 4)  # TRL's own count of the same calls
    assert log["rewards/answer_reward/mean"] > 0  # the tool's output, 56088, came back into the completion
    if kind == "session":  # generation over: every session's interpreter is ended
        for instances in trainer._environment_pool.values():
            assert all(s._interpreter.sandbox is None for s in instances)
