"""The `code` verifier runs each distinct (program, tests) of a batch once: every item's result is the one it gets
alone, item for item, on programs and tests of every format (taken from test_formats.py and test_verdict_classes.py)."""

from __future__ import annotations

import importlib.util
import random
from pathlib import Path

import pytest
from code_verifier_helpers import make_code_verifier


def fixtures_of(name: str):
    spec = importlib.util.spec_from_file_location(f"code_dedup_{name}", Path(__file__).with_name(f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


FORMATS = fixtures_of("test_formats")
CLASSES = fixtures_of("test_verdict_classes")
FENCE = "```"


def cases() -> list[tuple[object, object]]:
    """(completion, reference) of every kind of outcome: correct, wrong, partial, prose, no code, not text, a
    reference the verifier cannot use, and one program written fenced and bare (whose reasons differ)."""
    humaneval = {"test": "def check(candidate):\n    assert candidate(2, 3) == 5\n", "entry_point": "add"}
    stdio = [{"input": "1 2\n", "output": "3\n"}, {"input": "5 5\n", "output": "10\n"}]
    not_python = "def broken(:\n    return 1"
    return [
        (f"{FENCE}python\n{FORMATS.MERGE}\n{FENCE}", FORMATS.KODCODE_ROW),
        (f"{FENCE}python\ndef merge_intervals(xs):\n    return xs\n{FENCE}", FORMATS.KODCODE_ROW),
        ("def max_pair(xs): return max(xs)", FORMATS.APPS_ROW),
        ("def max_pair(xs): return max(xs) if len(xs) > 2 else 0", FORMATS.APPS_ROW),
        (CLASSES.NAMED_VALUES["instance"], CLASSES.STRING_TESTS["str"]),
        ("def check(s):\n    return 'Valid: ' + s", CLASSES.STRING_TESTS["repr"]),
        ("def add(a, b):\n    return a + b", humaneval),
        ("def add(a, b):\n    return a - b", humaneval),
        ("a, b = map(int, input().split())\nprint(a + b)", stdio),
        ("print(3)", stdio),
        ("The answer is to add the numbers.", "assert add(1, 2) == 3"),
        (f"{FENCE}python\n{not_python}\n{FENCE}", "assert broken() == 1"),
        (
            f"{not_python}\n",
            "assert broken() == 1",
        ),  # the same program, bare: prose by the parser, a reason of its own
        (f"{FENCE}python\n\n{FENCE}", "assert f() == 1"),
        (42, "assert f() == 1"),
        ("def f(): return 1", {"no": "format"}),
    ]


def comparable(result):
    return result.score, result.reason, result.extracted, result.details


@pytest.fixture(scope="module")
def verifier():
    verifier = make_code_verifier(10, partial_credit=True)
    yield verifier
    verifier.close()


def test_a_batch_of_repeats_gets_each_item_its_own_result(verifier, monkeypatch):
    items = cases()
    alone = [comparable(verifier.verify(completion, reference)) for completion, reference in items]
    assert alone[12][1] != alone[11][1]  # the fenced and the bare program: same run, different reasons
    order = [i for i in range(len(items)) for _ in range(3)]
    random.Random(0).shuffle(order)
    runs = []
    run = verifier._run
    monkeypatch.setattr(verifier, "_run", lambda *args: runs.append(args) or run(*args))
    results, stats = verifier.verify_batch_with_stats([items[i][0] for i in order], [items[i][1] for i in order])
    assert [comparable(r) for r in results] == [alone[i] for i in order]
    # Groups: one per distinct (program, tests); the fenced and bare broken program share one; 42 is never grouped.
    assert stats.items == 48 and stats.duplicates == 48 - (len(items) - 1 + 2)
    assert len(stats.item_seconds) == 48
    ran = [args[2] for args in runs]
    assert len(ran) == len(set(ran)) == 12  # 16 cases: no code, not text and an unusable reference never run
