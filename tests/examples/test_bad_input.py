"""Bad input is refused before work, in one sentence: `compare`, `evaluate` and an example script
(`grpo_math.py`, through its parser) each get every kind of mistake, and each answers with exit status 2 and one line
`<prog>: error: ...` naming the field or value (and the closest valid name), no traceback, without loading a model or
starting a run. Each command also gets one valid input, to show that the mistake alone stops it, and one subprocess,
for the real exit path."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from trl_grpo_ext.cli import main

REPO = Path(__file__).resolve().parents[2]


class Reached(Exception):
    """Raised by the stand-in for the work (training, evaluation) a valid input reaches."""


def write_inputs(tmp_path: Path) -> dict:
    """A model folder (a config.json: the checks look no further, and nothing may load it), a folder of data files
    with columns question and answer, and a verifier module that fails to import. Returns a valid task."""
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text("{}")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "train.jsonl").write_text('{"question": "1+1=", "answer": "2"}\n')
    (tmp_path / "broken.py").write_text("import math\n\nraise RuntimeError('no verifier here')\n")
    return dict(
        model_name_or_path=str(tmp_path / "model"),
        dataset_name=str(tmp_path / "data"),
        prompt_column="question",
        reference_column="answer",
        reward_verifiers=["math"],
        max_steps=2,
    )


# (what is wrong in the task file, the words the one line must hold)
TASK_MISTAKES = {
    "unknown key": ({"advantage_estimater": "rloo"}, ["'advantage_estimater'", "did you mean advantage_estimator?"]),
    "bad estimator": ({"advantage_estimator": "rloooo"}, ["advantage_estimator='rloooo'", "Did you mean 'rloo'?"]),
    "missing model": ({"model_name_or_path": "{tmp}/models/x"}, ["model_name_or_path='", "models/x' does not exist"]),
    "model folder without config": ({"model_name_or_path": "{tmp}"}, ["is a folder without config.json"]),
    "missing dataset": ({"dataset_name": "{tmp}/nowhere"}, ["dataset_name='", "nowhere' does not exist"]),
    "dataset file": ({"dataset_name": "{tmp}/data/train.jsonl"}, ["train.jsonl' is a file; move it into a folder"]),
    "missing split": ({"eval_split": "tset"}, ["has no split 'tset'", "Set eval_split"]),
    "missing column": ({"reference_column": "answr"}, ["no column(s) ['answr']", "Did you mean 'answer'?"]),
    "unknown verifier": ({"reward_verifiers": ["maht"]}, ["unknown verifier(s) maht", "Did you mean 'math'?"]),
    "missing verifier file": ({"verifier_imports": ["{tmp}/mine.py"]}, ["mine.py does not exist"]),
    "verifier file fails": (
        {"verifier_imports": ["{tmp}/broken.py"]},
        ["importing failed at", "broken.py:3 with RuntimeError: no verifier here"],
    ),
}


def write_task(tmp_path: Path, change: dict) -> str:
    task = write_inputs(tmp_path)
    for key, value in change.items():
        task[key] = (
            [v.format(tmp=tmp_path) for v in value] if isinstance(value, list) else str(value).format(tmp=tmp_path)
        )
    (tmp_path / "task.yaml").write_text(yaml.safe_dump(task))
    return str(tmp_path / "task.yaml")


def assert_one_line(err: str, prog: str, expected: list[str]) -> None:
    assert "Traceback" not in err, err
    (line,) = err.strip().splitlines()
    assert line.startswith(f"{prog}: error: "), line
    for words in expected:
        assert words in line, (words, line)


@pytest.fixture
def no_work(monkeypatch):
    """Any model load, comparison run or run subprocess fails the test."""
    import transformers

    import trl_grpo_ext.compare
    import trl_grpo_ext.compare.run
    from trl_grpo_ext.commands import evaluate

    def forbidden(*args, **kwargs):
        pytest.fail("work started on bad input")

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", forbidden)
    monkeypatch.setattr(trl_grpo_ext.compare.run, "launch_process", forbidden)
    monkeypatch.setattr(trl_grpo_ext.compare, "run_all", forbidden)
    monkeypatch.setattr(evaluate, "evaluate_models", forbidden)


@pytest.mark.parametrize("mistake", TASK_MISTAKES)
def test_compare_refuses_each_mistake_in_one_line_before_any_run(mistake, tmp_path, capsys, no_work):
    change, expected = TASK_MISTAKES[mistake]
    out = tmp_path / "out"
    assert main(["compare", "--config", write_task(tmp_path, change), "--output_dir", str(out)]) == 2
    err = capsys.readouterr().err
    assert_one_line(err, "trl-grpo-ext compare", expected)
    assert "resume" not in err and not out.exists()


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--seedz", "2"], ["unknown argument --seedz.", "Did you mean '--seed'?"]),
        (["--variant", "x:kl_estimater=k2"], ["'kl_estimater' (did you mean kl_estimator?)"]),
        (["--variant", "x:advantage_estimator=rloooo"], ["x ({'advantage_estimator': 'rloooo'})", "'rloo'?"]),
        (["--seeds", "two"], ["argument --seeds: invalid int value: 'two'"]),
        (["--variant", "x:beta=["], ["--variant 'x:beta=[': '[' is not a YAML scalar"]),
    ],
)
def test_compare_refuses_a_bad_flag_in_one_line(argv, expected, tmp_path, capsys, no_work):
    with pytest.raises(SystemExit) as exit_status:  # argparse's own errors exit from the parser
        raise SystemExit(main(["compare", *argv, "--output_dir", str(tmp_path / "out")]))
    assert exit_status.value.code == 2
    assert_one_line(capsys.readouterr().err, "trl-grpo-ext compare", expected)
    assert not (tmp_path / "out").exists()


def test_compare_starts_work_on_the_valid_task(tmp_path, monkeypatch):
    import trl_grpo_ext.compare

    def reached(*args, **kwargs):
        raise Reached

    monkeypatch.setattr(trl_grpo_ext.compare, "run_all", reached)
    with pytest.raises(Reached):
        main(["compare", "--config", write_task(tmp_path, {"eval_split": "train"}), "--output_dir", str(tmp_path)])


@pytest.mark.parametrize("mistake", TASK_MISTAKES)
def test_evaluate_refuses_each_mistake_in_one_line_before_loading_the_model(mistake, tmp_path, capsys, no_work):
    change, expected = TASK_MISTAKES[mistake]
    out = tmp_path / "out"
    assert main(["evaluate", "--config", write_task(tmp_path, {"eval_split": "train", **change})]) == 2
    assert_one_line(capsys.readouterr().err, "trl-grpo-ext evaluate", expected)
    assert not out.exists()


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--modle", "m"], ["unknown argument --modle.", "Did you mean '--model'?"]),
        (["--model", "./models/x"], ["--model='./models/x' does not exist"]),
        (["--split", "tset"], ["has no split 'tset'", "its splits are train"]),
    ],
)
def test_evaluate_refuses_a_bad_flag_in_one_line(argv, expected, tmp_path, capsys, no_work):
    assert main(["evaluate", "--config", write_task(tmp_path, {}), *argv]) == 2
    assert_one_line(capsys.readouterr().err, "trl-grpo-ext evaluate", expected)


def test_evaluate_with_a_task_file_evaluates_its_model_or_asks_for_one(tmp_path, capsys, monkeypatch):
    from trl_grpo_ext.commands import evaluate

    def reached(args, task, common, model_names, rows, ks):
        raise Reached(model_names[0])

    monkeypatch.setattr(evaluate, "evaluate_models", reached)
    task_file = write_task(tmp_path, {"eval_split": "train"})
    with pytest.raises(Reached, match="model"):
        main(["evaluate", "--config", task_file])
    task = yaml.safe_load(Path(task_file).read_text())
    del task["model_name_or_path"]
    Path(task_file).write_text(yaml.safe_dump(task))
    assert main(["evaluate", "--config", task_file]) == 2
    err = capsys.readouterr().err
    assert "names no model_name_or_path" in err and "pass --model" in err and "built-in task" not in err


def test_the_commands_exit_with_one_line_in_a_subprocess(tmp_path):
    task_file = write_task(tmp_path, {"dataset_name": "./nowhere/data"})
    for command in ("compare", "evaluate"):
        argv = [sys.executable, "-m", "trl_grpo_ext.cli", command, "--config", task_file]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=300, cwd=tmp_path)
        assert done.returncode == 2, done.stderr
        assert_one_line(done.stderr, f"trl-grpo-ext {command}", ["dataset_name='./nowhere/data' does not exist"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["broken.py", "data", "model", "task.yaml"]


# --- an example script: TRL's parser, through examples/script_setup.py ---------------------------------------------

EXAMPLE_MISTAKES = {
    "unknown flag": (
        ["--advantage_estimater", "rloo"],
        ["unknown flag --advantage_estimater.", "'advantage_estimator'"],
    ),
    "unknown key": ([], ["key in ", "advantage_estimater. Did you mean 'advantage_estimator'?"]),
    "bad estimator": (["--advantage_estimator", "rloooo"], ["advantage_estimator='rloooo'", "Did you mean 'rloo'?"]),
    "bad choice": (["--kl_placement", "rewards"], ["kl_placement='rewards'", "Did you mean 'reward'?"]),
    "missing model": (["--model_name_or_path", "./models/x"], ["--model_name_or_path='./models/x' does not exist"]),
    "missing dataset": (["--dataset_name", "./nowhere"], ["--dataset_name='./nowhere' does not exist"]),
    "missing split": (["--dataset_train_split", "tset"], ["has no split 'tset'", "Set --dataset_train_split"]),
    "missing column": (["--answer_column", "answr"], ["no column(s) ['answr']", "--answer_column ('answr')"]),
    "threads": (["--threads", "0"], ["--threads 0: must be >= 1"]),
    "bad type": (["--max_steps", "x"], ["argument --max_steps/--max-steps: invalid int value: 'x'"]),
}


@pytest.fixture
def grpo_math(monkeypatch):
    """examples/grpo_math.py as a module, its tiny model forbidden; torch's thread count restored afterwards."""
    import importlib

    import torch

    monkeypatch.syspath_prepend(str(REPO / "examples"))
    module = importlib.import_module("grpo_math")
    monkeypatch.setattr(module, "tiny_model", lambda: pytest.fail("the tiny model was built on bad input"))
    threads = torch.get_num_threads()
    yield module
    torch.set_num_threads(threads)


