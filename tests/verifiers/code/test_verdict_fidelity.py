"""Verdict fidelity, part 2: correct programs that plain execution passes (`python -c code + tests`, or pytest and
unittest on the same files) must score 1.0, class by class; a wrong program of the same class must still score 0,
for the stated reason. Part 1 (wrong programs that were paid) is test_verdict_classes.py.
"""

from __future__ import annotations

import pytest
from code_verifier_helpers import assert_correct, assert_wrong, make_code_verifier


@pytest.fixture(scope="module")
def verifier():
    v = make_code_verifier(10, partial_credit=False)
    yield v
    v.close()


ADD = "def add(a, b):\n    return a + b\n"
SUB = "def add(a, b):\n    return a - b if b != 0 else a\n"  # right only when b == 0


# --- assert scripts as plain execution runs them ---

SCRIPTS = {
    "main_guard": "def check(f):\n    assert f(1, 2) == 3\n\nif __name__ == '__main__':\n    check(add)\n"
    "    assert add(2, 2) == 4\n",
    "uncalled_helper": "def stress(n):\n    assert add(n, n) == -1\n\nassert add(1, 2) == 3\nassert add(2, 5) == 7\n",
    "helper_of_an_uncalled_helper": "def inner(n):\n    assert add(n, 1) == 0\n\ndef outer():\n    inner(5)\n\n"
    "assert add(1, 2) == 3\n",
    "walrus": "assert (total := add(1, 2)) == 3\nassert total * 2 == 6\nassert [y := add(2, 5), y][1] == 7\n",
    "walrus_in_check": "def check(candidate):\n    assert (r := candidate(1, 2)) == 3\n    assert r + candidate(2, 2) == 7\n"
    "\ncheck(add)\n",
    "from_solution_import": "from solution import add\nassert add(1, 2) == 3\nassert add(5, 2) == 7\n",
    "import_solution": "import solution\nassert solution.add(1, 2) == 3\nassert solution.add(5, 2) == 7\n",
    "unittest_main_in_guard": "import unittest\nassert add(1, 2) == 3\nassert add(5, 2) == 7\n\n"
    "if __name__ == '__main__':\n    unittest.main()\n",
    "exits_with_unittest_main": "import sys, unittest\nassert add(1, 2) == 3\n\nif __name__ == '__main__':\n"
    "    assert add(5, 2) == 7\n    sys.exit(unittest.main())\n",
    "exits_at_the_end": "import sys\nassert add(1, 2) == 3\nassert add(5, 2) == 7\nprint('all passed')\nsys.exit(0)\n",
}


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_assert_scripts_run_as_plain_execution_runs_them(verifier, script):
    assert_correct(verifier, ADD, SCRIPTS[script])
    assert_wrong(verifier, SUB, SCRIPTS[script], failure="assertion is false")


def test_a_script_that_exits_with_a_failure_status_fails(verifier):
    tests = "import sys\nfailed = add(1, 2) != 3\nassert add(0, 0) == 0\nsys.exit(1 if failed else 0)\n"
    assert_correct(verifier, ADD, tests)
    assert_wrong(verifier, "def add(a, b):\n    return 0\n", tests, reason="SystemExit: 1")


def test_a_helper_that_is_called_counts_and_one_that_is_not_does_not():
    v = make_code_verifier(10, partial_credit=True)
    try:
        result = v.verify(ADD, SCRIPTS["uncalled_helper"])
        assert (result.score, result.details["total"]) == (1.0, 2)
        called = SCRIPTS["uncalled_helper"] + "stress(1)\n"  # now it runs, and fails
        result = v.verify(ADD, called)
        assert (result.score, result.details["total"]) == (2 / 3, 3), result.details
        only_helpers = "def check():\n    assert add(1, 2) == 3\n"
        assert v.verify(ADD, only_helpers).reason == "unusable_reference: the test code has no assert statement"
    finally:
        v.close()


