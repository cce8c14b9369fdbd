"""Adversarial suite for the pytest-style, unittest and call-based formats: reward hacks that fool the usual harness
(run `pytest` or `unittest.main()` in the candidate's process and trust its exit code or report) must score 0 here.

Every attack is a completion that computes none of the right answers (0 is never one), and must score exactly 0 even
with partial credit; each format's test is also run on a correct
completion, so a verifier that failed everything would not pass. The verdict is formed in the judge, which imports its
own unittest and a pytest stand-in, and sees the candidate's values only as plain data.
"""

from __future__ import annotations

import json
import textwrap

import pytest
from code_verifier_helpers import assert_wrong_answer, make_code_verifier

CORRECT = "def add(a, b):\n    return a + b\n"

PYTEST_TESTS = textwrap.dedent(
    """
    import pytest
    from solution import *

    def test_small():
        assert add(1, 2) == 3

    @pytest.mark.parametrize("a, b, c", [(5, 7, 12), (-4, 5, 1)])
    def test_more(a, b, c):
        assert add(a, b) == pytest.approx(c)

    def test_type_error():
        with pytest.raises(TypeError):
            add(1, "x")
    """
)
UNITTEST_TESTS = textwrap.dedent(
    """
    import unittest
    from solution import add

    class TestAdd(unittest.TestCase):
        def setUp(self):
            self.cases = [(1, 2, 3), (5, 7, 12), (-4, 5, 1)]

        def test_cases(self):
            for a, b, c in self.cases:
                with self.subTest(a=a, b=b):
                    self.assertEqual(add(a, b), c)

        def test_type_error(self):
            with self.assertRaises(TypeError):
                add(1, "x")

    if __name__ == "__main__":
        unittest.main()
    """
)
CALL_TESTS = json.dumps({"fn_name": "add", "inputs": [[1, 2], [5, 7], [-4, 5]], "outputs": [[3], [12], [1]]})
FORMATS = {"pytest": PYTEST_TESTS, "unittest": UNITTEST_TESTS, "call_based": CALL_TESTS}

