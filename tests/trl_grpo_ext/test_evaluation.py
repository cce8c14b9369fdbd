"""The evaluation core: estimators against exact enumeration, vote tables, interval coverage, a stub generator end to
end, equivalent answers under the real math verifier, and the pass-rate prefilter."""

from __future__ import annotations

import itertools
import logging
from fractions import Fraction
from math import comb

import numpy as np
import pytest

from trl_grpo_ext.evaluation import (
    EvalVerifier,
    bootstrap_mean_ci,
    evaluate_prompts,
    maj_at_k,
    pass_at_k,
    pass_rate_rows,
    summarize,
    vote,
)
from trl_grpo_ext.evaluation.core import grouped_figures
from trl_grpo_ext.evaluation.equivalence import answer_classes, group_answers
from trl_grpo_ext.verifiers import VerificationResult, Verifier, get_verifier


class ExactAnswer(Verifier):
    """The completion, stripped, is the answer; full marks when it equals the reference."""

    name = "exact_answer"

    def verify(self, completion, reference):
        if reference is None:
            return VerificationResult(None, "unusable_reference: missing")
        answer = completion.strip() or None
        return VerificationResult(float(answer == str(reference)), "scored", extracted=answer)


def enumerated_pass_at_k(n: int, c: int, k: int) -> Fraction:
    """Share of the k-subsets of n samples (the first c correct) holding at least one correct sample."""
    subsets = list(itertools.combinations(range(n), k))
    return Fraction(sum(any(i < c for i in s) for s in subsets), len(subsets))


@pytest.mark.parametrize("n", range(1, 9))
def test_pass_at_k_equals_exact_enumeration_over_subsets(n):
    for c in range(n + 1):
        for k in range(1, n + 1):
            assert pass_at_k(n, c, k) == pytest.approx(float(enumerated_pass_at_k(n, c, k)), abs=1e-12)


def test_pass_at_k_is_stable_where_the_binomials_overflow_a_float():
    for n, c, k in [(2000, 3, 100), (5000, 1, 1), (5000, 4990, 64), (1024, 0, 512), (3000, 17, 1000)]:
        exact = 1 - Fraction(comb(n - c, k), comb(n, k))
        assert pass_at_k(n, c, k) == pytest.approx(float(exact), rel=1e-10, abs=1e-15)
    with pytest.raises(OverflowError):
        float(comb(2000, 1000))  # why the product form: the textbook ratio of floats cannot even be formed


def test_pass_at_k_rejects_k_beyond_the_samples():
    with pytest.raises(ValueError, match="k=9 must be an integer between 1 and the number of samples per prompt, 8"):
        pass_at_k(8, 2, 9)
    with pytest.raises(ValueError, match="correct=9"):
        pass_at_k(8, 9, 1)


@pytest.mark.parametrize(
    "classes, correct, winner, credit",
    [
        ([0, 0, 1], {0}, 0, 1.0),  # clear majority, correct
        ([0, 1, 1], {0}, 1, 0.0),  # clear majority, wrong
        ([0, 1], {0}, 0, 0.5),  # two-way tie: half credit; winner shown is the first seen
        ([2, 1, 2, 1, 0], {1}, 2, 0.5),  # tie between 2 and 1, one of them correct
        ([0, 1, 2], {0, 2}, 0, 2 / 3),  # three-way tie, two correct classes
        ([None, None, 1], set(), 1, 0.0),  # abstentions do not vote
        ([None, 0, None], {0}, 0, 1.0),  # one vote among abstentions wins
        ([None, None], {0}, None, 0.0),  # nobody answered: wrong
    ],
)
def test_vote_tables(classes, correct, winner, credit):
    assert vote(classes, correct) == (winner, pytest.approx(credit))