def test_an_assert_in_a_called_function_that_never_ran_still_fails(verifier):
    # The test loops over what the candidate returns: an empty answer runs no assert, and must not pass.
    tests = "def check(xs):\n    for x in xs:\n        assert x > 0\n\ncheck(positives([3, -1, 2]))\n"
    assert_correct(verifier, "def positives(xs):\n    return [x for x in xs if x > 0]", tests)
    assert_wrong(verifier, "def positives(xs):\n    return []", tests)


# --- arguments mutated in place, passed by keyword ---

MUTATES = "def fill(n, out):\n    out.extend(range(n))\n    return len(out)\n"


@pytest.mark.parametrize(
    "tests",
    [
        "xs = []\nassert fill(3, out=xs) == 3\nassert xs == [0, 1, 2]\n",
        "from solution import fill\n\ndef test_fill():\n    xs = []\n    fill(n=2, out=xs)\n    assert xs == [0, 1]\n",
    ],
    ids=["asserts", "pytest"],
)
def test_keyword_argument_mutated_in_place(verifier, tests):
    assert_correct(verifier, MUTATES, tests)
    assert_wrong(verifier, "def fill(n, out):\n    return n", tests)


# --- standard containers returned as data ---

CONTAINERS = {
    "Counter": (
        "from collections import Counter\ndef tally(s):\n    return Counter(s)",
        "def tally(s):\n    return {c: 1 for c in s}",
        "r = tally('abca')\nassert r == {'a': 2, 'b': 1, 'c': 1}\nassert r.most_common(1) == [('a', 2)]\n"
        "assert r['z'] == 0\n",
    ),
    "defaultdict": (
        "from collections import defaultdict\ndef tally(s):\n    d = defaultdict(int)\n    for c in s:\n"
        "        d[c] += 1\n    return d",
        "from collections import defaultdict\ndef tally(s):\n    return defaultdict(int, {c: 1 for c in s})",
        "r = tally('abca')\nassert r == {'a': 2, 'b': 1, 'c': 1}\nassert r['z'] == 0\n",
    ),
    "defaultdict_lambda": (
        "from collections import defaultdict\ndef tally(s):\n    d = defaultdict(lambda: 10)\n    for c in s:\n"
        "        d[c] += 1\n    return d",
        "from collections import defaultdict\ndef tally(s):\n    return defaultdict(lambda: 0, {c: 11 for c in s})",
        "r = tally('abca')\nassert r['a'] == 12\nassert r['z'] == 10\n",
    ),
    "OrderedDict": (
        "from collections import OrderedDict\ndef tally(s):\n    return OrderedDict((c, s.count(c)) for c in s)",
        "from collections import OrderedDict\ndef tally(s):\n    return OrderedDict((c, s.count(c)) for c in sorted(s))",
        "from collections import OrderedDict\nassert tally('cab') == OrderedDict([('c', 1), ('a', 1), ('b', 1)])\n",
    ),
    "namedtuple": (
        "from collections import namedtuple\nPoint = namedtuple('Point', 'x y')\ndef tally(s):\n"
        "    return Point(len(s), s.count('a'))",
        "from collections import namedtuple\nPoint = namedtuple('Point', 'x y')\ndef tally(s):\n"
        "    return Point(s.count('a'), len(s))",
        "from solution import Point\nr = tally('abca')\nassert r.x == 4 and r.y == 2\nassert r == (4, 2)\n"
        "assert r == Point(4, 2)\nassert r._asdict() == {'x': 4, 'y': 2}\n",
    ),
    "bytearray": (
        "def tally(s):\n    return bytearray(s.encode())",
        "def tally(s):\n    return s.encode()",
        "assert tally('ab') == bytearray(b'ab')\nassert isinstance(tally('ab'), bytearray)\n",
    ),
    "deque": (
        "from collections import deque\ndef tally(s):\n    return deque(s, maxlen=2)",
        "from collections import deque\ndef tally(s):\n    return deque(s)",
        "from collections import deque\nassert tally('abc') == deque('bc')\nassert tally('abc').maxlen == 2\n",
    ),
}


@pytest.mark.parametrize("kind", sorted(CONTAINERS))
def test_standard_containers_come_back_as_data(verifier, kind):
    correct, wrong, tests = CONTAINERS[kind]
    assert_correct(verifier, correct, tests)
    assert_wrong(verifier, wrong, tests, failure="assertion is false")


