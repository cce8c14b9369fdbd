"""The `code` verifier's test formats beyond assert statements: pytest-style modules (KodCode), unittest modules
(BigCodeBench), call-based cases (APPS, TACO, LiveCodeBench). Each is detected from the reference, scores 1.0 for a
correct solution and 0 for a wrong one, and counts partial credit in its own unit: test functions, test methods,
cases. Where pytest or unittest themselves can run the same files, the counts are compared with theirs.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap

import pytest
from code_verifier_helpers import make_code_verifier


@pytest.fixture(scope="module")
def verifier():
    v = make_code_verifier(10, partial_credit=True)
    yield v
    v.close()


def verdict(verifier, code, reference):
    result = verifier.verify(textwrap.dedent(code), reference)
    return result.score, result.details.get("passed"), result.details.get("total"), result.reason


KODCODE_ROW = textwrap.dedent(
    """
    import pytest
    from solution import merge_intervals

    @pytest.fixture
    def overlapping():
        return [[1, 3], [2, 6], [8, 10]]

    def test_overlapping(overlapping):
        assert merge_intervals(overlapping) == [[1, 6], [8, 10]]

    def test_empty():
        assert merge_intervals([]) == []

    @pytest.mark.parametrize("intervals, expected", [([[1, 4], [4, 5]], [[1, 5]]), ([[5, 6], [1, 2]], [[1, 2], [5, 6]])])
    def test_cases(intervals, expected):
        assert merge_intervals(intervals) == expected

    def test_bad_input():
        with pytest.raises(TypeError):
            merge_intervals(None)
    """
)
MERGE = """
def merge_intervals(intervals):
    out = []
    for start, end in sorted(intervals):
        if out and start <= out[-1][1]:
            out[-1][1] = max(out[-1][1], end)
        else:
            out.append([start, end])
    return out
"""


def test_pytest_module_scores_test_functions(verifier):
    assert verdict(verifier, MERGE, KODCODE_ROW) == (1.0, 5, 5, "correct")
    unsorted = MERGE.replace("sorted(intervals)", "intervals")  # fails test_cases[1] only
    assert verdict(verifier, unsorted, KODCODE_ROW) == (0.8, 4, 5, "wrong")
    assert verdict(verifier, "def merge_intervals(intervals): return []", KODCODE_ROW)[:3] == (0.2, 1, 5)


def test_pytest_module_without_the_function_fails_every_test(verifier):
    score, passed, total, reason = verdict(verifier, "def other(): return 1", KODCODE_ROW)
    assert (score, passed, total) == (0.0, 0, 4) and reason.startswith("candidate_error: ImportError"), reason


def test_pytest_fixtures_scopes_teardown_and_classes(verifier):
    tests = textwrap.dedent(
        """
        import pytest
        from solution import Stack
        made = []

        @pytest.fixture(scope="module")
        def shared():
            made.append(1)
            return [1, 2, 3]

        @pytest.fixture
        def stack(shared):
            s = Stack()
            for x in shared:
                s.push(x)
            yield s
            made.append("torn down")

        @pytest.fixture(autouse=True)
        def counter():
            return None

        def test_pop(stack):
            assert stack.pop() == 3

        def test_size(stack):
            assert stack.size() == 3

        def test_module_fixture_made_once(stack):
            assert made.count(1) == 1 and "torn down" in made

        class TestStack:
            def setup_method(self, method):
                self.stack = Stack()

            def test_empty(self):
                assert self.stack.size() == 0

            @pytest.mark.skip(reason="not counted")
            def test_skipped(self):
                assert False

            @pytest.mark.parametrize("n", [1, 2, pytest.param(3, marks=pytest.mark.xfail)])
            def test_push(self, n):
                for i in range(n):
                    self.stack.push(i)
                assert self.stack.size() == n
        """
    )
    code = """
    class Stack:
        def __init__(self): self.items = []
        def push(self, x): self.items.append(x)
        def pop(self): return self.items.pop()
        def size(self): return len(self.items)
    """
    assert verdict(verifier, code, tests) == (1.0, 6, 6, "correct")


def test_pytest_raises_approx_and_candidate_exception_classes(verifier):
    tests = textwrap.dedent(
        """
        import pytest
        import solution

        def test_sqrt():
            assert solution.root(2.0) == pytest.approx(1.41421356)

        def test_negative():
            with pytest.raises(ValueError, match="negative"):
                solution.root(-1.0)

        def test_own_exception():
            with pytest.raises(solution.Invalid):
                solution.root("x")
        """
    )
    code = """
    class Invalid(Exception): pass
    def root(x):
        if not isinstance(x, float): raise Invalid(x)
        if x < 0: raise ValueError("negative input")
        return x ** 0.5
    """
    assert verdict(verifier, code, tests) == (1.0, 3, 3, "correct")
    wrong_type = code.replace('raise ValueError("negative input")', 'raise TypeError("negative input")')
    assert verdict(verifier, wrong_type, tests)[:3] == (2 / 3, 2, 3)


def test_solution_module_option(verifier):
    tests = "from my_solution import double\n\ndef test_double():\n    assert double(2) == 4\n"
    score, _, _, reason = verdict(verifier, "def double(x): return 2 * x", tests)
    assert score is None and "solution_module='my_solution'" in reason, reason
    named = make_code_verifier(10, workers=1, solution_module="my_solution")
    try:
        assert named.verify("def double(x): return 2 * x", tests).score == 1.0
    finally:
        named.close()
    with pytest.raises(ValueError, match="solution_module='my solution'"):
        make_code_verifier(10, solution_module="my solution")


BIGCODEBENCH_ROW = textwrap.dedent(
    """
    import unittest

    class TestCases(unittest.TestCase):
        @classmethod
        def setUpClass(cls):
            cls.words = ["apple", "banana", "apple"]

        def setUp(self):
            self.counts = task_func(self.words)

        def test_counts(self):
            self.assertEqual(self.counts, {"apple": 2, "banana": 1})
            self.assertIsInstance(self.counts, dict)

        def test_each_word(self):
            for word, n in [("apple", 2), ("banana", 1), ("cherry", 0)]:
                with self.subTest(word=word):
                    self.assertEqual(task_func(self.words).get(word, 0), n)

        def test_empty(self):
            self.assertDictEqual(task_func([]), {})

        def test_bad_input(self):
            with self.assertRaises(TypeError):
                task_func(None)

        @unittest.skip("not counted")
        def test_skipped(self):
            self.fail()

    if __name__ == "__main__":
        unittest.main()
    """
)


COUNT_WORDS = """
from collections import Counter
def task_func(words):
    if words is None: raise TypeError("words must be a list")
    return dict(Counter(words))
