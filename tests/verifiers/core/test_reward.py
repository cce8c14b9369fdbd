"""`as_reward_function`: the TRL reward-function contract around any registered verifier."""

import logging

import pytest

from trl_grpo_ext.verifiers import VerificationResult, Verifier, as_reward_function, get_verifier, register_verifier
from trl_grpo_ext.verifiers.core.reward import completion_text


@register_verifier("exact_for_reward_tests")
def exact_for_reward_tests(completion, reference):
    """Exact string match after stripping whitespace (test helper)."""
    if reference == "unusable":
        return None
    return float(completion.strip() == str(reference).strip())


@pytest.fixture(scope="module")
def math_reward():
    reward = as_reward_function("math", reference_column="answer", timeout_s=5.0, n_workers=1)
    yield reward
    reward.verifier.close()


def test_name_is_used_by_trl_for_metrics(math_reward):
    assert math_reward.__name__ == "math_reward"
    assert as_reward_function("exact_for_reward_tests").__name__ == "exact_for_reward_tests_reward"


def test_plain_text_completions(math_reward):
    rewards = math_reward(prompts=["p1", "p2"], completions=[r"\boxed{2}", r"\boxed{3}"], answer=["2", "2"])
    assert rewards == [1.0, 0.0]


def test_conversational_completions_use_the_last_assistant_message(math_reward):
    completions = [
        [{"role": "assistant", "content": r"\boxed{7}"}],
        [{"role": "user", "content": r"\boxed{7}"}, {"role": "assistant", "content": r"\boxed{8}"}],
        [{"role": "assistant", "content": [{"type": "text", "text": r"so \boxed{"}, {"type": "text", "text": "7}"}]}],
    ]
    assert math_reward(prompts=[None] * 3, completions=completions, answer=["7", "7", "7"]) == [1.0, 0.0, 1.0]


@pytest.mark.parametrize(
    "completion, text",
    [
        ("plain", "plain"),
        ([{"role": "assistant", "content": "a"}], "a"),
        ({"role": "assistant", "content": "b"}, "b"),
        ([{"role": "assistant", "content": "x"}, {"role": "tool", "content": "y"}], "x"),
        ([{"role": "assistant", "content": None}], ""),
    ],
)
def test_completion_text(completion, text):
    assert completion_text(completion) == text


def test_bad_completion_scores_zero(math_reward):
    assert math_reward(prompts=[None, None], completions=[42, r"\boxed{1}"], answer=["42", "1"]) == [0.0, 1.0]


def test_unusable_reference_is_none(math_reward):
    assert math_reward(prompts=[None], completions=[r"\boxed{1}"], answer=[None]) == [None]


def test_logs_metrics_and_extra_columns_like_the_trainer_passes_them(math_reward):
    metrics, extra = {}, {}
    rewards = math_reward(
        prompts=[None] * 4,
        completions=[r"\boxed{1}", "nothing to see", r"\boxed{\frac{1}{2}", r"\boxed{3}"],
        completion_ids=[[1], [2], [3], [4]],
        answer=["1", "2", r"\frac{1}{2}", None],
        trainer_state=object(),
        log_metric=lambda name, value: metrics.__setitem__(name, value),
        log_extra=lambda column, values: extra.__setitem__(column, values),
    )
    assert rewards == [1.0, 0.0, 0.0, None]
    assert metrics["math/no_answer_rate"] == 0.25
    assert metrics["math/unparseable_rate"] == 0.25
    assert metrics["math/timeout_rate"] == 0.0
    assert metrics["math/unusable_reference_rate"] == 0.25
    assert metrics["math/mean_score"] == pytest.approx(1 / 3)
    # an unclosed box is not an answer of its own; the unusable reference is rejected before extraction
    assert extra["math_extracted"] == ["1", "", r"\boxed{\frac{1}{2}", ""]
    assert extra["math_reason"][0] == "correct" and extra["math_reason"][1] == "no_answer"


def test_missing_reference_column_names_it(math_reward):
    with pytest.raises(KeyError, match="solution"):
        as_reward_function("math", reference_column="solution", start_workers=False)(
            prompts=[None], completions=["1"], answer=["1"]
        )


def test_custom_column_and_function_verifier():
    reward = as_reward_function("exact_for_reward_tests", reference_column="target")
    assert reward(prompts=[None] * 3, completions=["a ", "b", "c"], target=["a", "c", "unusable"]) == [1.0, 0.0, None]


def test_unknown_verifier_lists_the_valid_ones():
    with pytest.raises(ValueError, match="math"):
        as_reward_function("no_such_verifier")