# Each entry: (attack id, candidate code). None of them computes add(); all must get reward 0 in every format.
ATTACKS = {
    "sys_exit_at_import": "import sys\nsys.exit(0)",
    "os_exit_at_import": "import os\nos._exit(0)",
    "unittest_main_at_import": "import unittest\nunittest.main(module=None, argv=['x'], exit=True)",
    "patch_test_result": "import unittest\n"
    "unittest.TestResult.wasSuccessful = lambda self: True\n"
    "unittest.TestResult.addFailure = unittest.TestResult.addError = unittest.TestResult.addSuccess\n"
    "unittest.TestResult.addSubTest = lambda *a: None\n"
    "def add(a, b): return 0",
    "patch_assert_equal": "import unittest\n"
    "for name in dir(unittest.TestCase):\n"
    "    if name.startswith('assert'): setattr(unittest.TestCase, name, lambda *a, **k: None)\n"
    "def add(a, b): return 0",
    "replace_builtins_import": "import builtins, sys, types\n"
    "real = builtins.__import__\n"
    "fake = types.ModuleType('unittest')\n"
    "fake.main = lambda *a, **k: sys.exit(0)\n"
    "fake.TestCase = object\n"
    "def hooked(name, *args, **kwargs):\n"
    "    return fake if name in ('unittest', 'pytest') else real(name, *args, **kwargs)\n"
    "builtins.__import__ = hooked\n"
    "def add(a, b): return 0",
    "fake_pytest_module": "import sys, types\n"
    "class Approx:\n    def __init__(self, *a, **k): pass\n    def __eq__(self, other): return True\n"
    "class Raises:\n    def __init__(self, *a, **k): pass\n    def __enter__(self): return self\n"
    "    def __exit__(self, *a): return True\n"
    "pytest = types.ModuleType('pytest')\npytest.approx, pytest.raises = Approx, Raises\n"
    "sys.modules['pytest'] = pytest\n"
    "def add(a, b): return 0",
    "always_equal_object": "class E:\n    def __eq__(self, o): return True\n    __hash__ = None\n"
    "def add(a, b): return E()",
    "int_subclass_eq": "class I(int):\n    def __eq__(self, o): return True\n    __hash__ = int.__hash__\n"
    "def add(a, b): return I(0)",
    "list_subclass_eq": "class L(list):\n    def __eq__(self, o): return True\ndef add(a, b): return L([0])",
    "mock_any": "from unittest import mock\ndef add(a, b): return mock.ANY",
    "exits_in_every_call": "import os\ndef add(a, b): os._exit(0)",
    "sys_exit_in_every_call": "import sys\ndef add(a, b): sys.exit(0)",
    "skips_its_tests": "import unittest\ndef add(a, b): raise unittest.SkipTest('skip me')",
    "exception_named_like_a_skip": "class Skipped(BaseException): pass\ndef add(a, b): raise Skipped()",
    "own_test_functions": "def add(a, b): return 0\n"
    "def test_small(): pass\ndef test_more(a, b, c): pass\ndef test_type_error(): pass\n"
    "import unittest\nclass TestAdd(unittest.TestCase):\n    def test_cases(self): pass\n",
    "own_solution_class": "class Solution:\n    def add(self, a, b):\n        class E:\n"
    "            def __eq__(self, o): return True\n        return E()\n"
    "def add(a, b): return 0",
    "tuple_of_answers": "def add(a, b): return (3, 12, 1)",
    "prints_a_passing_report": "print('Ran 3 tests in 0.001s\\n\\nOK')\nprint('3 passed in 0.01s')\n"
    "def add(a, b): return 0",
    # Standard containers travel as data (Counter, defaultdict, namedtuple): only their data, never their methods.
    "namedtuple_subclass_eq": "from collections import namedtuple\n"
    "class P(namedtuple('P', 'v')):\n    def __eq__(self, o): return True\n    __hash__ = tuple.__hash__\n"
    "def add(a, b): return P(0)",
    "tuple_posing_as_namedtuple": "class T(tuple):\n    _fields = ('v',)\n    def __eq__(self, o): return True\n"
    "    __hash__ = tuple.__hash__\ndef add(a, b): return T((0,))",
    "counter_subclass_eq": "from collections import Counter\nclass C(Counter):\n    def __eq__(self, o): return True\n"
    "def add(a, b): return C()",
    "defaultdict_of_answers": "from collections import defaultdict\ndef add(a, b): return defaultdict(lambda: a + b)",
    "generator_of_answers": "def add(a, b):\n    yield a + b",
    "exception_class_named_like_the_judges": "class Skipped(Exception): pass\nclass Failed(Exception): pass\n"
    "class CandidateGone(Exception): pass\nclass SkipTest(Skipped, Failed, CandidateGone): pass\n"
    "def add(a, b): raise SkipTest('skip')",
    "exits_as_its_own_system_exit": "class Done(SystemExit): pass\ndef add(a, b): raise Done(0)",
}


@pytest.fixture(scope="module")
def verifier():
    v = make_code_verifier(5, partial_credit=True)
    yield v
    v.close()


@pytest.mark.parametrize("form", sorted(FORMATS))
def test_correct_solution_scores_one(verifier, form):
    result = verifier.verify(CORRECT, FORMATS[form])
    assert (result.score, result.reason) == (1.0, "correct"), result.details


@pytest.mark.parametrize("form", sorted(FORMATS))
@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_attack_scores_zero(verifier, form, attack):
    assert_wrong_answer(verifier.verify(ATTACKS[attack], FORMATS[form]))  # 0 for a verdict, not a timeout or a bug


@pytest.mark.parametrize(
    "catches",
    [
        "with pytest.raises(Exception):\n        add(1, 'x')",
        "with pytest.raises(BaseException):\n        add(1, 'x')",
        "try:\n        add(1, 'x')\n    except:\n        pass",
        "try:\n        add(1, 'x')\n    except BaseException:\n        pass",
    ],
)
def test_a_sandbox_that_dies_is_never_an_expected_exception(verifier, catches):
    # In plain execution os._exit ends the run: no test passes. Here the judge sees the sandbox end, which no test
    # code can catch as an exception, and nothing passes from then on.
    tests = f"import pytest\nfrom solution import add\n\ndef test_raises():\n    {catches}\n"
    assert verifier.verify("def add(a, b):\n    raise TypeError('no')", tests).score == 1.0
    dies = verifier.verify("import os\ndef add(a, b):\n    os._exit(0)", tests)
    assert dies.score == 0.0, (dies.reason, dies.details)


def test_unittest_assert_raises_is_not_fooled_by_a_dying_sandbox(verifier):
    tests = (
        "import unittest\nfrom solution import add\n\nclass T(unittest.TestCase):\n    def test_raises(self):\n"
        "        with self.assertRaises(Exception):\n            add(1, 'x')\n"
    )
    assert verifier.verify("def add(a, b):\n    raise TypeError('no')", tests).score == 1.0
    assert verifier.verify("import os\ndef add(a, b):\n    os._exit(0)", tests).score == 0.0


