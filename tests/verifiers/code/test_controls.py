"""Benign controls and test formats for the `code` verifier: correct programs get 1.0, wrong ones 0.

A verifier that blocks attacks by failing everything would pass the attack suites; these tests make sure correct
solutions that compute for a second, print a lot, use threads, recursion, local files, the standard library, classes
or big numbers are paid in full, in every supported test format.
"""

from __future__ import annotations

import textwrap

import pytest
from code_verifier_helpers import make_code_verifier

from trl_grpo_ext.verifiers import get_verifier, list_verifiers


@pytest.fixture(scope="module")
def verifier():
    v = make_code_verifier(10)
    yield v
    v.close()


def score(verifier, code, tests):
    result = verifier.verify(code, tests)
    assert result.details["isolation"]["level"] in ("bwrap", "rlimits")
    return result.score, result.reason


BENIGN = {
    "computes_for_one_second": (
        "import time\ndef slow_sum(n):\n    end, total = time.process_time() + 1.0, 0\n"
        "    while time.process_time() < end: total += 1\n    return sum(range(n))",
        "assert slow_sum(10) == 45",
    ),
    "prints_a_lot": (
        "def noisy(n):\n    for i in range(200000): print('progress', i)\n    return n * 2",
        "assert noisy(21) == 42",
    ),
    "uses_threads": (
        "from concurrent.futures import ThreadPoolExecutor\nimport threading\n"
        "def squares(n):\n    with ThreadPoolExecutor(8) as pool: out = list(pool.map(lambda x: x * x, range(n)))\n"
        "    t = threading.Thread(target=lambda: None); t.start(); t.join()\n    return out",
        "assert squares(5) == [0, 1, 4, 9, 16]",
    ),
    "deep_recursion": (
        "import sys\nsys.setrecursionlimit(10000)\ndef depth(n): return 0 if n == 0 else 1 + depth(n - 1)",
        "assert depth(5000) == 5000",
    ),
    "local_files": (
        "import os, tempfile\ndef roundtrip(text):\n    with open('notes.txt', 'w') as f: f.write(text)\n"
        "    with tempfile.NamedTemporaryFile('w+', delete=False) as g: g.write(text)\n"
        "    return open('notes.txt').read() + open(g.name).read()",
        "assert roundtrip('ab') == 'abab'",
    ),
    "stdlib_imports_after_privilege_drop": (
        "def stats(xs):\n    import heapq, statistics, fractions, decimal, collections, re, json, datetime\n"
        "    return [heapq.nsmallest(1, xs)[0], statistics.median(xs), str(fractions.Fraction(1, 3))]",
        "assert stats([3, 1, 2]) == [1, 2, '1/3']",
    ),
    "subprocess_inside_sandbox": (
        "import subprocess, sys\ndef echo(s):\n"
        "    return subprocess.run([sys.executable, '-c', 'print(input()[::-1])'], input=s, capture_output=True,"
        " text=True).stdout.strip()",
        "assert echo('abc') == 'cba'",
    ),
    "big_integers": (
        "import math\ndef fact(n): return math.factorial(n)",
        "import math\nassert fact(3000) == math.factorial(3000)",
    ),
    "floats_and_isclose": (
        "def area(r): return 3.141592653589793 * r * r",
        "import math\nassert math.isclose(area(2.0), 12.566370614359172)\nassert abs(area(1) - 3.14159) < 1e-5",
    ),
    "containers_exact": (
        "def shapes():\n    return (1, 2), {3, 4}, frozenset({5}), {'a': [1, (2, 3)]}, b'\\x00\\xff', 1 + 2j, None, True",
        "assert shapes() == ((1, 2), {3, 4}, frozenset({5}), {'a': [1, (2, 3)]}, b'\\x00\\xff', 1 + 2j, None, True)",
    ),
    "class_based_solution": (
        "class Solution:\n    def twoSum(self, nums, target):\n        seen = {}\n"
        "        for i, x in enumerate(nums):\n            if target - x in seen: return [seen[target - x], i]\n"
        "            seen[x] = i",
        "assert Solution().twoSum([2, 7, 11, 15], 9) == [0, 1]",
    ),
    "generator_consumed_by_test": (
        "def evens(n):\n    yield from range(0, n, 2)",
        "assert list(evens(7)) == [0, 2, 4, 6]",
    ),
    "in_place_mutation": (
        "def sort_in_place(xs): xs.sort()",
        "x = [3, 1, 2]\nsort_in_place(x)\nassert x == [1, 2, 3]",
    ),
    "candidate_constant": ("LIMIT = 10\ndef f(): return LIMIT", "assert LIMIT == 10\nassert f() == 10"),
    "exceptions_expected_by_test": (
        "def div(a, b): return a // b",
        "try:\n    div(1, 0)\n    raised = False\nexcept Exception:\n    raised = True\nassert raised",
    ),
}


@pytest.mark.parametrize("name", sorted(BENIGN))
def test_benign_program_scores_one(verifier, name):
    code, tests = BENIGN[name]
    assert score(verifier, code, tests) == (1.0, "correct")


def test_registered_as_code():
    assert "code" in list_verifiers()


def test_wrong_solution_scores_zero_and_partial_credit_counts_statements():
    v = make_code_verifier(5, workers=1, partial_credit=True)
    binary = make_code_verifier(10, workers=1)
    try:
        code = "def add(a, b): return a + b if a < 5 else 0"
        result = v.verify(code, "assert add(1, 2) == 3\nassert add(2, 2) == 4\nassert add(5, 7) == 12\n")
        assert result.score == pytest.approx(2 / 3)
        assert result.details["passed"] == 2 and result.details["total"] == 3
        assert binary.verify(code, "assert add(5, 7) == 12").score == 0.0
    finally:
        v.close()
        binary.close()


