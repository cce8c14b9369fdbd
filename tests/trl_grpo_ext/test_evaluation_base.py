"""pass@k of a trained model against its base: per-prompt results built so that the curves and the k from which the
base is ahead are known exactly; and the command writing both models' files and the comparison."""

from __future__ import annotations

import json
from fractions import Fraction
from math import comb

import pytest

from trl_grpo_ext.evaluation import PromptResult
from trl_grpo_ext.evaluation.base_comparison import base_ahead_from, compare_with_base, comparison_table, shown_ks


def results(counts, n):
    """PromptResults with `counts[i]` correct of n samples (the figures compare_with_base does not read left empty)."""
    return [PromptResult(i, n, c, 0, {}, {}, None, 0.0) for i, c in enumerate(counts)]


def exact_pass_at_k(counts, n, k) -> Fraction:
    return sum(1 - Fraction(comb(n - c, k), comb(n, k)) for c in counts) / len(counts)


def test_a_sharpened_policy_falls_behind_its_base_from_a_known_k():
    # Trained: one prompt always solved, one never: pass@k = 1/2 for every k. Base: each prompt solved once in 4:
    # pass@k = k/4, so 1/4, 1/2 (a tie, no lead), 3/4, 1: the base is ahead from k = 3 on.
    comparison = compare_with_base(results([4, 0], 4), results([1, 1], 4), seed=0)
    assert comparison["k"] == [1, 2, 3, 4]
    assert comparison["trained"] == [0.5, 0.5, 0.5, 0.5]
    assert comparison["base"] == pytest.approx([0.25, 0.5, 0.75, 1.0], abs=1e-15)
    assert comparison["base_ahead_from_k"] == 3 and comparison["base_ahead_at"] == [3, 4]
    assert [d["mean"] for d in comparison["difference"]] == pytest.approx([0.25, 0.0, -0.25, -0.5], abs=1e-15)
    assert comparison["difference"][3]["ci95"] == pytest.approx([-1.0, 0.0])  # per prompt: 0 and -1
    table = comparison_table(comparison, "trained", "base")
    assert "| 4 | 0.5000 | 1.0000 | -0.5000 |" in table
    assert "The base model (base) is ahead of trained from k = 3 on, up to k = 4." in table


def test_larger_sets_match_exact_fractions_and_the_crossover():
    # 16 samples; trained solves 3 prompts of 5 every time; base solves each prompt 2 times in 16.
    trained, base = [16, 16, 16, 0, 0], [2, 2, 2, 2, 2]
    comparison = compare_with_base(results(trained, 16), results(base, 16))
    for k in range(1, 17):
        assert comparison["trained"][k - 1] == pytest.approx(float(exact_pass_at_k(trained, 16, k)), abs=1e-12)
        assert comparison["base"][k - 1] == pytest.approx(float(exact_pass_at_k(base, 16, k)), abs=1e-12)
    # base pass@k = 1 - C(14, k)/C(16, k) crosses 3/5 between k = 5 (0.5417) and k = 6 (0.6250)
    assert exact_pass_at_k(base, 16, 5) < Fraction(3, 5) < exact_pass_at_k(base, 16, 6)
    assert comparison["base_ahead_from_k"] == 6 and comparison["base_ahead_at"] == list(range(6, 17))


def test_no_crossover_when_the_trained_model_stays_ahead_or_leads_again_at_n():
    comparison = compare_with_base(results([3, 2], 4), results([1, 1], 4))
    assert comparison["base_ahead_from_k"] is None and comparison["base_ahead_at"] == []
    assert "is not ahead at k = 4 nor at any smaller k." in comparison_table(comparison, "t", "b")
    assert base_ahead_from([0.5, 0.5, 0.9], [0.4, 0.6, 0.8]) is None  # ahead at k = 2 only
    assert base_ahead_from([0.5, 0.5, 0.5], [0.4, 0.6, 0.8]) == 2


def test_mismatched_rows_or_sample_counts_are_refused():
    with pytest.raises(ValueError, match="same rows"):
        compare_with_base(results([1, 1], 4), results([1], 4))
    with pytest.raises(ValueError, match="same samples per prompt; got \\[4, 8\\]"):
        compare_with_base(results([1], 4), results([1], 8))


def test_the_table_shows_powers_of_two_and_n():
    assert shown_ks(1) == [1] and shown_ks(8) == [1, 2, 4, 8] and shown_ks(12) == [1, 2, 4, 8, 12]


def test_evaluate_with_a_base_model_writes_both_and_the_comparison(tmp_path, tiny_model_dir, capsys):
    from trl_grpo_ext.cli import main

    out = tmp_path / "out"
    args = ["evaluate", "--model", tiny_model_dir, "--base_model", tiny_model_dir, "--num_samples", "4",
            "--max_prompts", "3", "--max_completion_length", "1", "--no_progress", "--output_dir", str(out)]  # fmt: skip
    assert main(args) == 0
    comparison = json.loads((out / "pass_at_k_vs_base.json").read_text())
    trained = [json.loads(line) for line in (out / "per_prompt.jsonl").read_text().splitlines()]
    base = [json.loads(line) for line in (out / "base" / "per_prompt.jsonl").read_text().splitlines()]
    assert trained == base  # the same model, prompts, samples and seed
    assert comparison["k"] == [1, 2, 3, 4] and comparison["trained"] == comparison["base"]
    assert comparison["trained"][0] == pytest.approx(sum(r["correct"] for r in trained) / 12)
    assert comparison["base_ahead_from_k"] is None
    printed = capsys.readouterr().out
    assert "pass@k, trained against base:" in printed and f"Every k: {out / 'pass_at_k_vs_base.json'}" in printed
