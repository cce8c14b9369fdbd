"""examples/grpo_tool.py: its task, warm-up and reward pieces, and (slow) that a brief run of both runs prints its
table."""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

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
    and only the model's own segments are learned; no product question is asked. Its tokens, segment by segment, are
    the ones TRL's tool loop concatenates (prompt, completion, the tool message's suffix cut after the last end of
    turn), and the template's fixed strings are whole tokens."""
    _, tokenizer = grpo_tool.build_model(0, with_tool=True)

    def encode(text: str) -> list[int]:
        return tokenizer(text, add_special_tokens=False).input_ids

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
        assert encode(prompt) == tokenizer.apply_chat_template(
            [{"role": "user", "content": asked[0][5:-1]}], tools=[tool], add_generation_prompt=True, return_dict=False
        )
        assert encode(result) == tool_suffix_ids(tokenizer, output)
        assert len(encode(call)) == 14 == 5 + len(code) + 2  # call boilerplate 5 tokens, end 2, a token per character
        assert len(encode(prompt + call + result + answer)) < 60  # ~170 with a token per character
    assert operators == {"+", "-", "*"}  # drawn at random, whatever the question asked


def tool_suffix_ids(tokenizer, output: str) -> list[int]:
    """What TRL's tool loop appends after a call, written out here as token ids: the ids of a conversation with the
    tool message and the next assistant header, after those of the same conversation without it cut after its last
    end-of-turn token."""
    call = {"type": "function", "function": {"name": "python", "arguments": {}}}
    head = [{"role": "user", "content": "dummy"}, {"role": "assistant", "content": "", "tool_calls": [call]}]
    prefix = tokenizer.apply_chat_template(head, return_dict=False)
    prefix = prefix[: len(prefix) - prefix[::-1].index(tokenizer.eos_token_id)]
    tool = {"role": "tool", "name": "python", "content": output}
    full = tokenizer.apply_chat_template(head + [tool], add_generation_prompt=True, return_dict=False)
    assert full[: len(prefix)] == prefix
    return full[len(prefix) :]


def test_plain_warmup_has_no_call():
    _, tokenizer = grpo_tool.build_model(0, with_tool=False)
    segments = grpo_tool.warmup_example(tokenizer, random.Random(0), None)
    assert [learned for _, learned in segments] == [False, True]
    assert "Tools" not in segments[0][0] and "tool_call" not in segments[1][0]


@pytest.mark.parametrize("with_tool", [True, False])
def test_format_warmup_lowers_the_loss(tool, with_tool):
    model, tokenizer = grpo_tool.build_model(1, with_tool)
    tools = [tool] if with_tool else None
    torch.manual_seed(1)
    first = grpo_tool.format_warmup(model, tokenizer, tools, steps=1, seed=1, batch_size=8)
    last = grpo_tool.format_warmup(model, tokenizer, tools, steps=30, seed=2, batch_size=8)
    assert last < first / 2


class ScriptedModel(torch.nn.Module):
    """Logits that put all the mass on the true next token (from the tool message on, when `blind_after_tool`: the
    same logit for every token there)."""

    def __init__(self, vocab_size: int, tool_header: int, blind_after_tool: bool):
        super().__init__()
        self.vocab_size, self.tool_header, self.blind_after_tool = vocab_size, tool_header, blind_after_tool

    def forward(self, input_ids):
        ids = input_ids[0].tolist()
        logits = torch.zeros(1, len(ids), self.vocab_size)
        blind_from = ids.index(self.tool_header) if self.blind_after_tool else len(ids)
        for i, next_id in enumerate(ids[1:blind_from]):
            logits[0, i, next_id] = 1000.0
        return type("Output", (), {"logits": logits})


@pytest.mark.parametrize("blind_after_tool", [False, True])
def test_copy_rates_are_the_probabilities_of_the_digits_of_multiplying_calls(tool, blind_after_tool):
    _, tokenizer = grpo_tool.build_model(0, with_tool=True)
    header = tokenizer.convert_tokens_to_ids("<|im_start|>tool\n")
    model = ScriptedModel(len(tokenizer), header, blind_after_tool)
    rates = grpo_tool.copy_rates(model, tokenizer, [tool], count=8)
    assert rates["call"] == pytest.approx(1.0)
    # Blind: every token equally likely at each of the box's 6 digits (the tool answer of a product of two 3-digit
    # numbers from 317 has 6 digits).
    assert rates["box"] == pytest.approx(len(tokenizer) ** -6 if blind_after_tool else 1.0, rel=1e-4)


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
    # The example's reward wants the number written out; the verifier alone refuses an expression too (its
    # closed-form rule: an operation left to perform scores 0) unless told `closed_form=False`.
    expressions = ["\\boxed{123*456}", "123 \\times 456", "\\boxed{56088+0}"]
    try:
        assert reward.reward(None, expressions[:1], answer=["56088"]) == [0.0]
        assert reward(None, completions, answer=["56088"] * 3) == [1.0, 0.0, 0.0]  # the tool's text is not the answer
        assert reward(None, [completion(e) for e in expressions], answer=["56088"] * 3) == [0.0, 0.0, 0.0]
        assert reward(None, ["56088", " \\boxed{56088}\n"], answer=["56088"] * 2) == [1.0, 1.0]
        assert reward.scores == {}
        reward.recording = True
        reward(None, completions[:2], answer=["56088", "56088"])
        assert reward.scores == {"56088": [1.0, 0.0]}
    finally:
        reward.reward.verifier.close()