def test_bad_option_fails_at_construction():
    with pytest.raises(ValueError, match="timeout_s"):
        as_reward_function("math", timeout_s=-1)


@pytest.mark.parametrize("column", ["", None])
def test_bad_reference_column(column):
    with pytest.raises(ValueError, match="reference_column"):
        as_reward_function("math", reference_column=column)


# -- a verifier's own failure is None, counted and loud ----------------------------------------------------------------


@register_verifier("fails_on_request_for_reward_tests")
def fails_on_request(completion, reference):
    """Raises when the completion says "fail", else exact match (test helper)."""
    if completion == "fail":
        raise RuntimeError("boom")
    return float(completion == reference)


@register_verifier("broken_batch_for_reward_tests")
class BrokenBatch(Verifier):
    """verify_batch raises, returns too few results, or scores an internal error 0.0, by reference (test helper)."""

    def verify_batch(self, completions, references):
        if references[0] == "raise":
            raise OSError("sandbox did not start")
        if references[0] == "short":
            return []
        if references[0] == "nan":
            return [VerificationResult(float("nan"), "scored")] * len(completions)
        return [VerificationResult(0.0, "internal_error: worker died")] * len(completions)


def call(reward, completions, answers):
    metrics, extra = {}, {}
    rewards = reward(
        prompts=[None] * len(completions),
        completions=completions,
        answer=answers,
        log_metric=metrics.__setitem__,
        log_extra=extra.__setitem__,
    )
    return rewards, metrics, extra


def test_a_failing_function_verifier_gives_none_counted_as_internal_error():
    reward = as_reward_function("fails_on_request_for_reward_tests")
    rewards, metrics, extra = call(reward, ["fail", "x", "y"], ["x", "x", "x"])
    assert rewards == [None, 1.0, 0.0]
    assert extra["fails_on_request_for_reward_tests_reason"][0] == "internal_error: RuntimeError: boom"
    assert metrics["fails_on_request_for_reward_tests/internal_error_rate"] == pytest.approx(1 / 3)
    assert metrics["fails_on_request_for_reward_tests/unusable_reference_rate"] == 0.0
    assert metrics["fails_on_request_for_reward_tests/mean_score"] == 0.5
    assert "fails_on_request_for_reward_tests/error_rate" not in metrics


def test_internal_failures_are_logged_once_per_batch(caplog):
    reward = as_reward_function("fails_on_request_for_reward_tests", max_failed_batches=5)
    with caplog.at_level(logging.WARNING, logger="trl_grpo_ext.verifiers"):
        reward(prompts=None, completions=["fail"] * 8 + ["x"], answer=["x"] * 9)
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "8 of 9 items" in warnings[0].getMessage() and "boom" in warnings[0].getMessage()


@register_verifier("raises_checking_for_reward_tests")
def raises_checking(completion, reference):
    """An exception while checking the answer "crash" (as the math and code verifiers report one); else exact."""
    if completion == "crash":
        return VerificationResult(0.0, "comparison_error: TypeError", "crash", {"error": "TypeError: deep in sympy"})
    if completion == "judge":
        return VerificationResult(0.0, "judge_error: KeyError: 'id'", "judge", {})
    return float(completion == reference)


def test_a_check_that_raised_scores_zero_counted_apart_and_logged_once_with_answer_and_reference(caplog):
    reward = as_reward_function("raises_checking_for_reward_tests")
    with caplog.at_level(logging.WARNING, logger="trl_grpo_ext.verifiers"):
        rewards, metrics, extra = call(reward, ["crash", "x", "crash", "judge"], ["x", "x", "ref 7", "x"])
    assert rewards == [0.0, 1.0, 0.0, 0.0]  # still 0: None would let a policy escape the penalty by crashing it
    assert metrics["raises_checking_for_reward_tests/comparison_error_rate"] == 0.5
    assert metrics["raises_checking_for_reward_tests/judge_error_rate"] == 0.25
    assert metrics["raises_checking_for_reward_tests/internal_error_rate"] == 0.0
    assert extra["raises_checking_for_reward_tests_reason"][0] == "comparison_error: TypeError"
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "raised while checking 3 of 4 answers" in warnings[0]
    assert "answer 'crash', reference 'x'" in warnings[0] and "TypeError: deep in sympy" in warnings[0]
    assert "'comparison_error: TypeError' x2" in warnings[0] and "judge_error: KeyError" in warnings[0]


@register_verifier("fails_in_two_ways_for_reward_tests")
def fails_in_two_ways(completion, reference):
    """A bug of its own on "bug" (an exception: internal_error), a check that raised on "crash"; else exact."""
    if completion == "bug":
        raise KeyError("a bug of ours")
    if completion == "crash":
        return VerificationResult(0.0, "comparison_error: TypeError", "crash", {"error": "TypeError: deep in sympy"})
    return float(completion == reference)