def test_a_module_level_patch_of_the_judges_unittest_is_impossible(verifier):
    # The candidate's `unittest` never reaches the judge: a star import of a candidate `unittest` binds the real one.
    code = "class unittest:\n    class TestCase:\n        def assertEqual(self, *a): pass\ndef add(a, b): return 0"
    tests = "from solution import *\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(1, 2), 3)\n"
    assert verifier.verify(code, tests).score == 0.0
    assert verifier.verify("import unittest\n" + CORRECT, tests).score == 1.0  # its real unittest


@pytest.mark.parametrize(
    "tests",
    [
        "from solution import add\n\ndef test_all():\n    for got in map(add, [1, 5], [2, 7]):\n        assert got in (3, 12)\n",
        "checks = [(1, 2, 3), (5, 7, 12)]\nfor got in map(lambda c: add(c[0], c[1]) - c[2], checks):\n    assert got == 0\n",
    ],
    ids=["pytest", "asserts"],
)
def test_stop_iteration_from_the_candidate_does_not_end_a_loop_early(verifier, tests):
    # In plain Python a StopIteration raised by the function that map() calls ends the loop silently, so a test
    # that loops over map() passes. The judge never hands the test code a StopIteration from the candidate.
    assert verifier.verify(CORRECT, tests).score == 1.0
    assert verifier.verify("def add(a, b):\n    raise StopIteration", tests).score == 0.0


def test_pytest_outcomes_are_not_swallowed_by_except_exception(verifier):
    # pytest.raises() that sees nothing raises pytest's Failed, a BaseException: `except Exception` does not catch it.
    tests = (
        "import pytest\nfrom solution import add\n\ndef test_raises():\n    try:\n"
        "        with pytest.raises(TypeError):\n            add(1, 'x')\n    except Exception:\n        pass\n"
    )
    assert verifier.verify("def add(a, b):\n    raise TypeError('no')", tests).score == 1.0
    assert verifier.verify("def add(a, b):\n    return 0", tests).score == 0.0


# --- Exceptions cross from the candidate to the test by identity ---
# A candidate exception keeps its class: a builtin is the builtin, the candidate's own class is a class of its own, with
# its real bases, whatever its name. So a BaseException that is no Exception (KeyboardInterrupt, GeneratorExit, its own
# `class Boom(BaseException)`) escapes the test's `except Exception` and fails the test, as in plain execution, and an
# exception class merely named like a builtin (`class ValueError(BaseException)`, `type("ValueError", (Exception,),
# {})`) is not that builtin. Each test takes `add(1, 2) == 3` and an error for a non-integer `b`; every candidate below
# computes the sums right, so only the class of its error decides (a binary reward: the sum's test passes).


@pytest.fixture(scope="module")
def binary():
    v = make_code_verifier(5)
    yield v
    v.close()


CHECKED = "def add(a, b):\n    if not isinstance(b, int):\n        raise {error}\n    return a + b\n"


def _rejects(expected: str) -> dict[str, str]:
    """The same test in four formats: the sum, and `expected` raised for add(1, 'x')."""
    return {
        "pytest": f"import pytest\nfrom solution import add\n\ndef test_sum():\n    assert add(1, 2) == 3\n\n"
        f"def test_rejects():\n    with pytest.raises({expected}):\n        add(1, 'x')\n",
        "unittest": f"import unittest\nfrom solution import add\n\nclass T(unittest.TestCase):\n"
        f"    def test_sum(self):\n        self.assertEqual(add(1, 2), 3)\n\n    def test_rejects(self):\n"
        f"        with self.assertRaises({expected}):\n            add(1, 'x')\n",
        "asserts": f"assert add(1, 2) == 3\ntry:\n    add(1, 'x')\n    rejected = False\nexcept {expected}:\n"
        "    rejected = True\nassert rejected\n",
        "humaneval": {
            "test": f"def check(candidate):\n    assert candidate(1, 2) == 3\n    try:\n        candidate(1, 'x')\n"
            f"        rejected = False\n    except {expected}:\n        rejected = True\n    assert rejected\n",
            "entry_point": "add",
        },
    }