def test_table_has_a_row_per_run_and_seed_and_the_means_over_seeds():
    def row(run, seed, before, after):
        return {
            "run": run, "seed": seed, "held_out_before": {"mean": before, "ci95": [0.0, 0.5]},
            "held_out_after": {"mean": after, "ci95": None}, "reward_first": 0.1, "reward_last": 0.9,
            "calls_per_completion": 1.0, "steps": 5, "seconds": 12.0,
            "warmup_copies": {"call": 0.987, "box": 0.5} if run == "tool" else None,
        }  # fmt: skip

    one_seed = grpo_tool.table([row("tool", 0, 0.25, 0.75), row("no tools", 0, 0.0, 0.0)], eval_samples=4)
    assert (
        "| tool | 0 | 0.99 / 0.50 | 0.25 [0.00, 0.50] | 0.75 [0.75, 0.75] | 0.10 -> 0.90 | 1.00 | 5 | 12 |" in one_seed
    )
    assert "| no tools | 0 | - | 0.00 [0.00, 0.50] | 0.00 [0.00, 0.00] |" in one_seed
    assert "Over seeds" not in one_seed
    rows = [row("tool", 0, 0.25, 0.75), row("no tools", 0, 0.0, 0.0), row("tool", 1, 0.35, 0.95)]
    rows += [row("no tools", 1, 0.0, 0.1), row("tool", 2, 0.30, 0.95), row("no tools", 2, 0.0, 0.2)]
    text = grpo_tool.table(rows, eval_samples=4)
    # Student t over 3 seeds, t(0.975, 2) = 4.303: before 0.30 +- 4.303 * 0.05 / sqrt(3) = 0.30 +- 0.124; after
    # 0.8833 +- 4.303 * 0.11547 / sqrt(3) = 0.8833 +- 0.2869; gain (0.5, 0.6, 0.65) 0.5833 +- 4.303 * 0.07638 / sqrt(3)
    assert "| tool | 3 | 0.30 [0.18, 0.42] | 0.88 [0.60, 1.17] | +0.58 [+0.39, +0.77] |" in text
    assert "| no tools | 3 | 0.00 [0.00, 0.00] | 0.10 [-0.15, 0.35] | +0.10 [-0.15, +0.35] |" in text
    # Tool minus no tools after, per seed (0.75, 0.85, 0.75): 0.7833 +- 4.303 * 0.05774 / sqrt(3) = 0.7833 +- 0.1434
    assert "tool minus no tools (paired by seed): +0.78 [+0.64, +0.93]" in text


@pytest.mark.slow
def test_a_brief_run_trains_both_runs_on_two_seeds_and_prints_the_tables(tmp_path):
    command = [
        sys.executable, str(REPO / "examples" / "grpo_tool.py"), "--output_dir", str(tmp_path), "--max_steps", "2",
        "--warmup_steps", "3", "--prompts_per_step", "2", "--num_generations", "4", "--eval_samples", "1",
        "--seeds", "0", "1",
    ]  # fmt: skip
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-5000:]
    rows = re.findall(
        r"^\| (tool|no tools) \| (\d) \| [-\d./ ]+ \| ([\d.]+) \[.*\| (\d+) \| \d+ \|$", result.stdout, re.MULTILINE
    )
    assert [(run, seed, steps) for run, seed, _, steps in rows] == [
        ("tool", "0", "2"), ("no tools", "0", "2"), ("tool", "1", "2"), ("no tools", "1", "2")
    ]  # fmt: skip
    assert all(0.0 <= float(before) <= 1.0 for *_, before, _ in rows)
    logged = json.loads((tmp_path / "results.json").read_text())
    assert [(r["run"], r["seed"], len(r["log"])) for r in logged] == [
        ("tool", 0, 2), ("no tools", 0, 2), ("tool", 1, 2), ("no tools", 1, 2)
    ]  # fmt: skip
    before = [r["held_out_before"]["mean"] for r in logged if r["run"] == "tool"]
    assert f"| tool | 2 | {sum(before) / 2:.2f} " in result.stdout  # the mean over the seeds' rows
    assert "tool minus no tools (paired by seed)" in result.stdout
    assert (tmp_path / "table.md").read_text().strip() in result.stdout
