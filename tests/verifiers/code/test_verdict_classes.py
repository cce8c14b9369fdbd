"""Verdict fidelity, class by class: each class holds a correct program that plain execution passes and that must
score 1.0, and a wrong program of the same class that must score 0 for the stated reason (never only the score).

Part 1, wrong programs that were paid: text the candidate chooses (a class's name) in the string form of what it
returns, APPS's lists of dicts, and integers under `float_tolerance` (test_output_match.py holds the comparison
itself). Part 2, correct programs that scored 0 or None: see test_verdict_fidelity.py.
"""

from __future__ import annotations

import json

import pytest
from code_verifier_helpers import assert_correct, assert_wrong, make_code_verifier

from trl_grpo_ext.verifiers.code.standalone.protocol import decode


@pytest.fixture(scope="module")
def verifier():
    v = make_code_verifier(10, partial_credit=False)
    yield v
    v.close()


# --- the string form of what the candidate returns holds no text it chose ---

NAMED_VALUES = {
    "instance": "class Valid:\n    pass\ndef check(s):\n    return Valid()",
    "class": "class Valid:\n    pass\ndef check(s):\n    return Valid",
    "function": "def Valid():\n    pass\ndef check(s):\n    return Valid",
    "generator": "def Valid():\n    yield 1\ndef check(s):\n    return Valid()",
    "instance_in_a_list": "class Valid:\n    pass\ndef check(s):\n    return [Valid()]",
    "custom_str": "class Valid:\n    def __str__(self):\n        return 'Valid'\n    __repr__ = __str__\n"
    "def check(s):\n    return Valid()",
}
STRING_TESTS = {
    "str": "assert 'Valid' in str(check('x'))",
    "repr": "assert 'Valid' in repr(check('x'))",
    "f-string": "assert 'Valid' in f\"{check('x')}\"",
    "format": "assert 'Valid' in '{}'.format(check('x'))",
    "str of the type": "assert 'Valid' in str(type(check('x')))",
}


@pytest.mark.parametrize("test", sorted(STRING_TESTS))
@pytest.mark.parametrize("value", sorted(NAMED_VALUES))
def test_a_class_name_never_reaches_the_string_form(verifier, value, test):
    assert_wrong(verifier, NAMED_VALUES[value], STRING_TESTS[test], failure="assertion is false")


@pytest.mark.parametrize("test", sorted(STRING_TESTS)[:4])
def test_a_string_the_candidate_returns_is_its_string_form(verifier, test):
    assert_correct(verifier, "def check(s):\n    return 'Valid: ' + s", STRING_TESTS[test])


def test_the_string_form_of_an_exception_is_its_message_only():
    # as in plain execution, str(e) is the message: the class's name, the candidate's choice, is not in it
    tests = "try:\n    check('x')\n    seen = ''\nexcept Exception as e:\n    seen = str(e)\nassert 'Valid' in seen"
    v = make_code_verifier(10)
    try:
        assert_correct(v, "def check(s):\n    raise ValueError('Valid input expected')", tests)
        assert_wrong(v, "class Valid(Exception):\n    pass\ndef check(s):\n    raise Valid()", tests)
        assert_wrong(v, "class Valid(ValueError):\n    pass\ndef check(s):\n    raise Valid('no')", tests)
    finally:
        v.close()


def test_a_value_the_sandbox_could_not_encode_names_nothing():
    value = decode({"x": "Valid"})
    assert "Valid" not in str(value) and "Valid" not in repr(value)
    with pytest.raises(TypeError) as caught:
        value == 1  # noqa: B015
    assert "Valid" not in str(caught.value)


# --- APPS call-based rows whose expected value is a list of dicts: compared whole, as APPS compares them ---

RECORDS = json.dumps(
    {
        "fn_name": "records",
        "inputs": [[2]],
        "outputs": [[[{"name": "a", "id": 0}, {"name": "b", "id": 1}]]],
    }
)
RECORDS_UNWRAPPED = json.dumps(
    {"fn_name": "records", "inputs": [[2]], "outputs": [[{"name": "a", "id": 0}, {"name": "b", "id": 1}]]}
)


