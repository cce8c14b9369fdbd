"""Extraction runs in the trainer's process on untrusted text, outside any deadline: its cost must stay linear in the
text's length. Each pathological completion here (about 50 - 120 kB, far beyond a real completion) must be read in
well under a second of CPU time, where a superlinear extractor has spent 35 s on a long sentence of numbers that
commits to none."""

from __future__ import annotations

import time

import pytest

from trl_grpo_ext.verifiers.math.extract import extract_answer

# Generous: the worst case measured here is about 0.5 s (5000 identical boxes), the typical one under 0.1 s.
MAX_CPU_SECONDS = 3.0

PATHOLOGICAL = {
    "numbers that commit to nothing": ("so we add 3 to 5 and 7 to 9 " * 3000) + ".",
    "one sentence of numbers": " ".join(str(i) for i in range(20000)),
    "a long run of spaces": "a" + " " * 100000 + "b",
    "a list with no end": "1, " * 20000 + "x",
    "a list that ends in a word": "1, " * 20000 + "1 x 5.",
    "an and-list that ends in a word": "1 and " * 20000 + "1 x 5.",
    "a list joined by and": "1 and " * 20000 + "2",
    "an ellipsis list": "1, ..., " * 10000 + "2",
    "stating verbs": "is " * 30000 + "7",
    "equals signs": "= " * 30000 + "7.",
    "retractions after a box": "\\boxed{5} " + "wait " * 20000 + "7",
    "identical boxes": "\\boxed{1} " * 5000,
    "different boxes": " ".join(f"\\boxed{{{i}}}" for i in range(3000)),
    "anchors": "The answer is 5. " * 5000,
    "checks": "Checking. " * 20000 + "7.",
    "markdown bold": "**" * 20000 + "7",
    "dollar signs": "$" * 50000 + "7",
    "Unicode minus signs": "−" * 30000 + "7",
    "capital letters": "A " * 30000,
    "superscript openings": "x^{" * 20000 + "2",
}


@pytest.mark.parametrize("name", list(PATHOLOGICAL))
def test_extraction_is_linear_on_pathological_text(name):
    text = PATHOLOGICAL[name]
    start = time.process_time()
    extract_answer(text)
    extract_answer(text, letters="ABCDE")
    assert time.process_time() - start < MAX_CPU_SECONDS, name
