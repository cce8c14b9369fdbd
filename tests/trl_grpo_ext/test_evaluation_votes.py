"""maj@k is computed or reported unavailable, never 0 by accident: a plain function's completions vote normalised, a
verifier's extracted answers vote as before, and a correct sample without an answer makes maj@k unavailable."""

from __future__ import annotations

import pytest

from trl_grpo_ext.evaluation import EvalVerifier, evaluate_prompts, summarize, summary_table
from trl_grpo_ext.evaluation.core import grouped_figures
from trl_grpo_ext.evaluation.votes import COMPLETION, EXTRACTED, UNAVAILABLE, normalise_completion
from trl_grpo_ext.verifiers import VerificationResult, Verifier, get_verifier, register_verifier


@register_verifier("full_marks_for_vote_tests")
def full_marks(completion, reference):
    """Full marks for every completion, as the ten-line plain function of docs/verifiers.md can be written."""
    return 1.0


@register_verifier("stripped_match_for_vote_tests")
def stripped_match(completion, reference):
    """Full marks when the stripped completion equals the reference."""
    return float(completion.strip() == str(reference))


def evaluate(name_or_verifier, completions, ks, answer="7"):
    verifier = get_verifier(name_or_verifier) if isinstance(name_or_verifier, str) else name_or_verifier
    rows = [{"prompt": "q0", "answer": answer}]
    results = evaluate_prompts(
        rows, [0], lambda i, p, n, g: list(completions), [EvalVerifier("v", verifier, "answer")], len(completions), ks
    )
    return results, summarize(results, ks)


def test_a_plain_function_that_gives_full_marks_to_everything_has_maj_at_k_one():
    completions = ["The answer is 7.", "It is 8", "  seven ", "7"]
    results, summary = evaluate("full_marks_for_vote_tests", completions, [1, 2, 4])
    assert results[0].votes == COMPLETION
    assert results[0].maj_at == {1: 1.0, 2: 1.0, 4: 1.0}  # every class is correct, so every tie share is 1
    assert summary["pass@1"]["mean"] == 1.0 and summary["maj@1"]["mean"] == 1.0 and summary["maj@4"]["mean"] == 1.0
    assert summary["maj_votes"] == {EXTRACTED: 0, COMPLETION: 1, UNAVAILABLE: 0}
    assert "on 1 prompts the verifier extracted no answer, so the normalised completions voted" in (
        summary_table(summary)
    )


def test_normalised_completions_vote_as_one_class():
    completions = ["7", " 7\n", "8", "7 ", "8", "8"]
    results, summary = evaluate("stripped_match_for_vote_tests", completions, [6, 3])
    assert results[0].correct == 3
    # classes: 7, 7, 8, 7, 8, 8 -> a 3 - 3 tie over 6 (credit 1/2); blocks (7, 7, 8) right, (7, 8, 8) wrong
    assert results[0].maj_at == {6: 0.5, 3: 0.5}
    assert results[0].majority_answer == "7"
    assert summary["maj@6"]["mean"] == 0.5


def test_normalisation_keeps_case_and_punctuation_and_folds_whitespace_and_width():
    assert normalise_completion("  x =\t\n 2.\u00a0 ") == "x = 2."
    assert normalise_completion("\uff17") == "7"  # fullwidth digit, NFKC
    assert normalise_completion("Yes") != normalise_completion("yes")


class ExtractsOnlyWrongAnswers(Verifier):
    """Correct for "7" but returns an extracted answer only for the wrong completions."""

    def verify(self, completion, reference):
        if completion == reference:
            return VerificationResult(1.0, "correct")
        return VerificationResult(0.0, "wrong", extracted=completion)


def test_a_correct_sample_without_an_answer_makes_maj_at_k_unavailable_not_zero():
    results, summary = evaluate(ExtractsOnlyWrongAnswers(), ["7", "7", "8"], [1, 3])
    assert results[0].votes == UNAVAILABLE and results[0].maj_at == {1: None, 3: None}
    assert results[0].pass_at[1] == pytest.approx(2 / 3)
    assert summary["maj@1"]["mean"] is None and summary["maj@3"]["mean"] is None
    assert summary["maj@1"]["unavailable"].startswith("1 of 1 prompts: the first verifier returned an extracted")
    table = summary_table(summary)
    assert "| maj@3 | unavailable | |" in table and "maj@k unavailable: 1 of 1 prompts" in table


def test_training_logs_no_maj_at_k_for_a_batch_where_it_is_unavailable():
    correct = [True, False, True, True]
    with pytest.warns(UserWarning, match="eval maj@k is not logged for this batch"):
        figures = grouped_figures(correct, ["7", "8", "7", "7"], [None, "8", None, None], 2, [1, 2], Verifier())
    assert figures["maj@1"] == [] and figures["maj@2"] == [] and figures["pass@1"] == [0.5, 1.0]
    plain = grouped_figures(correct, ["7", "8", "7", "7"], [None] * 4, 2, [1, 2], Verifier())
    assert plain["maj@1"] == [0.5, 1.0] and plain["maj@2"] == [0.5, 1.0]


def test_extracted_answers_still_vote_and_samples_without_one_abstain():
    class Exact(Verifier):
        def verify(self, completion, reference):
            answer = completion.removeprefix("answer: ") if completion.startswith("answer: ") else None
            return VerificationResult(float(answer == reference), "scored", extracted=answer)

    results, _ = evaluate(Exact(), ["answer: 7", "rambling", "rambling", "answer: 8"], [4])
    assert results[0].votes == EXTRACTED  # "rambling" twice would win a vote of completions
    assert results[0].maj_at[4] == 0.5 and results[0].majority_answer == "7"
