"""How stdout is compared with the expected output of a stdin/stdout case (no sandbox needed)."""

from __future__ import annotations

import pytest

from trl_grpo_ext.verifiers import get_verifier
from trl_grpo_ext.verifiers.code.runner import outputs_match


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