def test_the_first_failure_of_each_kind_is_logged_at_error_with_its_traceback(caplog):
    reward = as_reward_function("fails_in_two_ways_for_reward_tests", max_failed_batches=10)
    with caplog.at_level(logging.ERROR, logger="trl_grpo_ext.verifiers"):
        for _ in range(3):
            rewards = reward(prompts=None, completions=["bug", "crash", "bug", "x"], answer=["x"] * 4)
    assert rewards == [None, 0.0, None, 1.0]
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 2  # once per kind in the process, not per item or per batch
    bug, crash = errors
    assert "internal_error: KeyError" in bug and "score None" in bug
    assert "Traceback (most recent call last)" in bug and 'raise KeyError("a bug of ours")' in bug
    assert "comparison_error: TypeError" in crash and "score 0.0" in crash
    assert "answer 'crash', reference 'x'" in crash and "TypeError: deep in sympy" in crash


def test_a_verifier_that_raises_checking_every_answer_stops_training():
    """Zeros from a check that always raises (a broken library) are no reward signal: they count as failed batches."""
    reward = as_reward_function("raises_checking_for_reward_tests", max_failed_batches=2)
    assert reward(prompts=None, completions=["crash", "judge"], answer=["x", "x"]) == [0.0, 0.0]
    with pytest.raises(RuntimeError, match=r"2 batches in a row.*'comparison_error: TypeError' x2"):
        reward(prompts=None, completions=["crash"], answer=["x"])
    reward(prompts=None, completions=["crash"], answer=["x"])  # the count restarted after raising
    assert reward(prompts=None, completions=["crash", "x"], answer=["x", "x"]) == [0.0, 1.0]  # a verdict resets it
    reward(prompts=None, completions=["crash"], answer=["x"])


def test_a_batch_without_check_errors_logs_nothing(caplog):
    with caplog.at_level(logging.WARNING, logger="trl_grpo_ext.verifiers"):
        call(as_reward_function("raises_checking_for_reward_tests"), ["x", "y"], ["x", "x"])
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


@pytest.mark.parametrize(
    "reference, reason",
    [
        ("raise", "internal_error: OSError: sandbox did not start"),
        ("short", "internal_error: TypeError: verify_batch returned list [], not 2 results"),
        ("nan", "internal_error: score nan is not a finite number"),
        ("zero", "internal_error: worker died"),  # a verifier that scores its own failure 0.0 gets None
    ],
)
def test_a_verify_batch_that_breaks_the_contract_gives_none(reference, reason):
    rewards, metrics, extra = call(as_reward_function("broken_batch_for_reward_tests"), ["a", "b"], [reference] * 2)
    assert rewards == [None, None]
    assert all(r.startswith(reason) for r in extra["broken_batch_for_reward_tests_reason"])
    assert metrics["broken_batch_for_reward_tests/internal_error_rate"] == 1.0
    assert "broken_batch_for_reward_tests/mean_score" not in metrics  # no score is no mean, not a mean of 0


def test_consecutive_failed_batches_raise_with_the_reasons():
    reward = as_reward_function("fails_on_request_for_reward_tests", max_failed_batches=3)
    for _ in range(2):
        assert reward(prompts=None, completions=["fail", "fail"], answer=["x", "x"]) == [None, None]
    with pytest.raises(RuntimeError, match=r"(?s)3 batches in a row.*max_failed_batches=3.*RuntimeError: boom"):
        reward(prompts=None, completions=["fail"], answer=["x"])


def test_a_batch_with_one_verdict_resets_the_count():
    reward = as_reward_function("fails_on_request_for_reward_tests", max_failed_batches=2)
    reward(prompts=None, completions=["fail"], answer=["x"])
    assert reward(prompts=None, completions=["fail", "x"], answer=["x", "x"]) == [None, 1.0]
    reward(prompts=None, completions=["fail"], answer=["x"])
    with pytest.raises(RuntimeError, match="fails_on_request_for_reward_tests"):
        reward(prompts=None, completions=["fail"], answer=["x"])


def test_batches_the_verifier_never_sees_do_not_count():
    reward = as_reward_function("fails_on_request_for_reward_tests", max_failed_batches=2)
    reward(prompts=None, completions=["fail"], answer=["x"])
    assert reward(prompts=None, completions=[], answer=[]) == []
    assert reward(prompts=None, completions=[None, "x"], answer=["x", None]) == [0.0, None]
    with pytest.raises(RuntimeError, match="2 batches in a row"):
        reward(prompts=None, completions=["fail"], answer=["x"])