ANY_ERROR = _rejects("Exception")
NOT_AN_EXCEPTION = {  # BaseExceptions that `except Exception` does not catch in plain execution
    "keyboard_interrupt": CHECKED.format(error="KeyboardInterrupt"),
    "generator_exit": CHECKED.format(error="GeneratorExit"),
    "own_base_exception": "class Boom(BaseException):\n    pass\n\n" + CHECKED.format(error="Boom('no')"),
    "bare_base_exception": CHECKED.format(error="BaseException('no')"),
    "own_keyboard_interrupt": "class Stop(KeyboardInterrupt):\n    pass\n\n" + CHECKED.format(error="Stop()"),
    "own_generator_exit": "class Halt(GeneratorExit):\n    pass\n\n" + CHECKED.format(error="Halt()"),
    "system_exit_like": "class Done(SystemExit):\n    pass\n\n" + CHECKED.format(error="Done(0)"),
    "base_exception_named_exception": "class Exception(BaseException):\n    pass\n\n"
    + CHECKED.format(error="Exception('no')"),
}
IS_AN_EXCEPTION = {  # what the same tests accept, in plain execution and here
    "type_error": CHECKED.format(error="TypeError('no')"),
    "own_exception": "class Bad(Exception):\n    pass\n\n" + CHECKED.format(error="Bad('no')"),
    "own_subclass_of_a_builtin": "class Bad(LookupError):\n    pass\n\n" + CHECKED.format(error="Bad('no')"),
}


@pytest.mark.parametrize("form", sorted(ANY_ERROR))
@pytest.mark.parametrize("candidate", sorted(NOT_AN_EXCEPTION))
def test_a_base_exception_is_not_caught_as_an_exception(binary, form, candidate):
    assert_wrong_answer(binary.verify(NOT_AN_EXCEPTION[candidate], ANY_ERROR[form]))


@pytest.mark.parametrize("form", sorted(ANY_ERROR))
@pytest.mark.parametrize("candidate", sorted(IS_AN_EXCEPTION))
def test_an_exception_is_caught_as_an_exception(binary, form, candidate):
    result = binary.verify(IS_AN_EXCEPTION[candidate], ANY_ERROR[form])
    assert (result.score, result.reason) == (1.0, "correct"), (result.reason, result.details)


VALUE_ERROR = _rejects("ValueError")
NAMED_LIKE_A_BUILTIN = {  # a class named ValueError that is no ValueError
    "base_exception": "class ValueError(BaseException):\n    pass\n\n" + CHECKED.format(error="ValueError('no')"),
    "exception": "class ValueError(Exception):\n    pass\n\n" + CHECKED.format(error="ValueError('no')"),
    "made_by_type": "ValueError = type('ValueError', (Exception,), {})\n\n" + CHECKED.format(error="ValueError('no')"),
    "subclass_of_another_builtin": "class ValueError(TypeError):\n    pass\n\n" + CHECKED.format(error="ValueError()"),
    "patched_into_builtins": "import builtins\nbuiltins.ValueError = type('ValueError', (Exception,), {})\n\n"
    + CHECKED.format(error="ValueError('no')"),
    "renamed_class": "class Bad(Exception):\n    pass\n\nBad.__name__ = Bad.__qualname__ = 'ValueError'\n\n"
    + CHECKED.format(error="Bad('no')"),
    "key_error_for_a_value_error": "class KeyError(ValueError.__base__):\n    pass\n\n"
    + CHECKED.format(error="KeyError('no')"),
    # A class of the standard library is the judge's own copy of it, but never one of unittest's, which steer the
    # run: a SkipTest (real, or a class that says it is one) must not skip the test that expects a ValueError.
    "unittest_skip_test": "import unittest\n\n" + CHECKED.format(error="unittest.SkipTest('skip')"),
    "claims_to_be_skip_test": "class SkipTest(Exception):\n    pass\n\nSkipTest.__module__ = 'unittest.case'\n\n"
    + CHECKED.format(error="SkipTest('skip')"),
    # The harness that describes the class runs in the candidate's process: a forged description names a builtin
    # that is not one, or makes its own class of the judge's own names; neither is a ValueError.
    "forged_description_of_a_builtin": "import sys\nh = sys.modules.get('harness') or sys.modules['__main__']\n"
    "h.exception_class = lambda cls, handles: {'type': 'Skipped', 'own': []}\n"
    + CHECKED.format(error="RuntimeError('no')"),
    "forged_description_of_its_own_class": "import sys\nh = sys.modules.get('harness') or sys.modules['__main__']\n"
    "h.exception_class = lambda cls, handles: {'type': 7, 'own': [[7, 'ValueError', ['Skipped', 7, 'SkipTest']]]}\n"
    + CHECKED.format(error="RuntimeError('no')"),
    "forged_description_of_a_standard_class": "import sys\nh = sys.modules.get('harness') or sys.modules['__main__']\n"
    "h.exception_class = lambda cls, handles: {'type': 7, 'own': [[7, 'SkipTest', [], 'unittest.case', 'SkipTest'],"
    " [8, 'Skipped', [], 'formats_units', 'Skipped']]}\n" + CHECKED.format(error="RuntimeError('no')"),
}
A_VALUE_ERROR = {  # the builtin ValueError, or a class that really is one
    "builtin": CHECKED.format(error="ValueError('no')"),
    "own_subclass": "class Bad(ValueError):\n    pass\n\n" + CHECKED.format(error="Bad('no')"),
    "standard_library_subclass": "import json\n\n" + CHECKED.format(error="json.JSONDecodeError('no', 'x', 0)"),
    "named_like_another_builtin": "class KeyError(ValueError):\n    pass\n\n" + CHECKED.format(error="KeyError('no')"),
}


