"""`as_reward_function`: the TRL reward-function contract around any registered verifier."""

import pytest

from trl_grpo_ext.verifiers import as_reward_function, register_verifier
from trl_grpo_ext.verifiers.reward import completion_text


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
        as_reward_function("math", reference_column="solution")(prompts=[None], completions=["1"], answer=["1"])


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


def test_a_failing_verifier_scores_zero_instead_of_raising():
    @register_verifier("always_raises_for_reward_tests")
    def always_raises(completion, reference):
        """Raises (test helper)."""
        raise RuntimeError("boom")

    reward = as_reward_function("always_raises_for_reward_tests")
    assert reward(prompts=[None], completions=["x"], answer=["x"]) == [0.0]
