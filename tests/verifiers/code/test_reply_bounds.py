"""Adversarial suite: what a candidate sends is read in bounded time and memory, and charged to it (issue 33).

Three classes, each with the attacks that found it and attacks of our own:

- the trainer's process compares a stdio program's output with the expected one: pathological outputs (one huge
  token, digits that end in a letter, `1e` repeated, millions of tokens) cost it milliseconds, under a float
  tolerance too, measured as the trainer's own CPU time around `verify`;
- the judge decodes the candidate's replies: sets and dicts whose keys all hash alike (ints that differ by multiples
  of 2**61 - 1, tuples and frozensets of them, floats, complex numbers) are refused in linear time, as are replies
  nested or counted beyond the bounds; each scores 0, never None;
- the judge's memory for a reply is bounded: a reply of nested empty lists, or of tagged values, that would make it
  build gigabytes of objects scores 0 with `reply_too_large`, and the judge child stays within its bound.
"""

from __future__ import annotations

import time

import pytest
from code_verifier_helpers import assert_wrong_answer, make_code_verifier


@pytest.fixture(scope="module")
def verifier():
    v = make_code_verifier(5, float_tolerance=1e-6)
    yield v
    v.close()


# --- 1. The trainer never spends more than linear time on a candidate's output ---------------------------------

OUTPUT_BYTES = (8 << 20) - 64  # just under the 8 MiB a stdio case may print
STDIO_OUTPUTS = {
    "digits_then_a_letter": "'1' * (N - 1) + 'x'",
    "digits_only": "'7' * N",
    "1e_repeated": "'1e' * (N // 2)",
    "point_digits_e": "'.' + '1' * (N - 2) + 'e'",
    "long_exponent": "'1e' + '9' * (N - 2)",
    "one_token_per_line": "'1.0\\n' * (N // 4)",
    "many_tokens": "'1.5 ' * (N // 4)",
    "unicode_digits": "'\\u0663' * (N // 2)",
}


@pytest.mark.parametrize("expected", ["1.5\n", "1.5 2.5\n3\n"])
@pytest.mark.parametrize("shape", sorted(STDIO_OUTPUTS))
def test_a_pathological_output_costs_the_trainer_milliseconds(verifier, shape, expected):
    """8 MiB of output, compared under a float tolerance: milliseconds of the trainer's CPU (bounded at 2 s: the
    machine is shared). The regular expression this replaced spent 3.4 s on a 16 kB token of digits and an `x`."""
    code = f"import sys\nN = {OUTPUT_BYTES}\nsys.stdout.write({STDIO_OUTPUTS[shape]})\n"
    started = time.process_time()
    result = verifier.verify(code, [{"input": "", "output": expected}])
    spent = time.process_time() - started
    assert_wrong_answer(result, "wrong")
    assert spent < 2.0, f"the trainer's process spent {spent:.2f} s of CPU on one candidate's output"


def test_a_long_correct_output_costs_the_trainer_little(verifier):
    """The slow path, every token read as a number (more digits than expected), on 1 MiB: still cheap, still 1.0."""
    n = (1 << 20) // 12
    code = f"for i in range({n}):\n    print(f'{{i + 0.25:.6f}}')\n"
    expected = "".join(f"{i + 0.25}\n" for i in range(n))
    started = time.process_time()
    result = verifier.verify(code, [{"input": "", "output": expected}])
    spent = time.process_time() - started
    assert (result.score, result.reason) == (1.0, "correct"), result.reason
    assert spent < 2.0, spent
