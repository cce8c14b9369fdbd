"""A task's `verifier_imports`: a custom verifier given as a path to a .py file is executed once per process, however
often a command asks for it (`evaluate` validates the task, then builds its verifiers), under a private module name,
so that a file named like a standard module does not replace it."""

from __future__ import annotations

import importlib.metadata
import math
import sys
import textwrap

import pytest

from trl_grpo_ext.data.task import Task, import_verifier_modules, verifier_file_module_name
from trl_grpo_ext.verifiers import get_verifier
from trl_grpo_ext.verifiers.core.registry import _VERIFIERS

VERIFIER_FILE = """
from trl_grpo_ext.verifiers import VerificationResult, Verifier, register_verifier

EXECUTIONS = globals().get("EXECUTIONS", 0) + 1

@register_verifier("{name}")
class Exact(Verifier):
    def verify(self, completion, reference):
        return VerificationResult(float(completion == reference), "checked")
"""


@pytest.fixture
def verifier_file(tmp_path):
    """Writes a verifier file; afterwards, its module and its verifier are removed from this process."""
    written = []

    def write(filename: str, verifier: str):
        path = tmp_path / filename
        path.write_text(textwrap.dedent(VERIFIER_FILE.format(name=verifier)))
        written.append((path, verifier))
        return path

    yield write
    for path, verifier in written:
        sys.modules.pop(verifier_file_module_name(path), None)
        _VERIFIERS._entries.pop(verifier, None)


def test_a_verifier_file_is_imported_once_however_often_asked(verifier_file):
    path = verifier_file("counting_verifier_for_test.py", "counting_verifier_for_test")
    task = Task(verifier_imports=[str(path)])
    import_verifier_modules(task)
    import_verifier_modules(task)  # would raise "already registered" if the file ran twice
    assert sys.modules[verifier_file_module_name(path)].EXECUTIONS == 1
    assert "counting_verifier_for_test" not in sys.modules
    assert get_verifier("counting_verifier_for_test").verify("a", "a").score == 1.0


def test_a_verifier_file_named_like_a_standard_module_leaves_that_module_alone(verifier_file):
    path = verifier_file("math.py", "shadowing_verifier_for_test")
    import_verifier_modules(Task(verifier_imports=[str(path)]))
    assert sys.modules["math"] is math and math.sqrt(9.0) == 3.0
    assert importlib.metadata.version("torch")  # reads files through modules that import math
    assert get_verifier("shadowing_verifier_for_test").verify("7", "7").score == 1.0
    assert sys.modules[verifier_file_module_name(path)].__file__ == str(path)


def test_two_files_with_the_same_name_are_two_modules(verifier_file, tmp_path):
    first = verifier_file("verifier.py", "first_same_stem_verifier_for_test")
    (tmp_path / "other").mkdir()
    second = verifier_file("other/verifier.py", "second_same_stem_verifier_for_test")
    import_verifier_modules(Task(verifier_imports=[str(first), str(second)]))
    assert verifier_file_module_name(first) != verifier_file_module_name(second)
    assert get_verifier("second_same_stem_verifier_for_test").verify("a", "b").score == 0.0