def test_a_namedtuple_from_the_candidate_prints_as_a_tuple(verifier):
    # its class's name and methods stay in the sandbox: `'Valid' in str(r)` cannot be met by naming a class
    code = "from collections import namedtuple\nValid = namedtuple('Valid', 'Valid')\ndef f():\n    return Valid(1)"
    assert_wrong(verifier, code, "assert 'Valid' in str(f())", failure="assertion is false")
    assert_correct(verifier, code, "assert str(f()) == '(1,)'")


# --- generators and iterators ---

FIB = "def fib():\n    a, b = 0, 1\n    while True:\n        yield a\n        a, b = b, a + b\n"
GENERATOR_TESTS = {
    "islice": "from itertools import islice\nassert list(islice(fib(), 8)) == [0, 1, 1, 2, 3, 5, 8, 13]\n",
    "next": "g = fib()\nassert next(g) == 0\nassert next(g) == 1\nassert [next(g) for _ in range(4)] == [1, 2, 3, 5]\n",
    "zip": "assert [x for x, _ in zip(fib(), range(5))] == [0, 1, 1, 2, 3]\n",
    "pytest_next": "from solution import fib\n\ndef test_fib():\n    g = iter(fib())\n    assert next(g) == 0\n"
    "    assert next(g) == 1\n    assert next(g) == 1\n    assert next(g) == 2\n",
}


@pytest.mark.parametrize("test", sorted(GENERATOR_TESTS))
def test_generators_are_iterated_lazily(verifier, test):
    assert_correct(verifier, FIB, GENERATOR_TESTS[test])
    assert_wrong(verifier, FIB.replace("a + b", "a + b + 1"), GENERATOR_TESTS[test])


def test_only_an_iterator_is_an_iterator(verifier):
    tests = "from collections.abc import Iterator\nassert isinstance(evens(3), Iterator)\nassert next(evens(3)) == 0\n"
    assert_correct(verifier, "def evens(n):\n    return (2 * i for i in range(n))", tests)
    not_one = "class Evens:\n    def __init__(self, n):\n        self.n = n\n    def __iter__(self):\n"
    not_one += "        return iter(range(0, 2 * self.n, 2))\ndef evens(n):\n    return Evens(n)"
    assert_wrong(verifier, not_one, tests, failure="assertion is false")


def test_a_generator_ends_and_raises_where_plain_iteration_would(verifier):
    tests = (
        "import pytest\nfrom solution import parse\n\ndef test_parse():\n    g = parse(['1', 'x'])\n"
        "    assert next(g) == 1\n    with pytest.raises(ValueError):\n        next(g)\n"
        "    with pytest.raises(StopIteration):\n        next(g)\n    assert list(parse(['3'] * 10000)) == [3] * 10000\n"
    )
    assert_correct(verifier, "def parse(xs):\n    for x in xs:\n        yield int(x)", tests)
    lenient = "def parse(xs):\n    for x in xs:\n        if x.isdigit():\n            yield int(x)"
    assert_wrong(verifier, lenient, tests, failure="StopIteration")  # it ended where it should have raised


# --- exceptions: SystemExit, and subclasses of the solution's own exceptions ---

EXITS = "import sys\ndef main(args):\n    if not args:\n        sys.exit(2)\n    return len(args)\n"
EXIT_TESTS = {
    "pytest": "import pytest\nfrom solution import main\n\ndef test_exit():\n    with pytest.raises(SystemExit) as e:\n"
    "        main([])\n    assert e.value.code == 2\n    assert main(['a']) == 1\n",
    "unittest": "import unittest\nfrom solution import main\n\nclass T(unittest.TestCase):\n    def test_exit(self):\n"
    "        with self.assertRaises(SystemExit) as e:\n            main([])\n        self.assertEqual(e.exception.code, 2)\n",
    "asserts": "try:\n    main([])\n    code = None\nexcept SystemExit as e:\n    code = e.code\nassert code == 2\n",
}


