"""examples/grpo_tool.py: its task, warm-up and reward pieces, and (slow) that a brief run of both runs prints its
table."""

from __future__ import annotations

import random
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from trl_grpo_ext.tiny_model import build_tiny_model, enable_tool_calls
from trl_grpo_ext.tools import PythonToolConfig, make_python_tool
from trl_grpo_ext.verifiers import as_reward_function

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "examples"))
try:
    import grpo_tool
finally:
    sys.path.remove(str(REPO / "examples"))


@pytest.fixture(scope="module")
def tool():
    return make_python_tool(PythonToolConfig(timeout_s=20.0))


def test_held_out_questions_are_fixed_distinct_and_never_trained_on():
    held_out = grpo_tool.held_out_rows()
    assert held_out == grpo_tool.held_out_rows()
    pairs = [tuple(r["pair"]) for r in held_out]
    assert len(set(pairs)) == len(pairs) == grpo_tool.HELD_OUT_COUNT
    train = grpo_tool.train_dataset(steps=50, prompts_per_step=16, seed=0)
    assert len(train) == 800
    assert not {tuple(p) for p in train["pair"]} & set(pairs)
    for row in held_out + list(train):
        a, b = row["pair"]
        assert 317 <= a <= 999 and 317 <= b <= 999 and len(row["answer"]) == 6
        assert row["prompt"] == [{"role": "user", "content": f"{a}*{b}"}]
        assert row["answer"] == str(a * b)


def test_warmup_conversation_is_what_the_tool_loop_produces(tool):
    """The warm-up's call parses back into a python call, its tool answer is the real tool's output for that code,
    and only the model's own segments are learned; no product question is asked."""
    _, tokenizer = build_tiny_model()
    enable_tool_calls(tokenizer)
    rng = random.Random(3)
    operators = set()
    for _ in range(12):
        (prompt, p_learned), (call, c_learned), (result, r_learned), (answer, a_learned) = grpo_tool.warmup_example(
            tokenizer, rng, [tool]
        )
        assert (p_learned, c_learned, r_learned, a_learned) == (False, True, False, True)
        asked = re.search(r"user\n(\d{3})([-+*])(\d{3})<", prompt)
        assert asked and asked[2] in "+-"
        message = tokenizer.parse_response(call, prefix="")
        code = message["tool_calls"][0]["function"]["arguments"]["code"]
        assert message["tool_calls"][0]["function"]["name"] == "python"
        assert code[:3] == asked[1] and code[4:] == asked[3]  # the question's numbers
        operators.add(code[3])
        output = tool(code)
        assert result == grpo_tool.tool_result_text(tokenizer, output)
        assert output in result and answer == f"\\boxed{{{output}}}<|im_end|>"
    assert operators == {"+", "-", "*"}  # drawn at random, whatever the question asked


def test_plain_warmup_has_no_call():
    _, tokenizer = build_tiny_model()
    segments = grpo_tool.warmup_example(tokenizer, random.Random(0), None)
    assert [learned for _, learned in segments] == [False, True]
    assert "Tools" not in segments[0][0] and "tool_call" not in segments[1][0]


@pytest.mark.parametrize("with_tool", [True, False])
def test_format_warmup_lowers_the_loss(tool, with_tool):
    model, tokenizer = build_tiny_model(seed=1)
    tools = [tool] if with_tool else None
    if with_tool:
        enable_tool_calls(tokenizer)
    torch.manual_seed(1)
    first = grpo_tool.format_warmup(model, tokenizer, tools, steps=1, seed=1, batch_size=8)
    last = grpo_tool.format_warmup(model, tokenizer, tools, steps=30, seed=2, batch_size=8)
    assert last < first / 2


def test_reward_scores_the_boxed_answer_after_the_tool_and_records_held_out_scores():
    reward = grpo_tool.ProductReward(as_reward_function("math", reference_column="answer"))
    call = {"type": "function", "function": {"name": "python", "arguments": {"code": "123*456"}}}

    def completion(final: str) -> list[dict]:
        return [
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "name": "python", "content": "56088"},
            {"role": "assistant", "content": final},
        ]

    completions = [completion("\\boxed{56088}"), completion("\\boxed{56089}"), completion("")]
    # The verifier alone accepts an expression (it multiplies); the example's reward wants the number written out.
    expressions = ["\\boxed{123*456}", "123 \\times 456", "\\boxed{56088+0}"]
    try:
        assert reward.reward(None, expressions[:1], answer=["56088"]) == [1.0]
        assert reward(None, completions, answer=["56088"] * 3) == [1.0, 0.0, 0.0]  # the tool's text is not the answer
        assert reward(None, [completion(e) for e in expressions], answer=["56088"] * 3) == [0.0, 0.0, 0.0]
        assert reward(None, ["56088", " \\boxed{56088}\n"], answer=["56088"] * 2) == [1.0, 1.0]
        assert reward.scores == {}
        reward.recording = True
        reward(None, completions[:2], answer=["56088", "56088"])
        assert reward.scores == {"56088": [1.0, 0.0]}
    finally:
        reward.reward.verifier.close()


def test_table_has_a_row_per_run_and_seed_and_the_mean_over_seeds():
    def row(run, seed, before, after):
        return {
            "run": run, "seed": seed, "held_out_before": {"mean": before, "ci95": [0.0, 0.5]},
            "held_out_after": {"mean": after, "ci95": None}, "reward_first": 0.1, "reward_last": 0.9,
            "calls_per_completion": 1.0, "steps": 5, "seconds": 12.0,
        }  # fmt: skip

    rows = [row("tool", 0, 0.25, 0.75), row("no tools", 0, 0.0, 0.0), row("tool", 1, 0.35, 0.95)]
    text = grpo_tool.table(rows, eval_samples=4)
    assert "| tool | 0 | 0.25 [0.00, 0.50] | 0.75 [0.75, 0.75] | 0.10 -> 0.90 | 1.00 | 5 | 12 |" in text
    assert "| tool | mean of 2 (min-max) | 0.30 (0.25-0.35) | 0.85 (0.75-0.95) |" in text
    assert "no tools | mean" not in text  # one seed: no mean row


@pytest.mark.slow
def test_a_brief_run_trains_both_runs_and_prints_the_table(tmp_path):
    command = [
        sys.executable, str(REPO / "examples" / "grpo_tool.py"), "--output_dir", str(tmp_path), "--max_steps", "2",
        "--warmup_steps", "3", "--prompts_per_step", "2", "--num_generations", "4", "--eval_samples", "1",
    ]  # fmt: skip
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-5000:]
    rows = re.findall(r"^\| (tool|no tools) \| 0 \| ([\d.]+) \[.*\| (\d+) \| \d+ \|$", result.stdout, re.MULTILINE)
    assert [(run, steps) for run, _, steps in rows] == [("tool", "2"), ("no tools", "2")]
    assert all(0.0 <= float(before) <= 1.0 for _, before, _ in rows)
    assert (tmp_path / "table.md").read_text().strip() in result.stdout