def test_maj_at_k_averages_disjoint_blocks():
    classes = [0, 0, 1, 1, 1, 0, None, None]
    assert maj_at_k(classes, {0}, 8) == 0.5  # 3 against 3
    assert maj_at_k(classes, {0}, 4) == 0.5  # [0,0,1,1] tie -> 0.5; [1,0,-,-] tie -> 0.5
    assert maj_at_k(classes, {0}, 2) == pytest.approx((1 + 0 + 0.5 + 0) / 4)
    assert maj_at_k(classes, {0}, 3) == pytest.approx((1 + 0) / 2)  # two blocks of 3, the last 2 samples unused
    assert maj_at_k(classes, {0}, 1) == pytest.approx(3 / 8)  # maj@1 is pass@1 when every sample answers


def test_bootstrap_interval_covers_the_population_mean_about_95_percent_of_draws():
    rng = np.random.default_rng(1234)
    true_mean = 1 / 3  # E[c / 4] with p ~ Beta(1, 2) and c ~ Binomial(4, p)
    draws, covered = 400, 0
    for draw in range(draws):
        values = rng.binomial(4, rng.beta(1, 2, size=100)) / 4
        lo, hi = bootstrap_mean_ci(values, seed=draw, resamples=2000)["ci95"]
        covered += lo <= true_mean <= hi
    assert 0.92 <= covered / draws <= 0.975, covered / draws


def test_bootstrap_interval_is_seeded_and_needs_two_prompts():
    values = list(np.random.default_rng(0).random(30))
    assert bootstrap_mean_ci(values, seed=3) == bootstrap_mean_ci(values, seed=3)
    assert bootstrap_mean_ci(values, seed=3)["ci95"] != bootstrap_mean_ci(values, seed=4)["ci95"]
    assert bootstrap_mean_ci([0.5]) == {"mean": 0.5, "ci95": None, "n": 1}


def stub_sampler(correct_counts, n, answers):
    """Prompt i gets correct_counts[i] right answers then wrong ones ("x"); greedy is right where i is even."""

    def sample(index, prompt, count, greedy):
        assert prompt == f"q{index}"
        if greedy:
            return [answers[index] if index % 2 == 0 else "x"]
        assert count == n
        right = correct_counts[index]
        return [answers[index]] * right + ["x"] * (n - right)

    return sample


def test_stub_generator_gives_the_known_pass_at_k_end_to_end():
    n, ks = 8, [1, 4, 8]
    correct_counts = [0, 1, 3, 8, 5, 2]
    answers = [str(i) for i in range(len(correct_counts))]
    rows = [{"prompt": f"q{i}", "answer": a} for i, a in enumerate(answers)]
    verifiers = [EvalVerifier("exact_answer", ExactAnswer(), "answer")]
    sampler = stub_sampler(correct_counts, n, answers)
    results = evaluate_prompts(rows, range(len(rows)), sampler, verifiers, n, ks, greedy=True)
    for result, c in zip(results, correct_counts):
        assert (result.n, result.correct, result.unscored) == (n, c, 0)
        for k in ks:
            assert result.pass_at[k] == pytest.approx(float(enumerated_pass_at_k(n, c, k)))
        assert result.maj_at[8] == (1.0 if c > n - c else 0.5 if c == n - c else 0.0)
        assert result.majority_answer == (
            answers[result.index] if c > n - c else "x" if c < n - c else result.answers[0]
        )
        assert result.greedy_correct == (result.index % 2 == 0)
    summary = summarize(results, ks, seed=0)
    for k in ks:
        expected = sum(float(enumerated_pass_at_k(n, c, k)) for c in correct_counts) / len(correct_counts)
        assert summary[f"pass@{k}"]["mean"] == pytest.approx(expected)
        lo, hi = summary[f"pass@{k}"]["ci95"]
        assert lo <= expected <= hi
    assert summary["greedy"]["mean"] == pytest.approx(3 / 6)
    assert (summary["n_prompts"], summary["n_samples"], summary["unscored_samples"]) == (6, 8, 0)


