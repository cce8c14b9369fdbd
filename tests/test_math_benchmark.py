"""The math benchmark's guard: its cold pass is cold only if no warm-up input occurs in the timed data."""

from __future__ import annotations

import json

from benchmark_modules import load_benchmark

from trl_grpo_ext.verifiers.math.warmup import WARM_UP_LEAVES, WARM_UP_PAIRS


def test_warm_up_overlap_finds_warm_up_inputs_in_the_data():
    benchmark = load_benchmark("math_verifier")
    pair_text, leaf = WARM_UP_PAIRS[1][0], WARM_UP_LEAVES[3]
    cases = [
        {"gold": f"${pair_text}$", "pred": "1"},  # a whole case, with delimiters and other spacing
        {"gold": "2", "pred": rf"so the answer is \boxed{{{leaf}}}."},  # inside a longer completion
        {"gold": "x", "pred": "y"},
    ]
    found = benchmark.warm_up_overlap(cases)
    squeeze = "".join
    assert squeeze(pair_text.split()) in found and squeeze(leaf.split()) in found
    assert benchmark.warm_up_overlap([{"gold": r"\frac{123}{457}", "pred": "z^{17}"}]) == []


def test_the_synthetic_grpo_mix_has_the_stated_duplication():
    grpo = load_benchmark("math_grpo")
    cases = [{"gold": f"g{i // 3}", "pred": f"p{i}"} for i in range(30)]  # 10 references, 3 own predictions each
    for distinct in (1, 4, 8):
        groups = grpo.synthetic_groups(cases, distinct, seed=0)
        assert len(groups) == 10 and all(len(slots) == grpo.GROUP_SIZE for _, slots in groups)
        assert all(len(set(slots)) == distinct for _, slots in groups)
        for gold, slots in groups:  # the reference's own predictions come first, then borrowed ones
            own = {case["pred"] for case in cases if case["gold"] == gold}
            assert len(own & set(slots)) == min(3, distinct)
        steps = grpo.steps_of(groups)
        assert [len(c) for c, _ in steps] == [80] and grpo.duplication_rate(steps) == (8 - distinct) / 8
    assert grpo.synthetic_groups(cases, 4, seed=0) == grpo.synthetic_groups(cases, 4, seed=0)


def test_demo_rollouts_are_read_step_by_step(tmp_path):
    grpo = load_benchmark("math_grpo")
    path = tmp_path / "rollouts.jsonl"
    rows = [{"step": s, "completion": c, "reference": "3"} for s, c in ((0, "3"), (0, "4"), (1, "3"))]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    assert grpo.demo_steps(path) == [(["3", "4"], ["3", "3"]), (["3"], ["3"])]