@pytest.mark.parametrize("row", [RECORDS, RECORDS_UNWRAPPED], ids=["wrapped", "unwrapped"])
def test_apps_list_of_dicts_is_compared_whole(verifier, row):
    correct = "def records(n):\n    return [{'name': 'ab'[i], 'id': i} for i in range(n)]"
    assert_correct(verifier, correct, row)
    assert_wrong(verifier, "def records(n):\n    return [{'name': 'a', 'id': 0}]", row, failure="returned")
    assert_wrong(verifier, "def records(n):\n    return [{'name': 'b', 'id': 1}, {'name': 'a', 'id': 0}]", row)


def test_apps_dict_keys_become_ints_only_where_every_key_converts(verifier):
    # APPS's `{int(k): v ...}` runs in a try: keys that are not numbers leave the dict as it is (and unwrapped)
    words = json.dumps({"fn_name": "count", "inputs": [["a b a"]], "outputs": [{"a": 2, "b": 1}]})
    assert_correct(
        verifier, "from collections import Counter\ndef count(s):\n    return dict(Counter(s.split()))", words
    )
    assert_wrong(verifier, "def count(s):\n    return [{'a': 2, 'b': 1}]", words, failure="returned")
    numbers = json.dumps({"fn_name": "squares", "inputs": [[3]], "outputs": [[{"1": 1, "2": 4}, {"3": 9}]]})
    assert_correct(verifier, "def squares(n):\n    return [{1: 1, 2: 4}, {3: 9}]", numbers)
    assert_wrong(verifier, "def squares(n):\n    return [{1: 1, 2: 4}]", numbers, failure="returned")


# --- a tested function named like a standard module, which the completion lacks: 0, never None ---
# The test calls `statistics(xs)` (it never reads an attribute of it: not a module to the test); a completion without
# such a function fails it, as in plain execution, where the test's call raises NameError. Only a name the test reads
# attributes of (`math.sqrt`) and never imported makes the reference unusable (test_failures.py).

STDLIB_NAMED_FUNCTIONS = {
    "statistics": ("def statistics(xs):\n    return (min(xs), max(xs))\n", "[3, 1, 2]", (1, 3)),
    "random": ("def random(n):\n    return 4\n", "1", 4),  # chosen by a fair dice roll
    "heapq": ("def heapq(xs):\n    return sorted(xs)[:1]\n", "[5, 2, 7]", [2]),
    "operator": ("def operator(s):\n    return s.strip('()')\n", "'(+)'", "+"),
}


def _stdlib_named_tests(name: str, argument: str, expected) -> dict:
    return {
        "asserts": f"assert {name}({argument}) == {expected!r}\n",
        "pytest": f"from solution import {name}\n\ndef test_it():\n    assert {name}({argument}) == {expected!r}\n",
        "pytest_unimported": f"def test_it():\n    assert {name}({argument}) == {expected!r}\n",
        "unittest": f"import unittest\n\nclass T(unittest.TestCase):\n    def test_it(self):\n"
        f"        self.assertEqual({name}({argument}), {expected!r})\n",
        "humaneval": {
            "test": f"def check(candidate):\n    assert candidate({argument}) == {expected!r}\n    assert {name}({argument}) "
            f"== {expected!r}\n",
            "entry_point": "helper",
        },
    }


@pytest.mark.parametrize("form", ["asserts", "pytest", "pytest_unimported", "unittest", "humaneval"])
@pytest.mark.parametrize("name", sorted(STDLIB_NAMED_FUNCTIONS))
def test_a_missing_function_named_like_a_standard_module_scores_zero(verifier, name, form):
    correct, argument, expected = STDLIB_NAMED_FUNCTIONS[name]
    tests = _stdlib_named_tests(name, argument, expected)[form]
    helper = f"\ndef helper(x):\n    return {name}(x)\n"
    assert_correct(verifier, correct + helper, tests)
    result = verifier.verify("def mean(xs):\n    return 0\n\ndef helper(x):\n    return 0\n", tests)
    assert result.score == 0.0 and not result.reason.startswith("unusable"), (result.reason, result.details)