@pytest.mark.parametrize("test", sorted(EXIT_TESTS))
def test_system_exit_reaches_a_test_that_expects_it(verifier, test):
    assert_correct(verifier, EXITS, EXIT_TESTS[test])
    assert_wrong(verifier, EXITS.replace("sys.exit(2)", "sys.exit(0)"), EXIT_TESTS[test])


def test_system_exit_is_not_an_exception_to_the_test(verifier):
    # as in plain execution, `except Exception` does not catch it: the script ends there
    tests = "try:\n    main([])\nexcept Exception:\n    pass\nassert main(['a']) == 1\n"
    assert_correct(verifier, EXITS.replace("sys.exit(2)", "raise ValueError"), tests)
    assert_wrong(verifier, EXITS, tests, reason="candidate_error: SystemExit: 2")


OWN_ERRORS = (
    "class AppError(Exception):\n    pass\nclass NotFound(AppError):\n    pass\nclass BadKey(KeyError, AppError):\n"
    "    pass\ndef find(d, k):\n    if not isinstance(k, str):\n        raise BadKey(k)\n    if k not in d:\n"
    "        raise NotFound(k)\n    return d[k]\n"
)
OWN_ERROR_TESTS = (
    "import pytest\nfrom solution import find, AppError\nimport solution\n\ndef test_missing():\n"
    "    with pytest.raises(AppError):\n        find({}, 'a')\n\ndef test_bad_key():\n"
    "    with pytest.raises(KeyError):\n        find({}, 1)\n    with pytest.raises(solution.AppError):\n"
    "        find({}, 1)\n"
)


OWN_ERROR_UNITTEST = (
    "import unittest\nfrom solution import find, AppError, NotFound\n\nclass T(unittest.TestCase):\n"
    "    def test_missing(self):\n        with self.assertRaises(AppError):\n            find({}, 'a')\n"
    "        self.assertRaises(NotFound, find, {}, 'b')\n\n    def test_bad_key(self):\n"
    "        with self.assertRaises(KeyError):\n            find({}, 1)\n"
)
OWN_ERROR_EXCEPT = (
    "try:\n    find({}, 'a')\n    caught = None\nexcept AppError as e:\n    caught = e\n"
    "assert isinstance(caught, NotFound) and str(caught) == 'a'\n"
    "try:\n    find({}, 1)\nexcept KeyError as e:\n    caught = e\n"
    "assert isinstance(caught, AppError) and isinstance(caught, BadKey) and not isinstance(caught, NotFound)\n"
)


@pytest.mark.parametrize(
    "tests", [OWN_ERROR_TESTS, OWN_ERROR_UNITTEST, OWN_ERROR_EXCEPT], ids=["pytest", "unittest", "except"]
)
def test_subclasses_of_the_solutions_own_exceptions(verifier, tests):
    assert_correct(verifier, OWN_ERRORS, tests)
    unrelated = OWN_ERRORS.replace("class NotFound(AppError)", "class NotFound(Exception)")
    assert_wrong(verifier, unrelated, tests, reason="wrong" if "def test" in tests else "candidate_error: NotFound")
    plain = OWN_ERRORS.replace("class BadKey(KeyError, AppError)", "class BadKey(AppError)")
    assert_wrong(verifier, plain, tests, reason="wrong" if "def test" in tests else "candidate_error: BadKey")


def test_the_candidates_exception_classes_are_not_the_tests():
    # a class the test defines is its own: a candidate's exception that names it is not an instance of it
    tests = (
        "class Invalid(Exception):\n    pass\n\ntry:\n    check(1)\n    ok = False\nexcept Invalid:\n    ok = True\n"
    )
    tests += "except Exception:\n    ok = False\nassert ok\n"
    v = make_code_verifier(10)
    try:
        assert_wrong(v, "class Invalid(Exception):\n    pass\ndef check(x):\n    raise Invalid()", tests)
    finally:
        v.close()