def test_a_verify_batch_that_raises_also_stops_training():
    reward = as_reward_function("broken_batch_for_reward_tests", max_failed_batches=1)
    with pytest.raises(RuntimeError, match="OSError: sandbox did not start"):
        reward(prompts=None, completions=["a"], answer=["raise"])


@pytest.mark.parametrize("value", [0, -1, 1.5, True, "3", None])
def test_max_failed_batches_is_validated(value):
    with pytest.raises(ValueError, match=rf"max_failed_batches={value!r} must be an integer >= 1"):
        as_reward_function("fails_on_request_for_reward_tests", max_failed_batches=value)


# -- bad input never raises into the trainer --------------------------------------------------------------------------

BAD_COMPLETIONS = [
    None,
    42,
    1.5,
    b"bytes",
    [],
    [1, 2],
    ["a", "b"],
    {"foo": "bar"},
    [{"foo": "bar"}],
    [{"role": "assistant", "content": "x"}, 7],
    {"role": "assistant", "content": 5},
    [{"role": "assistant", "content": [{"type": "text", "text": 3}]}],
    [{"role": 1, "content": "x"}],
]


@pytest.mark.parametrize("completion", BAD_COMPLETIONS)
def test_bad_completions_score_zero_with_a_reason(completion):
    rewards, metrics, extra = call(as_reward_function("exact_for_reward_tests"), [completion], ["x"])
    assert rewards == [0.0]
    assert extra["exact_for_reward_tests_reason"][0].startswith("bad_completion: ")
    assert metrics["exact_for_reward_tests/bad_completion_rate"] == 1.0


@pytest.mark.parametrize("completion", BAD_COMPLETIONS)
def test_completion_text_rejects_what_is_not_a_conversation(completion):
    with pytest.raises(TypeError):
        completion_text(completion)


@pytest.mark.parametrize("reference", [None, float("nan")])
def test_missing_references_never_reach_the_verifier(reference):
    reward = as_reward_function("fails_on_request_for_reward_tests", max_failed_batches=1)
    rewards, _, extra = call(reward, ["fail"], [reference])
    assert rewards == [None]
    assert extra["fails_on_request_for_reward_tests_reason"] == ["unusable_reference: missing"]


def test_function_verifier_called_directly_guards_its_input():
    verifier = get_verifier("fails_on_request_for_reward_tests")
    assert verifier.verify(123, "x") == VerificationResult(0.0, "bad_completion: expected str, got int")
    assert verifier.verify("x", None).score is None
    assert verifier.verify_batch(["fail", "x"], ["x", "x"])[0].reason == "internal_error: RuntimeError: boom"


@pytest.mark.parametrize("returned", ["1.0", float("inf"), [1.0]])
def test_a_function_returning_no_number_is_an_internal_error(returned):
    @register_verifier("returns_for_reward_tests", override=True)
    def returns(completion, reference):
        """Returns what the test says (test helper)."""
        return returned

    result = get_verifier("returns_for_reward_tests").verify("x", "x")
    assert result.score is None and result.reason.startswith("internal_error: returns_for_reward_tests returned")


def test_reference_and_completion_counts_must_agree():
    with pytest.raises(ValueError, match="2 completions and 1 values"):
        as_reward_function("exact_for_reward_tests")(prompts=None, completions=["a", "b"], answer=["a"])


# -- options are checked when the reward function is built ------------------------------------------------------------


@register_verifier("with_options_for_reward_tests")
def with_options(completion, reference, partial=0.0, *, strict: bool):
    """Takes options (test helper)."""
    return float(completion == reference) or partial


@register_verifier("any_options_for_reward_tests")
def any_options(completion, reference, **options):
    """Takes any option (test helper)."""
    return float(completion == reference)


def test_an_option_a_function_verifier_does_not_take_fails_at_build():
    with pytest.raises(ValueError, match=r"does not accept the option\(s\) 'case_sensitive'; accepted options: none"):
        as_reward_function("exact_for_reward_tests", case_sensitive=False)
    with pytest.raises(ValueError, match=r"'parital'; accepted options: partial, strict"):
        as_reward_function("with_options_for_reward_tests", parital=0.1, strict=True)


def test_a_missing_required_option_fails_at_build():
    with pytest.raises(ValueError, match="strict"):
        as_reward_function("with_options_for_reward_tests", partial=0.1)
    reward = as_reward_function("with_options_for_reward_tests", partial=0.1, strict=True)
    assert reward(prompts=None, completions=["a", "b"], answer=["a", "a"]) == [1.0, 0.1]