def test_humaneval_check_with_loops_and_helpers(verifier):
    test = textwrap.dedent(
        """
        METADATA = {'author': 'jt'}
        import random

        def reference(xs):
            return sorted(set(xs))

        def check(candidate):
            assert candidate([3, 1, 3]) == [1, 3]
            random.seed(0)
            for _ in range(20):
                xs = [random.randint(0, 9) for _ in range(10)]
                assert candidate(xs) == reference(xs)
            assert True, 'this constant assert is not counted'
        """
    )
    reference = {"test": test, "entry_point": "unique"}
    assert score(verifier, "def unique(xs): return sorted(set(xs))", reference) == (1.0, "correct")
    assert score(verifier, "def unique(xs): return sorted(xs)", reference)[0] == 0.0
    assert score(verifier, "def other(xs): return sorted(set(xs))", reference)[0] == 0.0


def test_mbpp_row_with_setup_and_imports(verifier):
    row = {
        "test_list": ["assert math.isclose(hyp(3, 4), 5.0)", "assert hyp(5, 12) == 13.0"],
        "test_setup_code": "",
        "test_imports": ["import math"],
    }
    assert score(verifier, "import math\ndef hyp(a, b): return math.hypot(a, b)", row) == (1.0, "correct")
    assert score(verifier, "def other(a, b): return 0", ["assert hyp(3, 4) == 5.0"])[0] == 0.0


def test_stdio_cases(verifier):
    code = "import sys\ndata = open(0).read().split()\nn = int(data[0])\nprint(sum(map(int, data[1:n + 1])))"
    cases = [{"input": "3\n1 2 3\n", "output": "6\n"}, {"input": "1\n-5", "output": "-5"}]
    assert score(verifier, code, cases) == (1.0, "correct")
    assert score(verifier, code, {"inputs": ["2\n1 1\n"], "outputs": ["2"]}) == (1.0, "correct")
    assert score(verifier, code, [{"input": "2\n1 1\n", "output": "3\n"}])[0] == 0.0
    chatty = "for i in range(100000): print(i)"  # prints about 600 kB
    expected = "\n".join(str(i) for i in range(100000)) + "\n"
    assert score(verifier, chatty, [{"input": "", "output": expected}]) == (1.0, "correct")


def test_markdown_completion_uses_last_python_block(verifier):
    completion = "First attempt:\n```python\ndef add(a, b): return a - b\n```\nFixed:\n```python\ndef add(a, b): return a + b\n```"
    result = verifier.verify(completion, "assert add(2, 2) == 4")
    assert (result.score, result.extracted.strip()) == (1.0, "def add(a, b): return a + b")


@pytest.mark.parametrize("reference", [None, 42, {"tests": []}, [], [{"input": 1, "output": 2}], "assert ("])
def test_unusable_reference_gives_none(verifier, reference):
    result = verifier.verify("def f(): return 1", reference)
    assert result.score is None and result.reason.startswith("unusable_reference"), result.reason


def test_empty_completion_and_no_asserts(verifier):
    assert verifier.verify("", "assert f() == 1").reason == "no_code"
    assert verifier.verify("def f(): return 1", "x = f()").score is None  # nothing to check


PROSE = "To add two numbers, return their sum. I am confident this is right."


@pytest.mark.parametrize(
    "tests",
    [
        "assert add(1, 2) == 3",
        {"test": "def check(candidate):\n    assert candidate(1, 2) == 3", "entry_point": "add"},
        [{"input": "1 2\n", "output": "3\n"}],
        "from solution import add\ndef test_add():\n    assert add(1, 2) == 3",
        {"fn_name": "add", "inputs": [[1, 2]], "outputs": [3]},
    ],
    ids=["asserts", "humaneval", "stdio", "pytest", "calls"],
)
def test_prose_without_code_is_no_code_in_every_format(verifier, tests):
    assert score(verifier, PROSE, tests) == (0.0, "no_code")


def test_a_syntax_error_inside_a_fenced_block_stays_the_candidate_s_error(verifier):
    broken = "```python\ndef add(a, b) return a + b\n```"
    result_score, reason = score(verifier, broken, "assert add(1, 2) == 3")
    assert result_score == 0.0 and reason.startswith("candidate_error: SyntaxError"), reason
    # unfenced code that parses is code, whatever its verdict
    assert score(verifier, "def add(a, b):\n    return a - b", "assert add(1, 2) == 3") == (0.0, "wrong")


def test_test_passing_a_lambda_is_reported_unusable(verifier):
    result = verifier.verify("def apply(f, x): return f(x)", "assert apply(lambda v: v + 1, 1) == 2")
    assert result.score is None and "function" in result.reason, result.reason


def test_bad_options_name_the_field():
    with pytest.raises(ValueError, match="isolation='docker'.*Valid choices: auto, bwrap, rlimits"):
        get_verifier("code", isolation="docker")
    with pytest.raises(ValueError, match="timeout_s=-1"):
        get_verifier("code", timeout_s=-1)


def test_stdio_float_tolerance():
    code = "n = int(input())\nprint(1 / n)"
    cases = [{"input": "3\n", "output": "0.333333333\n"}]  # the program prints 0.3333333333333333
    exact = make_code_verifier(timeout_s=10)
    tolerant = make_code_verifier(timeout_s=10, float_tolerance=1e-6)
    try:
        assert exact.verify(code, cases).score == 0.0
        assert tolerant.verify(code, cases).score == 1.0
        assert tolerant.verify("print(0.3334)", cases).score == 0.0
    finally:
        exact.close()
        tolerant.close()