def test_a_subclass_of_a_builtin_exception_is_that_builtin(verifier):
    tests = (
        "import json\ntry:\n    load('{')\n    caught = False\nexcept ValueError:\n    caught = True\nassert caught\n"
    )
    assert_correct(verifier, "import json\ndef load(s):\n    return json.loads(s)", tests)
    assert_wrong(verifier, "def load(s):\n    raise RuntimeError(s)", tests, reason="candidate_error: RuntimeError")


# A class of the standard library crosses as the judge's own copy of it, as a builtin is the builtin: a
# test expecting `json.JSONDecodeError` or `queue.Empty` catches the candidate's, and the candidate's subclass of one.
STANDARD_ERRORS = (
    "import json, queue\n\nclass Truncated(json.JSONDecodeError):\n    pass\n\ndef parse(s):\n"
    "    if s.endswith('...'):\n        raise Truncated('cut', s, len(s))\n    return json.loads(s)\n\n"
    "def first(items):\n    q = queue.Queue()\n    for item in items:\n        q.put(item)\n"
    "    return q.get_nowait()\n"
)
STANDARD_ERROR_TESTS = {
    "pytest": "import json, queue, pytest\nfrom solution import parse, first\n\ndef test_json():\n"
    "    with pytest.raises(json.JSONDecodeError):\n        parse('{')\n"
    "    with pytest.raises(json.JSONDecodeError):\n        parse('[1, ...')\n    assert parse('[1]') == [1]\n\n"
    "def test_queue():\n    with pytest.raises(queue.Empty):\n        first([])\n    assert first([3]) == 3\n",
    "unittest": "import json, queue, unittest\nfrom solution import parse, first\n\nclass T(unittest.TestCase):\n"
    "    def test_errors(self):\n        self.assertRaises(json.JSONDecodeError, parse, '{')\n"
    "        self.assertRaises(queue.Empty, first, [])\n",
    "asserts": "import json\ntry:\n    parse('{')\n    caught = None\nexcept json.JSONDecodeError as e:\n"
    "    caught = e\nassert isinstance(caught, ValueError) and isinstance(caught, json.JSONDecodeError)\n",
}


@pytest.mark.parametrize("tests", sorted(STANDARD_ERROR_TESTS))
def test_an_exception_of_the_standard_library_is_that_class(verifier, tests):
    assert_correct(verifier, STANDARD_ERRORS, STANDARD_ERROR_TESTS[tests])
    raises_value_error = STANDARD_ERRORS.replace("return json.loads(s)", "raise ValueError(s)").replace(
        "return q.get_nowait()", "raise IndexError('empty')"
    )
    reason = "candidate_error: ValueError" if tests == "asserts" else "wrong"  # it escapes the script's except
    assert_wrong(verifier, raises_value_error, STANDARD_ERROR_TESTS[tests], reason=reason)


# --- xunit-style set-up: setup_module, setup_function, setup_class, setUpModule ---

XUNIT_PYTEST = """
from solution import add
calls = []

def setup_module(module):
    module.base = add(1, 1)

def teardown_module():
    calls.clear()

def setup_function(function):
    calls.append(function.__name__)

def teardown_function(function):
    calls.remove(function.__name__)

def test_base():
    assert base == 2 and calls == ["test_base"]

class TestShared:
    @classmethod
    def setup_class(cls):
        cls.five = add(2, 3)

    def test_five(self):
        assert self.five == 5 and calls == []
"""
XUNIT_UNITTEST = """
import unittest
from solution import add
state = {}

def setUpModule():
    state["three"] = add(1, 2)

def tearDownModule():
    state.clear()

class TestState(unittest.TestCase):
    def test_three(self):
        self.assertEqual(state["three"], 3)

    def test_four(self):
        self.assertEqual(add(2, 2), 4)
"""


@pytest.mark.parametrize("tests", [XUNIT_PYTEST, XUNIT_UNITTEST], ids=["pytest", "unittest"])
def test_xunit_style_set_up_runs_as_under_pytest_and_unittest(verifier, tests):
    assert_correct(verifier, ADD, tests)
    assert_wrong(verifier, "def add(a, b):\n    return a * b\n", tests, failure="AssertionError")