"""


def test_unittest_module_scores_test_methods(verifier):
    code = COUNT_WORDS
    assert verdict(verifier, code, BIGCODEBENCH_ROW) == (1.0, 4, 4, "correct")
    # A subTest that fails fails its method; here one of three words (and the counts) is off.
    off = "def task_func(words):\n    if words is None: raise TypeError\n    return {w: words.count(w) for w in words if w != 'banana'}"
    assert verdict(verifier, off, BIGCODEBENCH_ROW)[:3] == (0.5, 2, 4)
    row = {"test": BIGCODEBENCH_ROW, "entry_point": "task_func"}  # the row as BigCodeBench stores it
    assert verdict(verifier, code, row) == (1.0, 4, 4, "correct")
    unguarded = BIGCODEBENCH_ROW.replace('if __name__ == "__main__":\n    unittest.main()', "unittest.main()")
    assert unguarded != BIGCODEBENCH_ROW
    assert verdict(verifier, code, unguarded) == (1.0, 4, 4, "correct")  # the judge runs the tests, not main()


def test_unittest_from_solution_import_and_expected_failure(verifier):
    tests = textwrap.dedent(
        """
        import unittest
        from solution import add

        class T(unittest.TestCase):
            def test_add(self):
                self.assertAlmostEqual(add(0.1, 0.2), 0.3)

            @unittest.expectedFailure
            def test_known_bug(self):
                self.assertEqual(add(1, 1), 3)
        """
    )
    assert verdict(verifier, "def add(a, b): return a + b", tests) == (1.0, 1, 1, "correct")
    skipped_class = tests + "\nclass U(unittest.TestCase):\n    @classmethod\n    def setUpClass(cls):\n"
    skipped_class += "        raise unittest.SkipTest('no network')\n\n    def test_x(self):\n        self.fail()\n"
    assert verdict(verifier, "def add(a, b): return a + b", skipped_class) == (1.0, 1, 1, "correct")


@pytest.mark.parametrize(
    "tests",
    [
        "from solution import sort_in_place\n\ndef test_sorts():\n    nums = [3, 1, 2]\n"
        "    sort_in_place(nums)\n    assert nums == [1, 2, 3]\n",
        "import unittest\nfrom solution import sort_in_place\n\nclass T(unittest.TestCase):\n    def test_sorts(self):\n"
        "        nums = [3, 1, 2]\n        sort_in_place(nums)\n        self.assertEqual(nums, [1, 2, 3])\n",
        "nums = [3, 1, 2]\nsort_in_place(nums)\nassert nums == [1, 2, 3]\n",
    ],
    ids=["pytest", "unittest", "asserts"],
)
def test_argument_mutated_in_place_as_in_plain_execution(verifier, tests):
    assert verdict(verifier, "def sort_in_place(xs): xs.sort()", tests)[0] == 1.0
    assert verdict(verifier, "def sort_in_place(xs): return sorted(xs)", tests)[0] == 0.0  # returns, mutates nothing


def test_nested_argument_mutated_in_place(verifier):
    # LeetCode's "rotate image": the matrix is rotated in place, rows included.
    tests = "from solution import rotate\n\ndef test_rotate():\n    grid = [[1, 2], [3, 4]]\n    rotate(grid)\n    assert grid == [[3, 1], [4, 2]]\n"
    code = "def rotate(m):\n    m.reverse()\n    for i in range(len(m)):\n        for j in range(i):\n            m[i][j], m[j][i] = m[j][i], m[i][j]"
    assert verdict(verifier, code, tests)[0] == 1.0
    assert verdict(verifier, "def rotate(m):\n    m.reverse()", tests)[0] == 0.0


APPS_ROW = json.dumps(
    {"fn_name": "max_pair", "inputs": [[[1, 5, 3]], [[2, 2]], [[-1, -7, 0]]], "outputs": [[5], [2], 0]}
)


def test_call_based_apps_row_as_stored(verifier):
    assert verdict(verifier, "def max_pair(xs): return max(xs)", APPS_ROW) == (1.0, 3, 3, "correct")
    assert verdict(verifier, "def max_pair(xs): return max(xs) if len(xs) > 2 else 0", APPS_ROW)[:3] == (2 / 3, 2, 3)
    # As in APPS's grader, [5] passes where [5] is expected, and [0] fails where 0 is.
    assert verdict(verifier, "def max_pair(xs): return [max(xs)]", APPS_ROW)[:3] == (2 / 3, 2, 3)


def test_stdio_apps_row_as_stored(verifier):
    # APPS's standard-input rows: the same JSON column, no fn_name; a case given as a list of lines is joined.
    row = json.dumps({"inputs": ["2\n1 2\n", ["1", "7"]], "outputs": ["3\n", ["7"]]})
    code = "n = int(input())\nprint(sum(map(int, input().split()[:n])))"
    assert verdict(verifier, code, row) == (1.0, 2, 2, "correct")


def test_call_based_apps_comparisons_follow_its_grader(verifier):
    tuples = {"fn_name": "pairs", "inputs": [[2]], "outputs": [[[[0, 1], [1, 2]]]]}
    assert verdict(verifier, "def pairs(n): return [(i, i + 1) for i in range(n)]", tuples)[0] == 1.0
    assert verdict(verifier, "def pairs(n): return tuple([i, i + 1] for i in range(n))", tuples)[0] == 1.0
    keys = json.dumps({"fn_name": "invert", "inputs": [[{"1": "a", "2": "b"}]], "outputs": [{"a": 1, "b": 2}]})
    assert verdict(verifier, "def invert(d): return {v: k for k, v in d.items()}", keys)[0] == 1.0  # int keys, as APPS


def test_call_based_leetcode_class(verifier):
    row = {"fn_name": "twoSum", "inputs": [[[2, 7, 11, 15], 9], [[3, 3], 6]], "outputs": [[0, 1], [0, 1]]}
    code = """
    class Solution:
        def twoSum(self, nums, target):
            seen = {}
            for i, x in enumerate(nums):
                if target - x in seen:
                    return [seen[target - x], i]
                seen[x] = i
    """
    assert verdict(verifier, code, row) == (1.0, 2, 2, "correct")
    assert verdict(verifier, "class Solution:\n    def twoSum(self, nums, target): return [1, 0]", row)[0] == 0.0


def test_call_based_livecodebench_cases(verifier):
    cases = [
        {"input": "[1, 2, 3]\n2", "output": "5", "testtype": "functional", "metadata": '{"func_name": "sumLargest"}'},
        {"input": "[4]\n1", "output": "4", "testtype": "functional", "metadata": '{"func_name": "sumLargest"}'},
    ]
    code = "class Solution:\n    def sumLargest(self, nums, k): return sum(sorted(nums)[-k:])"
    assert verdict(verifier, code, cases) == (1.0, 2, 2, "correct")
    assert verdict(verifier, code, json.dumps(cases)) == (1.0, 2, 2, "correct")  # the column as stored
    as_dict = {"fn_name": "sumLargest", "inputs": [c["input"] for c in cases], "outputs": [c["output"] for c in cases]}
    assert verdict(verifier, code, as_dict) == (1.0, 2, 2, "correct")
    wrapped = "class Solution:\n    def sumLargest(self, nums, k): return [sum(sorted(nums)[-k:])]"
    assert verdict(verifier, wrapped, cases)[0] == 0.0  # LiveCodeBench compares exactly, unlike APPS


@pytest.mark.parametrize(
    "reference, detail",
    [
        ("from solution import f\ndef test_f(tmp_path):\n    assert f(str(tmp_path)) == 1\n", "fixture 'tmp_path'"),
        (
            "from solution import f\ndef test_f(capsys):\n    f()\n    assert capsys.readouterr().out == '1'\n",
            "capsys",
        ),
        (
            "from unittest.mock import patch\nfrom solution import f\n\n@patch('os.getcwd')\ndef test_f(m):\n"
            "    assert f() == 1\n",
            "unittest.mock.patch",
        ),
        (
            "import unittest\nfrom solution import f\nclass T(unittest.TestCase):\n    def test_f(self):\n"
            "        with self.assertLogs() as logs:\n            f()\n",
            "assertLogs",
        ),
        (
            "import io, contextlib\nfrom solution import f\ndef test_f():\n    out = io.StringIO()\n"
            "    with contextlib.redirect_stdout(out):\n        f()\n    assert out.getvalue() == '1'\n",
            "contextlib.redirect_stdout",
        ),
        (
            "import pytest\nfrom solution import f\ndef test_f():\n    with pytest.warns(UserWarning):\n        f()\n",
            "pytest.warns",
        ),
        ("import pytest\n@pytest.mark.skip\ndef test_f():\n    assert f() == 1\n", "skipped"),
        ("from solution import f\ndef test_f():\n    assert f() == math.pi\n", "'math' without importing"),
        ({"fn_name": "f", "inputs": [1, 2], "outputs": [1, 2]}, "list of the call's arguments"),
        ([{"input": "1", "output": "1", "testtype": "functional"}], "func_name"),
    ],
)
def test_references_the_verifier_cannot_run_as_written_are_unusable(verifier, reference, detail):
    score, _, _, reason = verdict(verifier, "def f(*a): return 1", reference)
    assert score is None and reason.startswith("unusable_reference") and detail in reason, reason


def test_candidate_exceptions_keep_their_builtin_type_in_assert_tests(verifier):
    tests = "try:\n    parse('x')\n    ok = False\nexcept ValueError as e:\n    ok = 'bad' in str(e)\nassert ok"
    assert verdict(verifier, "def parse(s):\n    raise ValueError('bad literal')", tests)[0] == 1.0
    assert verdict(verifier, "def parse(s):\n    raise KeyError('bad literal')", tests)[0] == 0.0


# Plain execution on the same files, by pytest itself (KodCode rows) or by unittest's runner (BigCodeBench rows; pytest
# 9 would count a method whose subTest failed as passed, unittest does not): the counts must be theirs.
PYTEST_CASES = {
    "correct": MERGE,
    "unsorted": MERGE.replace("sorted(intervals)", "intervals"),
    "empty": "def merge_intervals(intervals): return []",
    "crashes": "def merge_intervals(intervals): raise RuntimeError",
}
UNITTEST_CASES = {
    "correct": COUNT_WORDS,
    "off": "def task_func(words):\n    if words is None: raise TypeError\n"
    "    return {w: words.count(w) for w in words if w != 'banana'}",
    "no_type_check": "from collections import Counter\ndef task_func(words): return dict(Counter(words))",
}
UNITTEST_RUNNER = """
import json, unittest, test_row
result = unittest.TestResult()
unittest.defaultTestLoader.loadTestsFromModule(test_row).run(result)
failed = {getattr(t, "test_case", t).id() for t, _ in result.failures + result.errors}
total = result.testsRun - len(result.skipped) - len(result.expectedFailures)
print(json.dumps([total - len(failed) - len(result.unexpectedSuccesses), total]))
"""


def _run_plain(tmp_path, code: str, tests: str, command: list[str]) -> str:
    (tmp_path / "solution.py").write_text(textwrap.dedent(code))
    (tmp_path / "test_row.py").write_text(tests)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    return subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=60).stdout


@pytest.mark.parametrize("name", sorted(PYTEST_CASES))
def test_counts_equal_pytest_on_the_same_files(verifier, tmp_path, name):
    code = PYTEST_CASES[name]
    command = [sys.executable, "-m", "pytest", "-q", "--tb=no", "-p", "no:cacheprovider", "test_row.py"]
    output = _run_plain(tmp_path, code, KODCODE_ROW, command)
    counts = {word: int(n) for n, word in re.findall(r"(\d+) (passed|failed|errors?)\b", output)}
    passed = counts.get("passed", 0)
    plain = (passed, passed + counts.get("failed", 0) + counts.get("error", 0) + counts.get("errors", 0))
    assert verdict(verifier, code, KODCODE_ROW)[1:3] == plain, output


@pytest.mark.parametrize("name", sorted(UNITTEST_CASES))
def test_counts_equal_unittest_on_the_same_files(verifier, tmp_path, name):
    code, tests = UNITTEST_CASES[name], "from solution import task_func\n" + BIGCODEBENCH_ROW
    output = _run_plain(tmp_path, code, tests, [sys.executable, "-c", UNITTEST_RUNNER])
    assert list(verdict(verifier, code, tests)[1:3]) == json.loads(output)
