"""An exception of the judge's own code while it handles a candidate's data is `judge_error`: 0 (crashing the judge is
no escape from the penalty), counted in `code/judge_error_rate`, and never read as a failing test.

The bug is real, not simulated in the verifier: a copy of code/standalone/ whose reply decoder raises on one value
runs as the judge process, as the installed scripts would.
"""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest
from code_verifier_helpers import make_code_verifier

from trl_grpo_ext.verifiers.code import runner
from trl_grpo_ext.verifiers.code.standalone import STANDALONE_DIR
from trl_grpo_ext.verifiers.core import reward as reward_module
from trl_grpo_ext.verifiers.sandbox import isolation, pool

TRIGGER = "a value the decoder trips on"


@pytest.fixture
def verifier_with_a_decoder_bug(tmp_path, monkeypatch):
    copy = tmp_path / "standalone"
    shutil.copytree(STANDALONE_DIR, copy, ignore=shutil.ignore_patterns("__pycache__"))
    protocol = copy / "protocol.py"
    source = protocol.read_text()
    head = "def decode(data, make_handle=None, depth=0, budget: DecodeBudget | None = None):\n"
    assert head in source
    bug = f'{head}    if data == {TRIGGER!r}:\n        raise AttributeError("a bug in the decoder")\n'
    protocol.write_text(source.replace(head, bug))
    copy.chmod(0o755)
    tmp_path.chmod(0o755)
    for module in (runner, pool, isolation):
        monkeypatch.setattr(module, "STANDALONE_DIR", copy)
    verifier = make_code_verifier(10, workers=1)
    yield verifier
    verifier.close()


def test_a_bug_of_the_judge_on_a_reply_is_a_judge_error_not_a_failing_test(verifier_with_a_decoder_bug):
    tests = "assert f() == 1\nassert f() == 1"
    tripping = verifier_with_a_decoder_bug.verify(f"def f():\n    return {TRIGGER!r}", tests)
    assert tripping.score == 0.0
    assert tripping.reason == "judge_error: decoding a reply: AttributeError: a bug in the decoder"
    wrong = verifier_with_a_decoder_bug.verify("def f():\n    return 2", tests)
    assert (wrong.score, wrong.reason) == (0.0, "wrong")  # a failing test stays a failing test
    assert verifier_with_a_decoder_bug.verify("def f():\n    return 1", tests).reason == "correct"


def test_a_judge_error_scores_zero_even_with_partial_credit(verifier_with_a_decoder_bug):
    verifier_with_a_decoder_bug.partial_credit = True
    tests = "assert g() == 1\nassert f() == 1"
    result = verifier_with_a_decoder_bug.verify(f"def g():\n    return 1\ndef f():\n    return {TRIGGER!r}", tests)
    assert (result.score, result.reason.split(":")[0]) == (0.0, "judge_error")


def test_a_bug_comparing_a_program_output_is_a_judge_error(monkeypatch):
    def broken_match(actual, expected, float_tolerance=None, tokens=False):
        raise IndexError("a bug in the comparison")

    monkeypatch.setattr(runner, "outputs_match", broken_match)
    verifier = make_code_verifier(10, workers=1)
    try:
        result = verifier.verify("print(input())", [{"input": "x\n", "output": "x\n"}])
    finally:
        verifier.close()
    assert (result.score, result.reason) == (
        0.0,
        "judge_error: comparing the output: IndexError: a bug in the comparison",
    )


def test_judge_errors_are_counted_by_the_reward_function(monkeypatch):
    def broken_match(actual, expected, float_tolerance=None):
        raise IndexError("a bug in the comparison")

    monkeypatch.setattr(runner, "outputs_match", broken_match)
    options = {"timeout_s": 10, "workers": 1}
    make_code_verifier(**options).close()  # fails or skips here where the code verifier cannot run
    reward = reward_module.as_reward_function("code", reference_column="tests", **options)
    metrics = {}
    try:
        cases = [{"input": "x\n", "output": "x\n"}]
        rewards = reward(completions=["print(input())", ""], tests=[cases, cases], log_metric=metrics.__setitem__)
    finally:
        reward.verifier.close()
    assert rewards == [0.0, 0.0]
    assert metrics["code/judge_error_rate"] == 0.5 and metrics["code/internal_error_rate"] == 0.0


CALL_RESULTS = """
import sys
sys.path.insert(0, sys.argv[1])
from formats_calls import apps_match, exact_match
from formats_units import JudgeFault

class Refuses:  # as a proxy of a candidate object does
    def __eq__(self, other):
        raise TypeError("not plain data")

class Broken:  # what no plain value does: a bug of the judge's comparison
    def __eq__(self, other):
        raise ZeroDivisionError("a bug")

print(exact_match(Refuses(), 1), apps_match(Refuses(), [1]))
for match in (exact_match, apps_match):
    try:
        match(Broken(), [1])
    except JudgeFault as exc:
        print("JudgeFault:", exc)
"""


def test_comparing_a_call_result_tells_a_refusing_candidate_object_from_a_judge_bug():
    result = subprocess.run(
        [sys.executable, "-I", "-B", "-c", CALL_RESULTS, str(STANDALONE_DIR)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.stdout.splitlines() == [
        "False False",
        "JudgeFault: comparing a call's result: ZeroDivisionError: a bug",
        "JudgeFault: comparing a call's result: ZeroDivisionError: a bug",
    ], result.stderr