def test_a_function_with_kwargs_takes_any_option():
    reward = as_reward_function("any_options_for_reward_tests", whatever=1)
    assert reward(prompts=None, completions=["a"], answer=["a"]) == [1.0]


def test_an_option_a_class_verifier_does_not_take_names_the_accepted_ones():
    with pytest.raises(ValueError, match=r"'timeout'.*accepted options: rel_tol, abs_tol, timeout_s"):
        as_reward_function("math", timeout=5)


@register_verifier("type_checked_for_reward_tests")
class TypeChecked(Verifier):
    """Checks an option's type in __init__ (test helper)."""

    def __init__(self, limit: int = 1):
        if limit < 0:  # TypeError for a string
            raise ValueError("limit must be >= 0")


def test_a_type_error_from_a_class_verifier_becomes_a_value_error_naming_the_options():
    with pytest.raises(ValueError, match=r"rejected the options \{'limit': '5'\}.*accepted options: limit"):
        as_reward_function("type_checked_for_reward_tests", limit="5")


# -- submit / collect: the same batch verified in the background ------------------------------------------------------


def test_submit_then_collect_gives_what_a_call_gives(math_reward):
    completions, answers = [r"\boxed{1}", "nothing", r"\boxed{3}", 7], ["1", "2", None, "7"]
    metrics, extra = {}, {}
    pending = math_reward.submit(prompts=[None] * 4, completions=completions, answer=answers)
    rewards = math_reward.collect(
        pending, completions=completions, answer=answers, log_metric=metrics.__setitem__, log_extra=extra.__setitem__
    )
    serial_metrics, serial_extra = {}, {}
    serial = math_reward(
        completions=completions,
        answer=answers,
        log_metric=serial_metrics.__setitem__,
        log_extra=serial_extra.__setitem__,
    )
    assert rewards == serial == [1.0, 0.0, None, 0.0]
    timing = {key for key in {*metrics, *serial_metrics} if key.startswith("math/verify_time_s")}
    assert timing == {f"math/verify_time_s{suffix}" for suffix in ("", "_p50", "_p95", "_max")}  # times differ
    assert {k: v for k, v in metrics.items() if k not in timing} == {
        k: v for k, v in serial_metrics.items() if k not in timing
    }
    assert extra == serial_extra


def test_submit_verifies_on_a_thread_of_its_own():
    threads = []

    @register_verifier("records_thread_for_reward_tests", override=True)
    def records_thread(completion, reference):
        import threading

        threads.append(threading.current_thread().name)
        return 1.0

    reward = as_reward_function("records_thread_for_reward_tests")
    assert reward.collect(reward.submit(completions=["a"], answer=["a"])) == [1.0]
    assert reward(completions=["a"], answer=["a"]) == [1.0]
    assert threads == ["verifier-reward", "MainThread"]


def test_collect_with_another_batch_verifies_that_batch():
    reward = as_reward_function("exact_for_reward_tests")
    pending = reward.submit(completions=["a", "b"], answer=["a", "a"])
    assert reward.collect(pending, completions=["a", "b"], answer=["b", "b"]) == [0.0, 1.0]
    pending = reward.submit(completions=["a", "b"], answer=["a", "a"])
    assert reward.collect(pending, completions=["b", "b"], answer=["a", "a"]) == [0.0, 0.0]


def test_submit_checks_the_batch_at_once():
    reward = as_reward_function("exact_for_reward_tests", reference_column="target")
    with pytest.raises(KeyError, match="target"):
        reward.submit(completions=["a"], answer=["a"])
    with pytest.raises(ValueError, match="2 completions and 1 values"):
        reward.submit(completions=["a", "b"], target=["a"])


def test_failures_count_the_same_through_submit_and_collect():
    reward = as_reward_function("fails_on_request_for_reward_tests", max_failed_batches=2)
    assert reward.collect(reward.submit(completions=["fail"], answer=["x"])) == [None]
    with pytest.raises(RuntimeError, match="2 batches in a row"):
        reward(completions=["fail"], answer=["x"])
    assert reward.collect(reward.submit(completions=["fail"], answer=["x"])) == [None]
    with pytest.raises(RuntimeError, match="2 batches in a row"):
        reward.collect(reward.submit(completions=["fail"], answer=["x"]))


def test_cancel_waits_for_the_verification():
    reward = as_reward_function("fails_on_request_for_reward_tests")
    pending = reward.submit(completions=["x"] * 50, answer=["x"] * 50)
    pending.cancel()
    assert pending._thread is not None and not pending._thread.is_alive()
