"""A checker made to fail by the candidate's output is the candidate's 0, not None.

The checker is asked, once per case, whether it accepts the expected answer as the output: where it does, its failure
on the candidate's output (testlib's `_fail`, an abort, its time limit) is `checker_failed_on_output`, 0; where it
fails on the expected answer too, the row is unusable (None). The checkers below follow testlib's exit codes (0
accepts, 1 rejects, 3 is `_fail`) without its header.
"""

from __future__ import annotations

import shutil

import pytest
from code_verifier_helpers import make_code_verifier

from trl_grpo_ext.verifiers.code.native import Checker

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed (apt-get install g++)")

# The jury's answer is the optimum: a participant claiming more makes testlib checkers `quitf(_fail, ...)`.
OPTIMUM_CHECKER = """#include <cstdio>
int main(int argc, char** argv) {
  long long got, want;
  FILE* out = fopen(argv[2], "r"); FILE* ans = fopen(argv[3], "r");
  if (fscanf(out, "%lld", &got) != 1) return 2;
  if (fscanf(ans, "%lld", &want) != 1) return 3;
  if (got > want) return 3;  // "participant has a better answer than the jury": _fail
  return got == want ? 0 : 1;
}
"""
# Reads a count, then that many numbers into a vector: a negative count aborts (std::length_error).
COUNT_CHECKER = """#include <cstdio>
#include <vector>
int main(int argc, char** argv) {
  FILE* out = fopen(argv[2], "r"); FILE* ans = fopen(argv[3], "r");
  long long k, want;
  if (fscanf(out, "%lld", &k) != 1 || fscanf(ans, "%lld", &want) != 1) return 2;
  std::vector<long long> items(k);
  for (auto& item : items) if (fscanf(out, "%lld", &item) != 1) return 2;
  return k == want ? 0 : 1;
}
"""
# Fails whatever it reads: the row's fault.
BROKEN_CHECKER = "int main() { return 3; }\n"
OPTIMUM_ROW = {"tests": [{"input": "5\n", "output": "15\n"}], "checker": OPTIMUM_CHECKER}
COUNT_ROW = {"tests": [{"input": "2\n", "output": "2 7 8\n"}], "checker": COUNT_CHECKER}


@pytest.fixture(scope="module")
def verifier():
    v = make_code_verifier(2.0, checker_timeout_s=1)
    yield v
    v.close()


@pytest.mark.parametrize(
    "row, program",
    [(OPTIMUM_ROW, "print(10**6)"), (COUNT_ROW, "print(-1)")],
    ids=["claims_more_than_the_optimum", "negative_count_aborts_the_checker"],
)
def test_a_checker_that_fails_on_the_output_is_the_candidates_zero(verifier, row, program):
    result = verifier.verify(program, row)
    assert result.score == 0.0 and result.reason.startswith("checker_failed_on_output: exit status "), result.reason


def test_the_same_failure_in_cpp_is_a_zero_too(verifier):
    source = '```cpp\n#include <cstdio>\nint main() { puts("-5"); }\n```'
    result = verifier.verify(source, COUNT_ROW)
    assert (result.score, result.reason) == (
        0.0,
        "checker_failed_on_output: exit status -6 (0 accepts, 1 or 2 rejects; 3 is testlib's own failure)",
    )


@pytest.mark.parametrize(
    "row, program, verdict",
    [
        (OPTIMUM_ROW, "print(15)", (1.0, "correct")),
        (OPTIMUM_ROW, "print(14)", (0.0, "wrong")),
        (COUNT_ROW, "print(2, 7, 8)", (1.0, "correct")),
        (COUNT_ROW, "print(1, 7)", (0.0, "wrong")),
    ],
    ids=["optimum", "below_the_optimum", "count", "other_count"],
)
def test_controls_keep_their_verdicts(verifier, row, program, verdict):
    result = verifier.verify(program, row)
    assert (result.score, result.reason) == verdict


def test_a_checker_that_fails_on_the_expected_answer_too_gives_none(verifier):
    result = verifier.verify("print(10**6)", {**OPTIMUM_ROW, "checker": BROKEN_CHECKER})
    assert result.score is None, result.reason
    assert result.reason.startswith("unusable_reference: checker: exit status 3"), result.reason
    assert "does not accept the expected answer either" in result.reason


def test_the_reference_is_checked_once_per_case(monkeypatch):
    runs, original = [], Checker._run

    def counted(self, stdin, output, expected):
        runs.append(output)
        return original(self, stdin, output, expected)

    monkeypatch.setattr(Checker, "_run", counted)
    v = make_code_verifier(2.0, checker_timeout_s=1)
    try:
        for program in ("print(10**6)", "print(10**7)", "print(15)"):
            assert v.verify(program, OPTIMUM_ROW).score == (1.0 if program == "print(15)" else 0.0)
    finally:
        v.close()
    assert runs == ["1000000\n", "15\n", "10000000\n", "15\n"]