def test_samples_without_a_verdict_are_counted_not_correct():
    rows = [{"prompt": "q0", "answer": None}, {"prompt": "q1", "answer": "1"}]
    verifiers = [EvalVerifier("exact_answer", ExactAnswer(), "answer")]
    results = evaluate_prompts(rows, [0, 1], stub_sampler([2, 2], 2, ["0", "1"]), verifiers, 2, [1])
    assert [(r.correct, r.unscored) for r in results] == [(0, 2), (2, 0)]
    assert summarize(results, [1])["unscored_samples"] == 2


def test_settings_are_checked_before_sampling():
    verifiers = [EvalVerifier("exact_answer", ExactAnswer(), "answer")]
    with pytest.raises(ValueError, match="k=16 must be an integer between 1 and the number of samples per prompt, 8"):
        evaluate_prompts([{"prompt": "q0"}], [0], None, verifiers, 8, [1, 16])
    with pytest.raises(ValueError, match="num_samples=0"):
        evaluate_prompts([{"prompt": "q0"}], [0], None, verifiers, 0, [1])


def test_math_verifier_groups_equivalent_answers_into_one_vote():
    math = get_verifier("math")
    try:
        completions = [r"\boxed{\frac{1}{2}}", r"\boxed{0.5}", r"\boxed{3}", r"\boxed{2/4}", "", r"\boxed{3}"]
        extracted = [r.extracted for r in math.verify_batch(completions, ["0.5"] * len(completions))]
        classes = group_answers(completions, extracted, math)
        assert classes == [0, 0, 1, 0, None, 1]  # as strings, 3 (twice) would win
        rows = [{"prompt": "q0", "answer": "1/2"}]
        results = evaluate_prompts(
            rows, [0], lambda i, p, n, g: completions, [EvalVerifier("math", math, "answer")], 6, [6]
        )
        assert results[0].correct == 3 and results[0].maj_at[6] == 1.0
    finally:
        math.close()


def test_prefilter_keeps_exactly_the_rows_in_range():
    verifiers = [EvalVerifier("exact_answer", ExactAnswer(), "answer")]
    correct_counts = [0, 1, 2, 3, 4]
    rows = [{"prompt": f"q{i}", "answer": str(i)} for i in range(5)]
    results = evaluate_prompts(
        rows, range(5), stub_sampler(correct_counts, 4, [r["answer"] for r in rows]), verifiers, 4, [1]
    )
    assert pass_rate_rows(results, 0.25, 0.75) == [1, 2, 3]  # both ends included
    assert pass_rate_rows(results, 0.0, 0.0) == [0]
    assert pass_rate_rows(results, 0.3, 0.7) == [2]
    with pytest.raises(ValueError, match="need 0 <= LO <= HI <= 1"):
        pass_rate_rows(results, 0.8, 0.2)


class Broken(Verifier):
    def verify_batch(self, completions, references):
        raise RuntimeError("worker pool died")


def test_a_verifier_that_raises_gives_unscored_samples_not_a_crash():
    rows = [{"prompt": "q0", "answer": "0"}]
    results = evaluate_prompts(
        rows, [0], stub_sampler([2], 3, ["0"]), [EvalVerifier("broken", Broken(), "answer")], 3, [1]
    )
    assert (results[0].correct, results[0].unscored, results[0].pass_at[1]) == (0, 3, 0.0)


class HalfEquivalent(Verifier):
    """Every answer is equivalent to every other, except that pairs with "b" as the reference get no verdict."""

    def verify(self, completion, reference):
        if reference == "b":
            return VerificationResult(None, "internal_error: RuntimeError: the pool broke")
        return VerificationResult(1.0, "correct", extracted=completion)


def test_a_verifier_that_raises_leaves_answers_apart_counted_and_logged(caplog):
    """Before, the grouping fell back to string equality with no trace: maj@k changed silently."""
    with caplog.at_level(logging.WARNING, logger="trl_grpo_ext.evaluation.equivalence"):
        classes, ungrouped = answer_classes(["a", "b", "a", "c"], ["a", "b", "a", "c"], Broken())
    assert classes == [0, 1, 0, 2] and ungrouped == 3  # pairs (b, a), (c, a), (c, b)
    assert "Broken gave no verdict on 3 of 3 answer pairs (verify_batch raised RuntimeError: worker pool died)" in (
        caplog.text
    )