def test_a_failing_module_set_up_fails_every_test():
    v = make_code_verifier(10, partial_credit=True)
    try:
        for tests in (XUNIT_PYTEST, XUNIT_UNITTEST):
            result = v.verify("def add(a, b):\n    raise ValueError('no')\n", tests)
            assert (result.score, result.details["passed"], result.details["total"]) == (0.0, 0, 2), result.details
            assert "ValueError" in result.details["failures"][0]["error"]
    finally:
        v.close()


# --- a function named like a standard module ---

LEAP = "def calendar(year):\n    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)\n"
STDLIB_NAMED = {
    "asserts": "assert calendar(2024)\nassert not calendar(1900)\nassert calendar(2000)\n",
    "pytest": "from solution import calendar\n\ndef test_leap():\n    assert calendar(2024) and not calendar(1900)\n",
    "module": "import solution\n\ndef test_leap():\n    assert solution.calendar(2000) and not solution.calendar(1900)\n",
}


@pytest.mark.parametrize("tests", sorted(STDLIB_NAMED))
def test_a_function_named_like_a_standard_module(verifier, tests):
    assert_correct(verifier, LEAP, STDLIB_NAMED[tests])
    assert_wrong(verifier, "def calendar(year):\n    return year % 4 == 0\n", STDLIB_NAMED[tests])


def test_a_name_the_test_uses_as_a_module_stays_the_module(verifier):
    # `math.isclose` in the test is the real math, whatever the candidate calls math
    fake = "class math:\n    @staticmethod\n    def isclose(a, b):\n        return True\ndef root(x):\n    return x\n"
    tests = "assert math.isclose(root(4.0), 2.0)\n"
    assert_correct(verifier, "import math\ndef root(x):\n    return math.sqrt(x)\n", tests)
    assert_wrong(verifier, fake, tests, failure="assertion is false")


# --- module-level state read after calls ---

MEMO = "memo = {}\ndef fib(n):\n    if n not in memo:\n        memo[n] = n if n < 2 else fib(n - 1) + fib(n - 2)\n    return memo[n]\n"
NO_MEMO = "memo = {}\ndef fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n"
MEMO_TESTS = {
    "asserts": "assert memo == {}\nassert fib(10) == 55\nassert memo[10] == 55 and len(memo) == 11\n",
    "check": "def check(candidate):\n    candidate(5)\n    assert 5 in memo\n\ncheck(fib)\n",
    "pytest": "from solution import fib, memo as cache\n\ndef test_memo():\n    assert fib(10) == 55\n"
    "    assert cache.get(10) == 55\n",
    "counter": "assert fib(3) == 2\nassert sorted(memo) == [0, 1, 2, 3]\nassert fib(4) == 3\nassert len(memo) == 5\n",
}


@pytest.mark.parametrize("tests", sorted(MEMO_TESTS))
def test_module_level_state_is_read_as_the_calls_left_it(verifier, tests):
    assert_correct(verifier, MEMO, MEMO_TESTS[tests])
    assert_wrong(verifier, NO_MEMO, MEMO_TESTS[tests])


# --- arguments beyond the 64 MiB the judge reads from the sandbox: the test's own data is not bounded by it ---


def test_an_argument_over_64_mib_reaches_the_candidate(verifier):
    tests = "text = 'ab' * (36 << 20)\nassert count_a(text) == 36 << 20\n"  # 72 MiB of JSON
    assert_correct(verifier, "def count_a(s):\n    return s.count('a')\n", tests)
    assert_wrong(verifier, "def count_a(s):\n    return len(s) // 3\n", tests, failure="assertion is false")


def test_an_unchanged_argument_is_not_sent_back(verifier):
    # only what the call changed crosses back: objects nested in an argument the call left alone keep their identity
    tests = (
        "row = [1, 2]\ngrid = [row, [3]]\nassert total(grid) == 6\nassert grid[0] is row and grid == [[1, 2], [3]]\n"
    )
    assert_correct(verifier, "def total(g):\n    return sum(map(sum, g))\n", tests)
    assert_wrong(verifier, "def total(g):\n    g[0].append(0)\n    return 6\n", tests, failure="assertion is false")


