"""`trl-grpo-ext evaluate`: files and table on the built-in task, a --config task with its split, the pass-rate
prefilter writing exactly the rows in range, bad input, and (slow) two processes writing the file of one."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from trl_grpo_ext.cli import main

# A verifier whose verdict depends on the reference alone: rows answered "yes" pass every sample, others none.
REFERENCE_VERIFIER = '''
from trl_grpo_ext.verifiers import VerificationResult, register_verifier


@register_verifier("reference_says_yes", override=True)
def reference_says_yes(completion, reference):
    """Full marks when the reference is "yes", whatever the completion."""
    return VerificationResult(float(reference == "yes"), "scored", extracted=completion.strip() or None)
'''


def read_jsonl(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line]


def write_task(tmp_path, model_dir):
    from datasets import Dataset, DatasetDict

    answers = ["yes", "no", "yes", "no", "no", "yes", "no"]
    rows = [{"question": f"{i}+0=", "answer": a, "source": f"row{i}"} for i, a in enumerate(answers)]
    DatasetDict({"train": Dataset.from_list(rows[:2]), "test": Dataset.from_list(rows)}).save_to_disk(
        tmp_path / "data"
    )
    (tmp_path / "my_verifiers.py").write_text(REFERENCE_VERIFIER)
    (tmp_path / "task.yaml").write_text(
        f"model_name_or_path: {model_dir}\ndataset_name: {tmp_path / 'data'}\nprompt_column: question\n"
        f"reference_column: answer\nreward_verifiers: [reference_says_yes]\n"
        f"verifier_imports: [{tmp_path / 'my_verifiers.py'}]\neval_split: test\nmax_completion_length: 2\n"
    )
    return rows


def test_builtin_task_writes_per_prompt_rows_summary_and_table(tmp_path, tiny_model_dir, capsys):
    out = tmp_path / "out"
    args = ["evaluate", "--model", tiny_model_dir, "--num_samples", "4", "--k", "1,4", "--greedy"]
    assert main([*args, "--max_prompts", "3", "--max_completion_length", "1", "--output_dir", str(out)]) == 0
    rows = read_jsonl(out / "per_prompt.jsonl")
    assert [r["index"] for r in rows] == [0, 1, 2]
    for row in rows:
        assert row["n"] == 4 and 0 <= row["correct"] <= 4 and len(row["answers"]) == 4
        assert {"pass@1", "pass@4", "maj@1", "maj@4", "majority_answer", "majority_correct", "greedy_correct"} <= set(
            row
        )
        assert row["pass@1"] == pytest.approx(row["correct"] / 4)
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["n_prompts"], summary["n_samples"], summary["split"]) == (3, 4, "held_out")
    assert summary["pass@1"]["mean"] == pytest.approx(sum(r["pass@1"] for r in rows) / 3)
    assert set(summary) >= {"pass@1", "pass@4", "maj@1", "maj@4", "greedy"}
    printed = capsys.readouterr().out
    assert "| pass@1 |" in printed and "3 prompts x 4 samples" in printed


def test_prefilter_writes_exactly_the_rows_in_range_as_a_dataset_folder(tmp_path, tiny_model_dir):
    from datasets import load_from_disk

    rows = write_task(tmp_path, tiny_model_dir)
    kept = tmp_path / "kept"
    args = ["evaluate", "--config", str(tmp_path / "task.yaml"), "--num_samples", "2", "--no_progress"]
    args += ["--output_dir", str(tmp_path / "out"), "--keep_pass_rate", "1,1", "--write_dataset", str(kept)]
    assert main(args) == 0
    per_prompt = read_jsonl(tmp_path / "out" / "per_prompt.jsonl")
    assert [r["correct"] for r in per_prompt] == [2 if r["answer"] == "yes" else 0 for r in rows]  # split "test"
    assert load_from_disk(str(kept)).to_list() == [r for r in rows if r["answer"] == "yes"]  # rows as stored
    (tmp_path / "kept.yaml").write_text(
        (tmp_path / "task.yaml")
        .read_text()
        .replace(str(tmp_path / "data"), str(kept))
        .replace("eval_split: test\n", "")
    )
    assert main(["evaluate", "--config", str(tmp_path / "kept.yaml"), "--num_samples", "1", "--no_progress",
                 "--output_dir", str(tmp_path / "again")]) == 0  # fmt: skip
    assert json.loads((tmp_path / "again" / "summary.json").read_text())["pass@1"]["mean"] == 1.0


def test_save_completions_writes_every_completion_with_its_verdicts(tmp_path, tiny_model_dir, capsys):
    rows = write_task(tmp_path, tiny_model_dir)
    out = tmp_path / "out"
    args = ["evaluate", "--config", str(tmp_path / "task.yaml"), "--num_samples", "2", "--greedy", "--no_progress"]
    assert main([*args, "--save_completions", "--output_dir", str(out)]) == 0
    assert f"Completions with their verdicts: {out / 'completions.jsonl'}" in capsys.readouterr().out
    records = read_jsonl(out / "completions.jsonl")
    assert [(r["index"], r["sample"]) for r in records] == [(i, s) for i in range(7) for s in (0, 1, "greedy")]
    per_prompt = read_jsonl(out / "per_prompt.jsonl")
    for record in records:
        full_marks = rows[record["index"]]["answer"] == "yes"
        assert isinstance(record["completion"], str) and record["correct"] == full_marks
        assert record["verdicts"] == [
            {"verifier": "reference_says_yes", "score": float(full_marks), "reason": "scored",
             "extracted": record["completion"].strip() or None}
        ]  # fmt: skip
        if record["sample"] != "greedy":
            assert per_prompt[record["index"]]["answers"][record["sample"]] == record["verdicts"][0]["extracted"]
    assert "completions" not in per_prompt[0] and "samples" not in per_prompt[0]
    assert main([*args, "--output_dir", str(tmp_path / "without")]) == 0
    assert not (tmp_path / "without" / "completions.jsonl").exists()
    assert "Add --save_completions to keep every completion" in capsys.readouterr().out


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--num_samples", "4", "--k", "1,8"], "each k must lie between 1 and --num_samples 4"),
        (["--keep_pass_rate", "0.2,0.8"], "--keep_pass_rate LO,HI and --write_dataset DIR go together"),
        (["--keep_pass_rate", "0.9,0.1", "--write_dataset", "x"], "need 0 <= LO <= HI <= 1"),
        (["--k", "a"], "write comma-separated integers"),
    ],
)
def test_bad_input_fails_before_loading_anything(extra, message, capsys, tiny_model_dir):
    assert main(["evaluate", "--model", tiny_model_dir, *extra]) == 2
    assert message in capsys.readouterr().err


def test_builtin_task_needs_a_model(capsys):
    assert main(["evaluate"]) == 2
    assert "pass --model" in capsys.readouterr().err


def test_max_prompts_takes_consecutive_rows_from_an_offset_or_a_seeded_subset(tmp_path, tiny_model_dir):
    import random

    from trl_grpo_ext.compare import Task
    from trl_grpo_ext.data.datasets import arithmetic_split
    from trl_grpo_ext.evaluation.tasks import load_eval_rows

    held_out = arithmetic_split("held_out")
    assert load_eval_rows(Task(), "held_out", 4, offset=20)[1] == held_out[20:22]
    subset = load_eval_rows(Task(), "held_out", 4, subset_seed=1)[1]
    assert subset == [held_out[i] for i in sorted(random.Random(1).sample(range(22), 4))]
    assert subset != load_eval_rows(Task(), "held_out", 4, subset_seed=2)[1]
    args = ["evaluate", "--model", tiny_model_dir, "--num_samples", "1", "--max_completion_length", "1", "--no_progress",
            "--max_prompts", "4", "--prompt_subset_seed", "1", "--prompts_per_call", "3", "--threads", "1"]  # fmt: skip
    assert main([*args, "--output_dir", str(tmp_path / "out")]) == 0
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["n_prompts"] == 4


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--prompt_offset", "3"], "give --max_prompts N with them"),
        (["--max_prompts", "2", "--prompt_offset", "1", "--prompt_subset_seed", "0"], "give one of them, not both"),
        (["--prompts_per_call", "0"], "--prompts_per_call 0: must be >= 1"),
    ],
)
def test_bad_row_choices_fail_before_loading_anything(extra, message, capsys, tiny_model_dir):
    assert main(["evaluate", "--model", tiny_model_dir, *extra]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.parametrize("prompts_per_call, port", [(1, 29531), (2, 29532)])
def test_two_processes_write_the_per_prompt_file_of_one(tmp_path, tiny_model_dir, prompts_per_call, port):
    # 5 held-out prompts on 2 processes: the count does not divide, so a dropped or repeated row would show; sampled
    # two prompts a call, the chunks dealt to processes are those one process samples together.
    common = ["evaluate", "--model", tiny_model_dir, "--num_samples", "3", "--max_prompts", "5", "--greedy",
              "--max_completion_length", "2", "--no_progress", "--prompts_per_call", str(prompts_per_call)]  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    one = subprocess.run([sys.executable, "-m", "trl_grpo_ext.cli", *common, "--output_dir", str(tmp_path / "one")],
                         env=env, capture_output=True, text=True, timeout=600)  # fmt: skip
    assert one.returncode == 0, one.stderr[-4000:]
    launch = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2",
              "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no", "--main_process_port",
              str(port), "-m", "trl_grpo_ext.cli", *common, "--output_dir", str(tmp_path / "two")]  # fmt: skip
    two = subprocess.run(launch, env=env, capture_output=True, text=True, timeout=600)
    assert two.returncode == 0, two.stderr[-4000:]
    assert (tmp_path / "two" / "per_prompt.jsonl").read_text() == (tmp_path / "one" / "per_prompt.jsonl").read_text()
    assert [r["index"] for r in read_jsonl(tmp_path / "two" / "per_prompt.jsonl")] == [0, 1, 2, 3, 4]
    summaries = [json.loads((tmp_path / run / "summary.json").read_text()) for run in ("one", "two")]
    assert (summaries[0].pop("processes"), summaries[1].pop("processes")) == (1, 2)
    assert summaries[0] == summaries[1]


def test_a_gguf_file_as_the_model_says_how_to_convert_it(tmp_path, capsys):
    assert main(["evaluate", "--model", str(tmp_path / "model.Q4_1.gguf")]) == 2
    error = capsys.readouterr().err
    assert "is a GGUF file" in error and "trl-grpo-ext prepare-model --gguf" in error
    (tmp_path / "task.yaml").write_text(f"model_name_or_path: {tmp_path / 'm.gguf'}\n")
    assert main(["evaluate", "--config", str(tmp_path / "task.yaml")]) == 2
    assert "model_name_or_path=" in capsys.readouterr().err
