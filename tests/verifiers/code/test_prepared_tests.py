"""Tests prepared ahead by the judge's zygote (code/standalone/judge_prepared.py): the verifier sends each job's test to
the zygote, which parses, rewrites and compiles it for the children it forks next.

A verdict must not depend on whether its child found the test prepared: each pair of (program, test) below is judged
by a verifier that sends no test to the zygote (every child prepares its own, as before) and by one that does, three
times in a row (the first child prepares the test itself, the next ones find it ready); every verdict must be the
same. What one candidate or one run of the test code does must not reach the next candidate's verdict.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from code_verifier_helpers import make_code_verifier

from trl_grpo_ext.verifiers.code import runner
from trl_grpo_ext.verifiers.code.standalone import SCRIPT_FLAGS, STANDALONE_DIR

HUMANEVAL = "def check(candidate):\n    assert candidate(2) == 4\n    assert candidate(-3) == 9\n"
PYTEST_MODULE = (
    "import pytest\nfrom solution import f\n\ndef test_square():\n    assert f(2) == 4\n\n"
    "@pytest.mark.parametrize('x', [1, 3])\ndef test_many(x):\n    assert f(x) == x * x\n"
)
UNITTEST_MODULE = (
    "import unittest\nfrom solution import f\n\nclass TestF(unittest.TestCase):\n    def test_square(self):\n"
    "        self.assertEqual(f(3), 9)\n\nif __name__ == '__main__':\n    unittest.main()\n"
)
# The test code's own state: a fresh namespace per candidate, so a list it fills starts empty for each.
OWN_STATE = "seen = []\nseen.append(f(3))\nassert seen == [9]\nassert len(seen) == 1\n"
# A candidate's module-level value the test reads (its reads are made live in the child's copy of the test).
READS_A_VALUE = "assert f(2) == 4\nassert SIDE == 2\n"
TESTS = {
    "asserts": "assert f(2) == 4\nassert f(3) == 9\nassert f(0) == 0\n",
    "humaneval": {"test": HUMANEVAL, "entry_point": "f"},
    "pytest": PYTEST_MODULE,
    "unittest": UNITTEST_MODULE,
    "own state": OWN_STATE,
    "reads a value": READS_A_VALUE,
    "does not parse": "assert f(2) ==\n",
    "does not compile": "return 1\nassert f(2) == 4\n",
    "no assert": "f(2)\n",
    "process tool": "from unittest.mock import patch\nassert f(2) == 4\n",
}
PROGRAMS = [
    "def f(x):\n    return x * x\nSIDE = 2",
    "def f(x):\n    return x + x\nSIDE = 3",
    "def f(x):\n    raise ValueError(x)",
    "SIDE = 2",
]


def verdicts(verifier, test) -> list[tuple]:
    """Each program against `test`, one after the other, in order: (score, reason) of each."""
    return [(r.score, r.reason) for r in (verifier.verify(program, test) for program in PROGRAMS)]


@pytest.fixture(scope="module")
def verifiers():
    prepared_ahead = make_code_verifier(10, workers=1)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(runner, "test_note", lambda job: b"")  # no test ever reaches the zygote: every child prepares
        each_child = make_code_verifier(10, workers=1)
        yield prepared_ahead, each_child
        each_child.close()
    prepared_ahead.close()


@pytest.mark.parametrize("name", list(TESTS))
def test_a_test_prepared_ahead_gives_the_verdicts_a_child_preparing_it_gives(verifiers, name):
    prepared_ahead, each_child = verifiers
    expected = verdicts(each_child, TESTS[name])
    for _ in range(3):  # the first child of that test prepares it; the next find it prepared by the zygote
        assert verdicts(prepared_ahead, TESTS[name]) == expected


def test_the_verdicts_are_the_candidates(verifiers):
    """The reference above is not a shared mistake: the verdicts of a few pairs, written out."""
    prepared_ahead, _ = verifiers
    for _ in range(2):
        assert verdicts(prepared_ahead, TESTS["asserts"])[:3] == [(1.0, "correct"), (0.0, "wrong"), (0.0, "wrong")]
        assert verdicts(prepared_ahead, TESTS["own state"])[:2] == [(1.0, "correct"), (0.0, "wrong")]
        assert [v[0] for v in verdicts(prepared_ahead, TESTS["reads a value"])] == [1.0, 0.0, 0.0, 0.0]
        assert verdicts(prepared_ahead, TESTS["does not parse"])[0][0] is None


PREPARE = """
import json, sys
sys.path.insert(0, sys.argv[1])
import judge_prepared as p
job = {"test": "from solution import f\\nassert f(2) == 4\\n", "entry_point": None}
p.remember(json.dumps(job).encode())
p.remember(b"not json")  # what it cannot read, it skips
p.remember(json.dumps({"test": ["a list"]}).encode())
p.remember(json.dumps({"test": "", "format": "calls"}).encode())
ahead = p.prepared_test(job)
print(json.dumps({
    "kept": len(p.PREPARED),
    "same": ahead is p.prepared_test({**job, "deadline_s": 5}),
    "other module": ahead is p.prepared_test({**job, "module": "main"}),
    "other entry point": ahead is p.prepared_test({**job, "entry_point": "f"}),
    "total": ahead.total,
}))
for n in range(p.MAX_PREPARED + 5):
    p.remember(json.dumps({"test": f"assert f({n}) == 1"}).encode())
print(len(p.PREPARED) == p.MAX_PREPARED, p.test_key(job) in p.PREPARED)
"""


def test_the_zygote_keeps_a_bounded_cache_keyed_by_every_field_the_preparation_reads():
    run = subprocess.run(
        [sys.executable, *SCRIPT_FLAGS, "-c", PREPARE, str(STANDALONE_DIR)], capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 0, run.stderr
    first, last = run.stdout.splitlines()
    said = json.loads(first)
    assert said == {"kept": 1, "same": True, "other module": False, "other entry point": False, "total": 1}
    assert last.split() == ["True", "False"]  # at most MAX_PREPARED, the oldest out first
