"""Malformed completions and references thrown at every built-in verifier and at the reward adapter (hypothesis).

Whatever comes in, nothing raises, a score is None or a float in [0, 1], and a reason says why. A completion that is
not text scores 0 (`bad_completion`), a missing reference gives None (`unusable_reference`), and neither is ever
the verifier's own failure (`internal_error`).
"""

from __future__ import annotations

import math

import pytest
from code_verifier_helpers import make_code_verifier
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trl_grpo_ext.verifiers import as_reward_function, get_verifier, list_verifiers
from trl_grpo_ext.verifiers.core.registry import _VERIFIERS

# Fast settings per built-in verifier, and how many examples each property draws: code items run in a sandbox.
BUILT_IN = {
    "math": ({"timeout_s": 5.0, "n_workers": 1}, 60),
    "code": ({"timeout_s": 5.0, "workers": 1}, 6),
}
GOOD_REFERENCE = {"math": "42", "code": "assert add(1, 2) == 3"}

_leaf = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.binary(max_size=8)
    | st.text(max_size=8)
)
_key = st.text(max_size=8).filter(lambda k: k not in ("role", "content"))
# Nested junk with no message in it: dict keys are never "role" or "content".
_junk = st.recursive(
    _leaf, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_key, inner, max_size=3), max_leaves=6
)
NOT_TEXT = _junk.filter(lambda value: not isinstance(value, str))
BROKEN_MESSAGES = st.sampled_from(
    [
        {"role": "assistant", "content": 5},
        [{"role": "assistant", "content": [{"type": "text", "text": 3}]}],
        [{"role": 1, "content": "x"}],
        [{"role": "assistant", "content": "x"}, 7],
        [{"role": "assistant", "content": {"text": "x"}}],
    ]
)
NOT_A_COMPLETION = NOT_TEXT | BROKEN_MESSAGES
TEXT = st.text(max_size=40) | st.sampled_from(["\\boxed{42}", "```python\ndef add(a, b):\n    return a + b\n```"])


def built_in_names() -> list[str]:
    return sorted(n for n in list_verifiers() if _VERIFIERS.get(n).__module__.startswith("trl_grpo_ext.verifiers."))


def test_every_built_in_verifier_is_covered():
    assert built_in_names() == sorted(BUILT_IN)


def build(name: str):
    options, _ = BUILT_IN[name]
    return make_code_verifier(**options) if name == "code" else get_verifier(name, **options)


@pytest.fixture(scope="module", params=sorted(BUILT_IN))
def verifier(request):
    verifier = build(request.param)
    yield verifier
    verifier.close()


@pytest.fixture(scope="module", params=sorted(BUILT_IN))
def reward(request):
    options, _ = BUILT_IN[request.param]
    if request.param == "code":
        make_code_verifier(**options).close()  # skips where the code verifier cannot run
    reward = as_reward_function(request.param, **options)
    yield reward
    reward.verifier.close()


def check(name: str, strategy, prop) -> None:
    """Run `prop` on `strategy` with the example budget of verifier `name`, writing no example database."""
    examples = BUILT_IN[name][1]
    too_slow = [HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large]
    settings(max_examples=examples, deadline=None, database=None, suppress_health_check=too_slow)(
        given(strategy)(prop)
    )()


def assert_valid(result) -> None:
    assert isinstance(result.reason, str) and result.reason
    assert result.score is None or (isinstance(result.score, float) and 0.0 <= result.score <= 1.0)


def test_a_completion_that_is_not_text_scores_zero(verifier):
    def prop(completion):
        result = verifier.verify(completion, GOOD_REFERENCE[verifier.name])
        assert_valid(result)
        assert result.score == 0.0 and result.reason.startswith("bad_completion"), result

    check(verifier.name, NOT_TEXT, prop)


def test_a_malformed_reference_never_raises(verifier):
    def prop(pair):
        completion, reference = pair
        result = verifier.verify(completion, reference)
        assert_valid(result)
        assert not result.reason.startswith("internal_error"), result
        if reference is None or (isinstance(reference, float) and math.isnan(reference)):
            assert result.score is None and result.reason.startswith("unusable_reference"), result

    check(verifier.name, st.tuples(TEXT, NOT_TEXT), prop)


def test_the_reward_adapter_survives_any_batch(reward):
    name = reward.__name__.removesuffix("_reward")

    def prop(batch):
        completions = [completion for completion, _ in batch]
        references = [reference for _, reference in batch]
        extra = {}
        scores = reward(prompts=None, completions=completions, answer=references, log_extra=extra.__setitem__)
        assert len(scores) == len(batch)
        for (completion, _), score, reason in zip(batch, scores, extra[f"{name}_reason"]):
            assert isinstance(reason, str) and reason
            assert score is None or (isinstance(score, float) and 0.0 <= score <= 1.0)
            assert not reason.startswith("internal_error"), reason
            if not isinstance(completion, str):
                assert score in (0.0, None) and reason.startswith(("bad_completion", "unusable_reference")), reason

    item = st.tuples(NOT_A_COMPLETION | TEXT, NOT_TEXT | st.just(GOOD_REFERENCE[name]))
    check(name, st.lists(item, max_size=4), prop)