def test_pairs_with_an_internal_error_are_not_merged_and_are_counted(caplog):
    with caplog.at_level(logging.WARNING, logger="trl_grpo_ext.evaluation.equivalence"):
        classes, ungrouped = answer_classes(["a", "b", "c"], ["a", "b", "c"], HalfEquivalent())
    assert classes == [0, 0, 0] and ungrouped == 1  # (c, b) has no verdict; (c, a) merges c into a's class
    assert "no verdict on 1 of 3 answer pairs (internal_error: RuntimeError: the pool broke)" in caplog.text


class BreaksWhenGrouping(ExactAnswer):
    """Scores against the row's reference ("0"), raises when asked with another answer as the reference."""

    def verify_batch(self, completions, references):
        if set(references) != {"0"}:
            raise RuntimeError("worker pool died")
        return super().verify_batch(completions, references)


def test_ungrouped_pairs_reach_the_prompt_results_the_summary_and_the_training_metrics():
    rows = [{"prompt": "q0", "answer": "0"}]
    verifiers = [EvalVerifier("b", BreaksWhenGrouping(), "answer")]
    results = evaluate_prompts(rows, [0], lambda i, p, n, g: ["0", "1", "2"], verifiers, 3, [3])
    assert results[0].ungrouped == 3 and results[0].to_json()["ungrouped"] == 3
    assert summarize(results, [3])["ungrouped_answer_pairs"] == 3
    figures = grouped_figures([False] * 4, ["a", "b", "a", "a"], ["a", "b", "a", "a"], 2, [2], Broken())
    assert figures["maj_ungrouped"] == [1.0, 0.0]
    assert group_answers(["a", "a"], ["a", "a"], Broken()) == [0, 0]  # equal strings need no verdict


@pytest.mark.parametrize("chunk", [1, 2, 3])
@pytest.mark.parametrize("world_size", [1, 2, 3])
def test_shards_deal_whole_chunks_and_cover_every_row_once(chunk, world_size):
    from trl_grpo_ext.evaluation.runner import shard

    shards = [shard(10, rank, world_size, chunk) for rank in range(world_size)]
    assert sorted(row for rows in shards for row in rows) == list(range(10))
    for rank, rows in enumerate(shards):
        chunks = [rows[i : i + chunk] for i in range(0, len(rows), chunk)]
        assert all(
            c == list(range(c[0], min(c[0] + chunk, 10))) and (c[0] // chunk) % world_size == rank for c in chunks
        )


def test_prompts_per_call_samples_consecutive_rows_together_with_the_same_figures():
    calls = []

    class Recorder:
        def __call__(self, index, prompt, n, greedy):
            calls.append([index])
            return ["1"] * n if index % 2 else ["0"] * n

        def sample_many(self, items, n, greedy):
            calls.append([i for i, _ in items])
            return [self(i, p, n, greedy) for i, p in items][: len(items)]

    rows = [{"prompt": f"q{i}", "answer": "1"} for i in range(5)]
    verifiers = [EvalVerifier("math", get_verifier("math"), "answer")]
    one = evaluate_prompts(rows, range(5), Recorder(), verifiers, 2, [1])
    calls.clear()
    together = evaluate_prompts(rows, range(5), Recorder(), verifiers, 2, [1], prompts_per_call=2)
    assert [c for c in calls if len(c) > 1] == [[0, 1], [2, 3]]
    assert [r.correct for r in together] == [r.correct for r in one] == [0, 2, 0, 2, 0]
    with pytest.raises(ValueError, match="prompts_per_call=0"):
        evaluate_prompts(rows, range(5), Recorder(), verifiers, 2, [1], prompts_per_call=0)