def example_argv(tmp_path: Path, extra: list[str]) -> list[str]:
    task = write_inputs(tmp_path)
    argv = ["grpo_math.py", "--dataset_name", task["dataset_name"], "--output_dir", str(tmp_path / "out"), *extra]
    if not extra:  # the mistake is in the file
        (tmp_path / "run.yaml").write_text("advantage_estimater: rloo\n")
        argv += ["--config", str(tmp_path / "run.yaml")]
    return argv


@pytest.mark.parametrize("mistake", EXAMPLE_MISTAKES)
def test_an_example_refuses_each_mistake_in_one_line_before_its_model(
    mistake, grpo_math, tmp_path, capsys, monkeypatch
):
    extra, expected = EXAMPLE_MISTAKES[mistake]
    monkeypatch.setattr(sys, "argv", example_argv(tmp_path, extra))
    with pytest.raises(SystemExit) as exit_status:
        grpo_math.parse_args()
    assert exit_status.value.code == 2
    assert_one_line(capsys.readouterr().err, "grpo_math.py", expected)
    assert not (tmp_path / "out").exists()


def test_an_example_parses_the_valid_input(grpo_math, tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "argv", example_argv(tmp_path, ["--model_name_or_path", str(tmp_path / "model")]))
    script_args, training_args, model_args = grpo_math.parse_args()
    assert (script_args.dataset_name, model_args.model_name_or_path) == (
        str(tmp_path / "data"),
        str(tmp_path / "model"),
    )
