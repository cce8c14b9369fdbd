"""The code verifier fails loudly: its own failures give None with `internal_error: ...` (after one retry of the sandbox
or the judge; a bug of its own code at once, logged with its traceback), a broken
reference gives None with `unusable_reference: ...`, bad input never raises, and none of them is scored 0."""

from __future__ import annotations

import dataclasses

import pytest
from code_verifier_helpers import make_code_verifier

from trl_grpo_ext.verifiers.code.clock import BACKSTOP_FACTOR, BACKSTOP_MIN_S
from trl_grpo_ext.verifiers.sandbox import pool as sandbox

ADD = "def add(a, b):\n    return a + b\n"
ADD_TESTS = "assert add(1, 2) == 3\n"
JUDGE_BACKSTOP_S = max(BACKSTOP_FACTOR * 5, BACKSTOP_MIN_S)  # the candidate's wall-clock backstop (timeout_s=5)


@pytest.fixture(scope="module")
def verifier():
    v = make_code_verifier(5)
    yield v
    v.close()


@pytest.mark.parametrize("completion", [123, None, {"role": "assistant", "content": ADD}, [ADD], b"def add"])
def test_a_completion_that_is_not_text_scores_zero(verifier, completion):
    result = verifier.verify(completion, ADD_TESTS)
    assert result.score == 0.0 and result.reason.startswith("bad_completion: "), result.reason


@pytest.mark.parametrize(
    "reference",
    [
        None,
        7,
        2.5,
        float("nan"),
        [],
        [1, 2],
        {"x": 1},
        [{"input": 1, "output": "1"}],
        [{"input": "\ud800", "output": ""}],
    ],
)
def test_an_unusable_reference_gives_none(verifier, reference):
    result = verifier.verify(ADD, reference)
    assert result.score is None and result.reason.startswith("unusable_reference: "), result.reason


BROKEN_TESTS = {
    "missing_module": ("import module_that_does_not_exist\n" + ADD_TESTS, "cannot import"),
    "stdlib_never_imported": ("assert math.isclose(add(0.1, 0.2), 0.3)\n", "'math' without importing it"),
    "raises_before_the_candidate": ("table = {}['missing']\n" + ADD_TESTS, "KeyError"),
    "raises_inside_an_assert_first": ("assert 1 / 0 == add(1, 2)\n", "ZeroDivisionError"),
    "humaneval_without_check": (
        {"test": "def helper():\n    return 1\nassert helper() == 1\n", "entry_point": "add"},
        "check",
    ),
}


@pytest.mark.parametrize("case", sorted(BROKEN_TESTS))
def test_test_code_that_cannot_run_is_an_unusable_reference(verifier, case):
    tests, detail = BROKEN_TESTS[case]
    result = verifier.verify(ADD, tests)
    assert result.score is None and result.reason.startswith("unusable_reference: "), result.reason
    assert detail in result.reason


CANDIDATE_FAULTS = {
    "function_missing": ("def plus(a, b):\n    return a + b\n", ADD_TESTS),
    "value_breaks_the_test_outside_an_assert": (
        "def add(a, b):\n    return None\n",
        "r = add(1, 2)\nx = r[0]\nassert x == 3",
    ),
    "value_breaks_an_assert": ("def add(a, b):\n    return None\n", "assert add(1, 2)[0] == 3"),
    # The candidate decides what `add` is; the test's TypeError then comes from the candidate, not the test.
    "module_as_the_function": ("import math as add\n", ADD_TESTS),
    "module_as_the_function_before_a_test_error": ("import math as add\n", "x = add(1, 2)\n" + ADD_TESTS),
    "proxy_compared_before_any_call": ("def add(a, b):\n    return a + b\n", "assert len(add) == 1\n" + ADD_TESTS),
}


@pytest.mark.parametrize("case", sorted(CANDIDATE_FAULTS))
def test_the_candidates_own_failures_still_score_zero(verifier, case):
    code, tests = CANDIDATE_FAULTS[case]
    result = verifier.verify(code, tests)
    assert result.score == 0.0, result.reason


def test_the_judge_runs_with_its_limits_and_the_int_to_str_guard(verifier):
    tests = ADD_TESTS + (
        "import resource, sys\n"
        "assert resource.getrlimit(resource.RLIMIT_AS)[0] == 4096 << 20\n"
        f"assert 0 < resource.getrlimit(resource.RLIMIT_CPU)[0] <= {JUDGE_BACKSTOP_S} + 2 + 5\n"
        "assert sys.get_int_max_str_digits() == 4300\n"
        "import os\nassert os.environ['OPENBLAS_NUM_THREADS'] == os.environ['OMP_NUM_THREADS'] == '1'\n"
    )
    result = verifier.verify(ADD, tests)
    assert result.score == 1.0, (result.reason, result.details)
    # Beyond its address space: the test code's own allocation fails, which is the reference's fault.
    hog = verifier.verify(ADD, "hoard = bytearray(6 << 30)\n" + ADD_TESTS)
    assert hog.score is None and "MemoryError" in hog.reason, hog.reason