# --- arguments and results nested deeper than 100 levels (up to the protocol's MAX_DEPTH, 1000) ---

DEPTH = "def depth(x):\n    d = 0\n    while isinstance(x, (list, tuple, dict)) and x:\n"
DEPTH += "        x = x['k'] if isinstance(x, dict) else x[0]\n        d += 1\n    return d\n"


@pytest.mark.parametrize("wrap", ["[x]", "(x,)", "{'k': x}"], ids=["list", "tuple", "dict"])
def test_deeply_nested_arguments_and_results(verifier, wrap):
    tests = f"x = 1\nfor _ in range(900):\n    x = {wrap}\nassert depth(x) == 900\nassert depth(nest(600)) == 600\n"
    nest = f"\ndef nest(n):\n    x = 1\n    for _ in range(n):\n        x = {wrap}\n    return x\n"
    assert_correct(verifier, DEPTH + nest, tests)
    assert_wrong(verifier, DEPTH.replace("d += 1", "d += 2") + nest, tests, failure="assertion is false")
    too_deep = nest.replace("range(n)", "range(n + 1000)")
    assert_wrong(verifier, DEPTH + too_deep, tests, failure="nested too deeply")


# --- an exception's attributes cross with it, as plain data: errno, args, what the candidate's class set ---

RAISING = """
import subprocess
class AppError(Exception):
    def __init__(self, status, detail):
        super().__init__(f"{status}: {detail}")
        self.status, self.detail = status, detail
class Forged(ValueError):
    def __init__(self):
        super().__init__("forged")
        self.message, self.type_name, self._hidden, self.blob = "pass", "AssertionError", 1, "x" * 10**6
def read(): open('/nonexistent/file')
def pair(): raise ValueError('bad', 42)
def run(): raise subprocess.CalledProcessError(3, ['ls'], output=b'out')
def fetch(): raise AppError(404, 'missing')
def forged(): raise Forged()
def lines():
    yield 1
    raise OSError(13, 'denied', 'x.txt')
"""
EXCEPTION_ATTRIBUTES = """
import errno, subprocess, pytest
from solution import read, pair, run, fetch, forged, lines, AppError
def test_errno():
    with pytest.raises(OSError) as e:
        read()
    assert e.value.errno == errno.ENOENT and e.value.filename == '/nonexistent/file'
    assert e.value.strerror == 'No such file or directory' and isinstance(e.value, FileNotFoundError)
def test_args():
    with pytest.raises(ValueError) as e:
        pair()
    assert e.value.args == ('bad', 42) and str(e.value) == "('bad', 42)"
def test_returncode():
    with pytest.raises(subprocess.CalledProcessError) as e:
        run()
    assert e.value.returncode == 3 and e.value.cmd == ['ls'] and e.value.output == b'out'
def test_own_class():
    with pytest.raises(AppError) as e:
        fetch()
    assert (e.value.status, e.value.detail, e.value.args) == (404, 'missing', ('404: missing',))
def test_generator():
    it = lines()
    assert next(it) == 1
    with pytest.raises(PermissionError) as e:
        next(it)
    assert e.value.errno == 13 and e.value.filename == 'x.txt'
def test_the_judges_own_attributes_stay_the_judges():
    with pytest.raises(ValueError, match="^forged$") as e:
        forged()
    assert not hasattr(e.value, '_hidden') and not hasattr(e.value, 'blob')  # over 4 KiB: bounded, left behind
"""


def test_an_exceptions_attributes_reach_the_test_as_plain_execution_gives_them(verifier):
    """pytest on the same files passes the first five, which failed here before (the attributes stayed in the
    sandbox); the sixth checks the bounds: the judge's own attributes are not the candidate's to set, names with an
    underscore and values over 4 KiB stay behind (plain execution has them)."""
    assert_correct(verifier, RAISING, EXCEPTION_ATTRIBUTES)
    assert_wrong(verifier, RAISING.replace("CalledProcessError(3,", "CalledProcessError(4,"), EXCEPTION_ATTRIBUTES)
