"""The built-in datasets: arithmetic answers computed independently, the format warm-up teaches no arithmetic, and
every MBPP-style task is solvable (a reference solution written here passes its tests in the `code` verifier)."""

from __future__ import annotations

import operator

import pytest
import torch
from example_scripts import import_example

from trl_grpo_ext.data.datasets import (
    arithmetic_dataset,
    arithmetic_format_warmup,
    arithmetic_problems,
    code_dataset,
    code_tasks,
)


def test_arithmetic_problems_are_every_single_digit_sum_and_difference():
    problems = arithmetic_problems()
    expected = {f"{a}+{b}=": a + b for a in range(10) for b in range(10) if a + b < 10}
    expected |= {f"{a}-{b}=": a - b for a in range(10) for b in range(10) if a >= b}
    assert len(problems) == len(expected) == 110
    assert {p["prompt"]: int(p["answer"]) for p in problems} == expected
    ops = {"+": operator.add, "-": operator.sub}
    for p in problems:  # recomputed from the prompt text itself
        a, op, b = p["prompt"][0], p["prompt"][1], p["prompt"][2]
        assert ops[op](int(a), int(b)) == int(p["answer"])


def test_arithmetic_rejects_an_unknown_operator_naming_the_choices():
    with pytest.raises(ValueError, match=r"\['\*'\].*Valid choices: \+, -"):
        arithmetic_problems(operators=("+", "*"))


def test_arithmetic_dataset_is_shuffled_reproducibly_and_conversational_on_request():
    a, b = arithmetic_dataset(repeats=2, seed=1), arithmetic_dataset(repeats=2, seed=1)
    assert len(a) == 220 and a["prompt"] == b["prompt"]
    assert a["prompt"] != arithmetic_dataset(repeats=2, seed=2)["prompt"]
    chat = arithmetic_dataset(repeats=1, conversational=True)
    assert chat[0]["prompt"][0]["role"] == "user" and chat[0]["prompt"][0]["content"].endswith("=")
    with pytest.raises(ValueError, match="repeats=0"):
        arithmetic_dataset(repeats=0)


def test_format_warmup_teaches_the_digit_format_but_no_arithmetic():
    from trl_grpo_ext.models.tiny_model import build_tiny_model

    torch.manual_seed(0)
    model, tokenizer = build_tiny_model(seed=0)
    arithmetic_format_warmup(model, tokenizer, steps=30, seed=0)
    problems = arithmetic_problems()
    batch = tokenizer([p["prompt"] for p in problems], return_tensors="pt", add_special_tokens=False)
    with torch.no_grad():
        probs = model(**batch).logits[:, -1].softmax(-1)
    digit_ids = tokenizer.convert_tokens_to_ids(list("0123456789"))
    digit_mass = probs[:, digit_ids].sum(-1)
    assert digit_mass.min() > 0.9, "the answer format (one digit) is learned"
    correct_ids = torch.tensor(tokenizer.convert_tokens_to_ids([p["answer"] for p in problems]))
    p_correct = probs[torch.arange(len(problems)), correct_ids]
    # Chance is 1/10; random targets leave nothing to learn about the sums (allow sampling noise of 30 steps).
    assert 0.05 < p_correct.mean() < 0.15


SOLUTIONS = {
    "add": "def add(a, b):\n    return a + b",
    "is_even": "def is_even(n):\n    return n % 2 == 0",
    "reverse_string": "def reverse_string(s):\n    return s[::-1]",
    "max_of_list": "def max_of_list(xs):\n    return max(xs)",
    "count_vowels": "def count_vowels(s):\n    return sum(c in 'aeiou' for c in s)",
    "square_all": "def square_all(xs):\n    return [x * x for x in xs]",
    "factorial": "def factorial(n):\n    return 1 if n == 0 else n * factorial(n - 1)",
    "first_char": "def first_char(s):\n    return s[0]",
}


@pytest.mark.slow
def test_every_code_task_is_solved_by_its_reference_and_failed_by_a_wrong_answer():
    from code_verifier_helpers import make_code_verifier

    tasks = code_tasks()
    assert len(tasks) == len(SOLUTIONS)
    verifier = make_code_verifier(timeout_s=10)
    try:
        for task in tasks:
            name = next(n for n in SOLUTIONS if f" {n}(" in task["prompt"])
            good = verifier.verify(f"```python\n{SOLUTIONS[name]}\n```", task["tests"])
            assert good.score == 1.0, (name, good.reason)
            wrong = SOLUTIONS[name].split("return")[0] + "return None"
            assert verifier.verify(wrong, task["tests"]).score == 0.0, name
    finally:
        verifier.close()