def test_a_judge_that_dies_is_retried_once_then_an_internal_error(verifier, tmp_path):
    once = tmp_path / "died_once"
    dies_once = (
        f"import os, signal\nif not os.path.exists({str(once)!r}):\n"
        f"    open({str(once)!r}, 'w').close()\n    os.kill(os.getpid(), signal.SIGKILL)\n" + ADD_TESTS
    )
    assert verifier.verify(ADD, dies_once).score == 1.0  # the retry succeeds
    always = "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n" + ADD_TESTS
    result = verifier.verify(ADD, always)
    assert result.score is None and result.reason.startswith("internal_error: the judge process ended"), result.reason
    assert verifier.verify(ADD, ADD_TESTS).score == 1.0  # and the judge zygote still serves


def test_a_sandbox_that_cannot_start_is_an_internal_error():
    broken = make_code_verifier(5, workers=1)
    try:
        broken.isolation = dataclasses.replace(broken.isolation, python="/nonexistent/python3")
        for tests in (ADD_TESTS, [{"input": "", "output": "3\n"}]):
            result = broken.verify(ADD, tests)
            assert result.score is None and result.reason.startswith("internal_error: "), result.reason
            assert "sandbox" in result.reason and "start" in result.reason, result.reason
    finally:
        broken.close()


def test_a_sandbox_that_cannot_set_up_its_limits_is_an_internal_error(monkeypatch):
    broken = make_code_verifier(5, workers=1)
    impossible = {"RLIMIT_NOFILE": (1 << 40, 1 << 40)}  # above any hard limit: setrlimit fails in the harness
    monkeypatch.setattr(sandbox.Limits, "rlimits", lambda self, nproc: impossible)
    try:
        for tests in (ADD_TESTS, [{"input": "", "output": "3\n"}]):
            result = broken.verify(ADD, tests)
            assert result.score is None, result.reason
            assert result.reason.startswith("internal_error: the sandbox could not set up"), result.reason
    finally:
        broken.close()


def test_a_bug_of_the_verifier_is_not_retried_and_surfaces_with_its_traceback(verifier, monkeypatch):
    # A bug of the verifier's own Python would fail again: it is reported at once, as a bug, with its traceback (which
    # the reward adapter logs at ERROR), never retried as if the sandbox or the judge had failed.
    calls = []

    def broken_run(*args):
        calls.append(args)
        raise KeyError("surprise")

    monkeypatch.setattr(verifier, "_run", broken_run)
    results = verifier.verify_batch([ADD, "# the same program\n" + ADD], [ADD_TESTS, ADD_TESTS])
    assert len(calls) == 2  # once per distinct program: no retry
    for result in results:
        assert result.score is None and result.reason == "internal_error: bug in the verifier: KeyError: 'surprise'"
        assert "broken_run" in result.details["traceback"] and "KeyError: 'surprise'" in result.details["traceback"]


def test_a_bug_reading_a_reference_is_the_verifiers_failure_not_an_unusable_reference(verifier, monkeypatch):
    from trl_grpo_ext.verifiers.code import verifier as module

    def broken_parse(reference):
        raise TypeError("a bug in parse_reference")

    monkeypatch.setattr(module, "parse_reference", broken_parse)
    result = verifier.verify(ADD, ADD_TESTS)
    assert result.score is None
    assert result.reason == "internal_error: bug in the verifier: TypeError: a bug in parse_reference"
    assert "broken_parse" in result.details["traceback"]


@pytest.mark.parametrize("failure", ["sandbox", "judge", "os"])
def test_a_failure_of_the_sandbox_or_the_judge_is_retried_once_then_an_internal_error(verifier, monkeypatch, failure):
    from trl_grpo_ext.verifiers.code.runner import JudgeError

    raised = {"sandbox": sandbox.SandboxError("the sandbox broke"), "judge": JudgeError("the judge broke")}
    raised["os"] = BrokenPipeError(32, "Broken pipe")
    calls = []

    def failing_run(*args):
        calls.append(args)
        raise raised[failure]

    monkeypatch.setattr(verifier, "_run", failing_run)
    result = verifier.verify(ADD, ADD_TESTS)
    assert len(calls) == 2
    assert result.score is None and result.reason.startswith("internal_error: "), result.reason
    assert "bug" not in result.reason and str(raised[failure]) in result.reason, result.reason
    monkeypatch.undo()
    assert verifier.verify(ADD, ADD_TESTS).score == 1.0


def test_a_candidate_killed_at_its_deadline_is_a_timeout():
    quick = make_code_verifier(1, workers=1)
    try:
        result = quick.verify("def add(a, b):\n    while True: pass", ADD_TESTS)
        assert result.score == 0.0 and result.reason == "timeout", result.reason
    finally:
        quick.close()


def test_a_sandbox_that_could_not_set_up_stays_an_internal_error_when_its_clock_also_ran_out(monkeypatch):
    from trl_grpo_ext.verifiers.code import runner

    class SpentAtOnce(runner.CandidateClock):  # the clock runs out before the judge's verdict is read
        def wait_s(self):
            return 0.0

        def expired(self):
            return "timeout"

    broken = make_code_verifier(5, workers=1)
    monkeypatch.setattr(sandbox.Limits, "rlimits", lambda self, nproc: {"RLIMIT_NOFILE": (1 << 40, 1 << 40)})
    monkeypatch.setattr(runner, "CandidateClock", SpentAtOnce)
    try:
        result = broken.verify(ADD, ADD_TESTS)
        assert result.score is None, result.reason
        assert result.reason.startswith("internal_error: the sandbox could not set up"), result.reason
    finally:
        broken.close()