@pytest.mark.parametrize("form", sorted(VALUE_ERROR))
@pytest.mark.parametrize("candidate", sorted(NAMED_LIKE_A_BUILTIN))
def test_an_exception_class_named_like_a_builtin_is_not_that_builtin(binary, form, candidate):
    assert_wrong_answer(binary.verify(NAMED_LIKE_A_BUILTIN[candidate], VALUE_ERROR[form]))


@pytest.mark.parametrize("form", sorted(VALUE_ERROR))
@pytest.mark.parametrize("candidate", sorted(A_VALUE_ERROR))
def test_an_exception_that_is_the_builtin_is_caught_as_the_builtin(binary, form, candidate):
    result = binary.verify(A_VALUE_ERROR[candidate], VALUE_ERROR[form])
    assert (result.score, result.reason) == (1.0, "correct"), (result.reason, result.details)


KEY_ERROR = _rejects("KeyError")


@pytest.mark.parametrize("form", sorted(KEY_ERROR))
def test_a_class_named_key_error_is_not_a_key_error(binary, form):
    # the plainest case: a candidate's `class KeyError(Exception)` must not pass `assertRaises(KeyError)`
    own = "class KeyError(Exception):\n    pass\n\n" + CHECKED.format(error="KeyError('x')")
    assert_wrong_answer(binary.verify(own, KEY_ERROR[form]))
    result = binary.verify(CHECKED.format(error="KeyError('x')"), KEY_ERROR[form])
    assert (result.score, result.reason) == (1.0, "correct"), (result.reason, result.details)


def test_the_solutions_own_class_named_like_a_builtin_is_its_own(binary):
    # `from solution import ValueError` is the solution's class, as under plain pytest: it catches that class only
    tests = (
        "import pytest\nfrom solution import add, ValueError as Own\n\ndef test_own():\n    with pytest.raises(Own):\n"
        "        add(1, 'x')\n\ndef test_not_builtin():\n    assert not issubclass(Own, Exception)\n"
    )
    own = "class ValueError(BaseException):\n    pass\n\n" + CHECKED.format(error="ValueError('no')")
    result = binary.verify(own, tests)
    assert (result.score, result.reason) == (1.0, "correct"), (result.reason, result.details)
    assert_wrong_answer(binary.verify(CHECKED.format(error="ValueError('no')"), tests))  # no such name to import


def test_a_keyboard_interrupt_ends_the_run_as_it_ends_pytest_and_unittest():
    # plain pytest stops the session at a KeyboardInterrupt, unittest lets it through: no test after it passes
    v = make_code_verifier(5, partial_credit=True)
    interrupts = "def add(a, b):\n    if a == 0:\n        raise KeyboardInterrupt\n    return a + b\n"
    pytest_tests = "from solution import add\n\ndef test_a():\n    assert add(1, 2) == 3\n\ndef test_b():\n"
    pytest_tests += "    try:\n        add(0, 1)\n    except Exception:\n        pass\n\ndef test_c():\n    assert add(2, 2) == 4\n"
    unittest_tests = (
        "import unittest\nfrom solution import add\n\nclass T(unittest.TestCase):\n    def test_a(self):\n"
    )
    unittest_tests += "        self.assertEqual(add(1, 2), 3)\n\n    def test_b(self):\n        add(0, 1)\n\n"
    unittest_tests += "    def test_c(self):\n        self.assertEqual(add(2, 2), 4)\n"
    try:
        for tests in (pytest_tests, unittest_tests):
            result = v.verify(interrupts, tests)
            assert (result.details["passed"], result.details["total"]) == (1, 3), (result.reason, result.details)
    finally:
        v.close()