def test_code_dataset_rows_carry_prompt_and_tests():
    dataset = code_dataset(repeats=3, seed=0)
    assert len(dataset) == 3 * len(code_tasks())
    assert set(dataset.column_names) == {"prompt", "tests"}
    assert all(row["tests"].startswith("assert ") for row in dataset)


def write_local_dataset(directory, rows) -> str:
    """A dataset folder that `datasets.load_dataset(folder)` reads like a Hub dataset (no network)."""
    import json

    (directory / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(directory)


def test_hub_dataset_gets_a_conversational_prompt_and_the_reference_unchanged(tmp_path):
    from trl_grpo_ext.data.datasets import hub_prompt_dataset

    rows = [{"question": "What is 6*7?", "answer": "6*7 = 42\n#### 42", "extra": 1}]
    dataset = hub_prompt_dataset(
        write_local_dataset(tmp_path, rows), None, "train", "question", {"answer": "answer"}, system_prompt="Be brief."
    )
    assert sorted(dataset.column_names) == ["answer", "prompt"]
    assert dataset[0]["prompt"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "What is 6*7?"},
    ]
    assert dataset[0]["answer"] == "6*7 = 42\n#### 42"


def test_hub_dataset_missing_column_names_it_and_the_available_ones(tmp_path):
    from trl_grpo_ext.data.datasets import hub_prompt_dataset

    path = write_local_dataset(tmp_path, [{"problem": "1+1", "solution": "\\boxed{2}"}])
    with pytest.raises(ValueError, match=r"no column\(s\) \['question'\].*\['problem', 'solution'\]"):
        hub_prompt_dataset(path, None, "train", "question", {"answer": "solution"})


def import_code_example():
    return import_example("grpo_code")


def test_code_example_builds_humaneval_references_from_test_and_entry_point(tmp_path):
    grpo_code = import_code_example()
    rows = [
        {
            "prompt": "def inc(x):\n",
            "test": "def check(candidate):\n    assert candidate(1) == 2\n",
            "entry_point": "inc",
        }
    ]
    script_args = grpo_code.CodeScriptArguments(
        dataset_name=write_local_dataset(tmp_path, rows),
        prompt_column="prompt",
        tests_column="test",
        entry_point_column="entry_point",
        system_prompt=None,
    )
    dataset = grpo_code.load_train_dataset(script_args, seed=0)
    assert dataset[0]["tests"] == {"test": rows[0]["test"], "entry_point": "inc"}
    assert dataset[0]["prompt"] == [{"role": "user", "content": "def inc(x):\n"}]


def test_code_example_builds_cpp_rows_with_their_limits_and_checker(tmp_path):
    grpo_code = import_code_example()
    cases = [{"input": "1 2\n", "output": "3\n"}]
    rows = [
        {"statement": "A+B", "official_tests": cases, "time_limit": 2.0, "memory_limit": 256.0, "checker": None},
    ]
    script_args = grpo_code.CodeScriptArguments(
        dataset_name=write_local_dataset(tmp_path, rows),
        prompt_column="statement",
        tests_column="official_tests",
        language="cpp",
        time_limit_column="time_limit",
        memory_limit_column="memory_limit",
        checker_column="checker",
    )
    dataset = grpo_code.load_train_dataset(script_args, seed=0)
    assert dataset[0]["tests"] == {"tests": cases, "time_limit": 2.0, "memory_limit": 256.0, "checker": None}
    assert "```cpp" in dataset[0]["prompt"][0]["content"]


def test_code_example_passes_the_checkers_headers_to_the_verifier(tmp_path, monkeypatch):
    from trl import ModelConfig, TrlParser

    from trl_grpo_ext import GRPOExtConfig

    grpo_code = import_code_example()
    headers = [tmp_path / "testlib.h", tmp_path / "extra.h"]
    parser = TrlParser((grpo_code.CodeScriptArguments, GRPOExtConfig, ModelConfig))
    argv = ["--checker_headers", *map(str, headers), "--output_dir", str(tmp_path)]
    script_args, config, model_args = parser.parse_args_and_config(argv)
    assert script_args.checker_headers == list(map(str, headers))
    made = {}

    def reward_function(name, **options):
        made.update(options)
        raise SystemExit  # the options are all this test needs

    monkeypatch.setattr(grpo_code, "as_reward_function", reward_function)
    with pytest.raises(SystemExit):
        grpo_code.main(script_args, config, model_args)
    assert made["checker_headers"] == list(map(str, headers))
