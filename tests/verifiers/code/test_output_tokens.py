"""Output comparison by tokens as testlib's `wcmp` reads them, chunk by chunk in bounded memory (no sandbox needed)."""

from __future__ import annotations

import random
import re
import subprocess
import sys

import pytest

from trl_grpo_ext.verifiers.code import outputs
from trl_grpo_ext.verifiers.code.formats import parse_reference
from trl_grpo_ext.verifiers.code.outputs import outputs_match, wcmp_tokens


@pytest.mark.parametrize(
    "actual, same",
    [
        ("1 2\n", True),
        ("1\t2\r\n", True),  # tab, CR, LF: testlib's blanks
        ("  1\n\n2  ", True),
        ("1\x1c2\n", False),  # a file separator is part of a token for testlib
        ("1\x0b2\n", False),  # vertical tab
        ("1\x0c2\n", False),  # form feed
        ("1\u30002\n", False),  # ideographic space
        ("1\u00a02\n", False),  # no-break space
        ("1\x852\n", False),  # next line (U+0085)
    ],
)
def test_only_testlibs_blanks_separate_tokens(actual, same):
    assert outputs_match(actual, "1 2\n", tokens=True) is same
    assert outputs_match(actual, "1 2\n", float_tolerance=1e-6, tokens=True) is same


def test_wcmp_tokens():
    assert wcmp_tokens(" a\tb\r\nc\x0bd\u3000e ") == ["a", "b", "c\x0bd\u3000e"]
    assert wcmp_tokens("") == wcmp_tokens(" \n\t") == []


def _reference_match(actual, expected, tokens):
    """The rules written plainly, without chunks."""
    if tokens:
        return re.split("[ \t\r\n]+", actual.strip(" \t\r\n")) == re.split("[ \t\r\n]+", expected.strip(" \t\r\n"))
    lines = [
        [line.rstrip() for line in text.rstrip().split("\n")] if text.rstrip() else [] for text in (actual, expected)
    ]
    return lines[0] == lines[1]


@pytest.mark.parametrize("tokens", [True, False])
def test_chunks_cut_anywhere_give_the_plain_rule(monkeypatch, tokens):
    """With chunks of a few characters, every cut falls somewhere new: 3,000 random pairs, the same verdicts."""
    monkeypatch.setattr(outputs, "CHUNK_CHARS", 3)
    rng = random.Random(7)
    alphabet = ["1", "22", "abc", " ", "  ", "\n", "\t", "\r\n", "\x0b"]
    agreed = {True: 0, False: 0}
    for _ in range(3000):
        expected = "".join(rng.choice(alphabet) for _ in range(rng.randrange(12)))
        actual = expected if rng.random() < 0.4 else "".join(rng.choice(alphabet) for _ in range(rng.randrange(12)))
        if rng.random() < 0.3:  # the same tokens, spaced otherwise
            actual = rng.choice(["\n", " ", "\t"]).join(re.split("[ \t\r\n]+", expected))
        want = _reference_match(actual, expected, tokens)
        assert outputs_match(actual, expected, tokens=tokens) is want, (actual, expected)
        agreed[want] += 1
    assert min(agreed.values()) > 300  # both verdicts were exercised


def test_a_long_token_across_chunks(monkeypatch):
    monkeypatch.setattr(outputs, "CHUNK_CHARS", 4)
    assert outputs_match("1 " + "7" * 50 + " 2", "1\n" + "7" * 50 + "\n2", tokens=True)
    assert not outputs_match("1 " + "7" * 50 + " 2", "1\n" + "7" * 49 + "\n2", tokens=True)
    assert outputs_match("0.5 " + "9" * 30, "0.5000001\n" + "9" * 30, float_tolerance=1e-6, tokens=True)


MEASURE_PEAK = """
import resource, sys
from trl_grpo_ext.verifiers.code.outputs import outputs_match
tokens = sys.argv[1] == "tokens"
output = "ab\\n" * ((8 << 20) // 3)
other = output[:-1] + " "
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
assert outputs_match(output, other, tokens=tokens)
assert not outputs_match(output + "x", output, tokens=tokens)
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before)
"""


@pytest.mark.parametrize("mode", ["tokens", "lines"])
def test_comparing_8_mib_of_short_tokens_stays_in_bounded_memory(mode):
    """2.8 million two-character tokens (lines): as one list each side takes about 140 MB; chunk by chunk, the
    comparison adds little more than a copy of each text to the process's peak (kB)."""
    done = subprocess.run([sys.executable, "-c", MEASURE_PEAK, mode], capture_output=True, text=True, check=True)
    assert int(done.stdout) < 3 * (8 << 20) // 1024, done.stdout


@pytest.mark.parametrize(
    "row, tokens",
    [
        ({"input": ["1 2\n"], "output": ["3\n"]}, True),  # CodeContests
        ({"tests": [{"input": "1 2\n", "output": "3\n"}]}, True),  # open-r1 Codeforces
        ({"official_tests": [{"input": "1 2\n", "output": "3\n"}]}, True),
        ({"inputs": ["1 2\n"], "outputs": ["3\n"]}, False),  # APPS
        ([{"input": "1 2\n", "output": "3\n"}], False),
    ],
)
def test_codeforces_rows_compare_tokens(row, tokens):
    assert parse_reference(row)[1].options.get("tokens", False) is tokens


def test_python_on_a_codeforces_row_is_compared_by_tokens():
    from code_verifier_helpers import make_code_verifier

    v = make_code_verifier(2.0)
    try:
        lines = "print(1)\nprint(2)\n"
        assert v.verify(lines, {"tests": [{"input": "", "output": "1 2\n"}]}).score == 1.0
        assert v.verify(lines, [{"input": "", "output": "1 2\n"}]).score == 0.0  # APPS: lines
        separated = "print('1\\x1c2')\n"
        assert v.verify(separated, {"tests": [{"input": "", "output": "1 2\n"}]}).score == 0.0
    finally:
        v.close()
