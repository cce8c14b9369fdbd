"""A verifier reward function pickles as what it was built from, and works where it is unpickled."""

import pickle

import pytest

from trl_grpo_ext.verifiers import VerifierReward, as_reward_function, register_verifier


@register_verifier("exact_for_pickling_tests")
def exact_for_pickling_tests(completion, reference, strip=True):
    """Exact string match, optionally after stripping whitespace (test helper)."""
    return float((completion.strip() if strip else completion) == reference)


def test_pickles_as_name_and_options_not_as_workers():
    reward = as_reward_function(
        "math", reference_column="gold", max_failed_batches=2, start_workers=False, timeout_s=3.0, n_workers=1
    )
    try:
        assert reward(completions=[r"\boxed{\frac{1}{3}}"], gold=["1/3"]) == [1.0]  # may start the worker pool
        data = pickle.dumps(reward)
        assert b"DeadlinePool" not in data and b"Lock" not in data
        copy = pickle.loads(data)
        assert isinstance(copy, VerifierReward)
        assert copy.__name__ == copy.__qualname__ == "math_reward"
        assert (copy.reference_column, copy.max_failed_batches) == ("gold", 2)
        assert copy.verifier is not reward.verifier
        assert (copy.verifier.timeout_s, copy.verifier.n_workers) == (3.0, 1)
        assert copy.verifier._pool is None  # start_workers=False: its workers start on first use, where it is used
        assert copy(completions=[r"\boxed{0.5}", "no answer"], gold=["1/2", "1/2"]) == [1.0, 0.0]
        copy.verifier.close()
    finally:
        reward.verifier.close()


def test_unpickled_reward_keeps_options_and_methods():
    reward = pickle.loads(pickle.dumps(as_reward_function("exact_for_pickling_tests", strip=False)))
    assert reward.verifier.options == {"strip": False}
    assert reward(completions=["a ", "a"], answer=["a", "a"]) == [0.0, 1.0]
    pending = reward.submit(completions=["b"], answer=["b"])
    assert reward.collect(pending, completions=["b"], answer=["b"]) == [1.0]


def test_repr_shows_how_to_rebuild_it():
    reward = as_reward_function("exact_for_pickling_tests", reference_column="ref", strip=False)
    assert repr(reward) == (
        "VerifierReward('exact_for_pickling_tests', reference_column='ref', max_failed_batches=3, start_workers=True, "
        "audit_canaries=0, second_opinion=False, audit_log=None, strip=False)"
    )


def test_unpickled_with_start_workers_starts_them_in_the_background_where_it_arrives():
    reward = as_reward_function("math", n_workers=1)  # start_workers=True, the default: its workers start here
    arrived = pickle.loads(pickle.dumps(reward))
    try:
        assert arrived.start_workers and arrived.verifier._pool is not None  # started again, not waited for
        assert arrived.verifier._pool is not reward.verifier._pool
        assert arrived(completions=[r"\boxed{2}"], answer=["2"]) == [1.0]  # decided without waiting for them
    finally:
        arrived.verifier.close()
        reward.verifier.close()


@pytest.mark.parametrize("protocol", [2, pickle.HIGHEST_PROTOCOL])
def test_every_pickle_protocol(protocol):
    reward = pickle.loads(pickle.dumps(as_reward_function("exact_for_pickling_tests"), protocol=protocol))
    assert reward.__name__ == "exact_for_pickling_tests_reward"
    assert reward(completions=[" x "], answer=["x"]) == [1.0]
