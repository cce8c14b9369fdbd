"""How stdout is compared with the expected output of a stdin/stdout case (no sandbox needed)."""

from __future__ import annotations

import pytest

from trl_grpo_ext.verifiers import get_verifier
from trl_grpo_ext.verifiers.code.outputs import outputs_match


@pytest.mark.parametrize(
    "actual, expected, same",
    [
        ("3\n", "3", True),
        ("1 2  \r\n3\n\n\n", "1 2\n3", True),  # trailing spaces, CRLF and trailing blank lines do not count
        ("1  2\n", "1 2\n", False),  # inner spacing does, in exact mode
        ("0.3333333\n", "0.333333333\n", False),
        ("", "\n", True),
    ],
)
def test_exact_mode(actual, expected, same):
    assert outputs_match(actual, expected) is same


@pytest.mark.parametrize(
    "actual, expected, same",
    [
        ("0.3333333\n", "0.333333333\n", True),  # |diff| = 3.3e-8
        ("0.3333\n", "0.333333333\n", False),  # |diff| = 3.3e-5
        ("1e6\n", "1000000.5\n", True),  # relative: 0.5 <= 1e-6 * 1000000.5
        ("1000001\n", "1000000\n", False),  # two integers stay exact
        ("1000000.0\n", "1000000\n", True),
        ("2.0000001 yes\n", "2.0  yes", True),  # token by token: inner spacing no longer counts
        ("2.0000001 yes\n", "2 yes", False),  # an expected integer is exact
        ("2.0000001 no\n", "2 yes", False),
        ("2.0 3.0\n", "2.0\n", False),  # a missing token
        ("nan\n", "nan\n", True),  # equal text
        ("nan\n", "0.5\n", False),
        ("inf\n", "1e400\n", False),  # not finite: only equal text would do
        ("1.5\n2.5\n", "1.5\n", False),  # a missing line
        # An expected integer stays exact: the same number written as a decimal, nothing else.
        ("1.234568e11\n", "123456789012\n", False),  # within 1e-6 relative, but not the integer
        ("1e-7\n", "0\n", False),
        ("0.0000001\n", "0\n", False),
        ("-1e-7\n", "-0\n", False),
        ("123456789012345678901234567890.0\n", "123456789012345678901234567890\n", True),
        ("1.2345678901234567890123456788e29\n", "123456789012345678901234567890\n", False),  # float() says equal
        ("1e6\n", "1000000\n", True),
        ("0.0\n", "0\n", True),
        ("1e99999999999999999999\n", "1\n", False),  # beyond a Decimal's exponent
        ("-0\n", "0\n", False),  # two integers compare as text, as without a tolerance
        ("3\n", "2.9999999\n", True),  # an expected decimal accepts an integer within the tolerance
        ("0x10\n", "16.0\n", False),  # float() would read neither of these; no checker does
        ("1_000.0\n", "1000.0\n", False),
        ("infinity\n", "1e400\n", False),
    ],
)
def test_tolerance_mode(actual, expected, same):
    assert outputs_match(actual, expected, float_tolerance=1e-6) is same


@pytest.mark.parametrize("value", [0, -1e-6, 1, 2.0, "1e-6", True])
def test_bad_float_tolerance_names_the_option(value):
    with pytest.raises(ValueError, match="float_tolerance"):
        get_verifier("code", float_tolerance=value)


# The candidate's output is compared in the trainer's process: each step must be linear in its length.
# The regular expression this replaced, `[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?`, backtracked quadratically on a
# token of digits that ends otherwise (3.4 s for 16,000 digits and an `x`); number_kind reads the same tokens.
_OLD_DECIMAL = r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?"


def test_number_kind_reads_the_tokens_the_regular_expression_read():
    import itertools
    import re

    from trl_grpo_ext.verifiers.code.outputs import DECIMAL, INTEGER, number_kind

    decimal, integer = re.compile(_OLD_DECIMAL), re.compile(r"[+-]?\d+")
    for length in range(7):
        for chars in itertools.product("09.eE+-x\u0663", repeat=length):
            token = "".join(chars)
            expected = None if not decimal.fullmatch(token) else INTEGER if integer.fullmatch(token) else DECIMAL
            assert number_kind(token) == expected, token


def test_float_reads_exactly_the_ascii_number_tokens():
    """`_numbers_match` lets float() alone read a token of the characters 0-9 . e E + -: it must accept exactly the
    tokens number_kind accepts there (nan, inf and 1_000 have other characters and go through number_kind)."""
    import itertools

    from trl_grpo_ext.verifiers.code.outputs import number_kind

    for length in range(8):
        for chars in itertools.product("01.eE+-", repeat=length):
            token = "".join(chars)
            try:
                float(token)
                reads = True
            except ValueError:
                reads = False
            assert reads == (number_kind(token) is not None), token


PATHOLOGICAL_OUTPUTS = {
    "digits_then_a_letter": lambda n: "1" * (n - 1) + "x",
    "digits": lambda n: "7" * n,
    "digits_then_a_point": lambda n: "1" * (n - 1) + ".",
    "1e_repeated": lambda n: "1e" * (n // 2),
    "point_then_digits_then_e": lambda n: "." + "1" * (n - 2) + "e",
    "long_exponent": lambda n: "1e" + "9" * (n - 2),
    "long_negative_exponent": lambda n: "1.5e-" + "9" * (n - 5),
    "digits_e_digits": lambda n: "1" * (n // 2) + "e" + "1" * (n // 2 - 1),
    "long_fraction": lambda n: "1.5" + "0" * (n - 3),
    "tiny_decimal": lambda n: "0." + "0" * (n - 3) + "1",
    "unicode_digits": lambda n: "\u0663" * (n // 2),
    "many_tokens": lambda n: "1.0 " * (n // 4),
    "many_lines": lambda n: "1.0\n" * (n // 4),
}


@pytest.mark.parametrize("shape", sorted(PATHOLOGICAL_OUTPUTS))
@pytest.mark.parametrize("expected", ["1.5\n", "1\n", "1.5 2.5\n3\n"])
def test_a_pathological_output_costs_linear_time(shape, expected):
    """8 MiB, the most a candidate may print: milliseconds here (bound generously: the machine is shared)."""
    import time

    output = PATHOLOGICAL_OUTPUTS[shape](8 << 20)
    started = time.process_time()
    same = outputs_match(output, expected, float_tolerance=1e-6)
    assert time.process_time() - started < 2.0
    assert same is (shape == "long_fraction" and expected == "1.5\n")


def test_many_tokens_read_as_numbers_cost_linear_time():
    """The slow path (every token differs as text, so each is read as a number) is bounded by the expected output's
    tokens: 1 MiB of them, each within the tolerance, well under a second."""
    import time

    n = (1 << 20) // 5
    started = time.process_time()
    assert outputs_match("0.10 " * n, "0.1 " * n, float_tolerance=1e-6) is True
    assert outputs_match("1.0\n" * n, "1\n" * n, float_tolerance=1e-6) is True
    assert outputs_match("0.10 " * (n - 1) + "0.2", "0.1 " * n, float_tolerance=1e-6) is False
    assert time.process_time() - started < 2.0
