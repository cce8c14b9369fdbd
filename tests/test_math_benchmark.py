"""The math benchmark's guard: its cold pass is cold only if no warm-up input occurs in the timed data."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from trl_grpo_ext.verifiers.math.warmup import WARM_UP_LEAVES, WARM_UP_PAIRS


def load_benchmark():
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "math_verifier.py"
    spec = importlib.util.spec_from_file_location("math_verifier_benchmark", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_warm_up_overlap_finds_warm_up_inputs_in_the_data():
    benchmark = load_benchmark()
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
