"""The live verifier audit: canaries built from a batch's references are scored beside it, never returned as rewards,
and their false-positive and false-negative rates are logged; a wrong canary paid is logged with its text."""

from __future__ import annotations

import json
import logging
import pickle
import random

import pytest

from trl_grpo_ext.verifiers import VerificationResult, Verifier, as_reward_function, register_verifier
from trl_grpo_ext.verifiers.math.canaries import canaries, wrong_values


@pytest.mark.parametrize(
    ("answer", "wrong"),
    [
        ("42", ["43", "420", "-42"]),
        ("-3", ["-2", "-30", "3"]),
        ("0.5", ["1.5", "5.0", "-0.5"]),
        ("0", ["1", "-1"]),  # ten times zero and minus zero are zero
        ("123456789012345678", ["123456789012345679", "1234567890123456780", "-123456789012345678"]),
        (r"\frac{3}{4}", [r"(\frac{3}{4}) + 1"]),
    ],
)
def test_wrong_values_differ_from_the_answer_whatever_it_is(answer, wrong):
    assert wrong_values(answer) == wrong


def test_canaries_of_a_reference_are_wrong_in_each_form_and_right_in_two():
    wrong, right = canaries(r"\boxed{12}", random.Random(0))
    assert len(wrong) == 3 and len(right) == 2
    assert all("12" in text or "13" in text or "120" in text for text in wrong)
    assert all("12" in text and "13" not in text and "120" not in text for text in right)
    letter_wrong, letter_right = canaries("C", random.Random(0))
    assert letter_right == ["The answer is (C)."] and len(letter_wrong) == 3
    assert all("(C)" not in text for text in letter_wrong)
    assert canaries("", random.Random(0)) == ([], [])


def audit_metrics(reward, completions, answers):
    metrics = {}
    rewards = reward(prompts=None, completions=completions, answer=answers, log_metric=metrics.__setitem__)
    return rewards, metrics


def test_the_math_verifier_pays_no_wrong_canary_and_every_right_one():
    answers = ["12", "0.5", r"\frac{3}{4}", "x^2+1", "2:3:4", "B"]
    completions = [r"\boxed{12}", r"\boxed{1}", r"\boxed{3/4}", "no idea", r"\boxed{2:3:4}", "(B)"]
    audited = as_reward_function("math", audit_canaries=len(answers))
    plain = as_reward_function("math")
    try:
        rewards, metrics = audit_metrics(audited, completions, answers)
        assert rewards == audit_metrics(plain, completions, answers)[0]  # canaries are never rewards
        assert len(rewards) == len(completions)
        assert metrics["math/canary_false_positive"] == 0.0 and metrics["math/canary_false_negative"] == 0.0
        assert metrics["math/canary_time_s"] > 0
    finally:
        audited.verifier.close()
        plain.verifier.close()


@register_verifier("pays_everything_for_audit_tests")
class PaysEverything(Verifier):
    """The worst verifier: every answer is right. Its canaries are the math verifier's."""

    def verify(self, completion, reference):
        return VerificationResult(1.0, "correct")

    def canaries(self, reference, rng):
        return canaries(str(reference), rng)


def test_a_verifier_that_pays_wrong_answers_shows_in_the_rates_and_the_log(caplog):
    reward = as_reward_function("pays_everything_for_audit_tests", audit_canaries=1)
    with caplog.at_level(logging.WARNING, logger="trl_grpo_ext.verifiers.audit"):
        rewards, metrics = audit_metrics(reward, ["anything"] * 4, ["7"] * 4)
    assert rewards == [1.0] * 4
    assert metrics["pays_everything_for_audit_tests/canary_false_positive"] == 1.0
    assert metrics["pays_everything_for_audit_tests/canary_false_negative"] == 0.0
    (warning,) = [r.getMessage() for r in caplog.records]
    assert "paid 1.0 to a wrong canary (3 of 3 this batch" in warning and "reference '7'" in warning


def test_the_audit_draws_the_same_canaries_in_every_process():
    """Seeded by the batch's number: two reward functions audit a batch sequence the same way."""
    first, second = (as_reward_function("pays_everything_for_audit_tests", audit_canaries=2) for _ in range(2))
    drawn = []
    for reward in (first, second):
        picked = []
        reward._audit.verifier = type("Recording", (), {})()
        reward._audit.verifier.canaries = lambda ref, rng, picked=picked: picked.append(ref) or ([], [])
        for _ in range(3):
            reward._audit.run([None] * 10, [str(i) for i in range(10)], [])
        drawn.append(picked)
    assert drawn[0] == drawn[1] and len(drawn[0]) == 6 and len(set(drawn[0][:2])) == 2


def test_audit_canaries_is_checked_and_survives_pickling():
    with pytest.raises(ValueError, match=r"audit_canaries=2 needs a verifier with a `canaries` method.*'code'"):
        as_reward_function("code", audit_canaries=2, start_workers=False)
    with pytest.raises(ValueError, match=r"audit_canaries=-1 must be an integer >= 0"):
        as_reward_function("math", audit_canaries=-1, start_workers=False)
    reward = as_reward_function("math", audit_canaries=3, start_workers=False)
    try:
        copy = pickle.loads(pickle.dumps(reward))
        assert copy.audit_canaries == 3 and copy._audit.per_batch == 3
        copy.verifier.close()
    finally:
        reward.verifier.close()


def test_a_second_opinion_logs_where_math_verify_disagrees_and_keeps_the_cases(tmp_path):
    """math-verify pays an unevaluated `3 + 4` (the closed-form rule refuses it) and refuses a ratio written with
    another common factor (`10:4` for `5:2`), which `math` pays: both are disagreements, one of them paid only by us."""
    log = tmp_path / "audit.jsonl"
    reward = as_reward_function("math", n_workers=1, second_opinion=True, audit_log=str(log))
    try:
        completions = [r"\boxed{3+4}", r"\boxed{10:4}", r"\boxed{7}", r"\boxed{8}"]
        rewards, metrics = audit_metrics(reward, completions, ["7", "5:2", "7", "7"])
    finally:
        reward.verifier.close()
    assert rewards == [0.0, 1.0, 1.0, 0.0]
    assert metrics["math/second_opinion_disagreement"] == 0.5 and metrics["math/second_opinion_only_ours"] == 0.25
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(r["kind"], r["completion"], r["score"], r["second_opinion"]) for r in rows] == [
        ("disagreement", r"\boxed{3+4}", 0.0, True),
        ("disagreement", r"\boxed{10:4}", 1.0, False),
    ]
    assert rows[0]["reason"].startswith("not_simplified")


def test_a_wrong_canary_paid_is_kept_in_the_audit_log(tmp_path):
    log = tmp_path / "audit.jsonl"
    reward = as_reward_function("pays_everything_for_audit_tests", audit_canaries=1, audit_log=str(log))
    audit_metrics(reward, ["anything"], ["7"])
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(rows) == 3 and all(r["kind"] == "canary_paid" and r["reference"] == "7" for r in rows)
    rng = random.Random("0:0")  # the first batch's generator: it drew the reference, then its canaries
    rng.sample(["7"], 1)
    assert sorted(r["completion"] for r in rows) == sorted(canaries("7", rng)[0])
