"""A task's `verifier_imports`: a custom verifier given as a path to a .py file is executed once per process, however
often a command asks for it (`evaluate` validates the task, then builds its verifiers: issue 34)."""

from __future__ import annotations

import sys
import textwrap

from trl_grpo_ext.compare.plan import Task, import_verifier_modules
from trl_grpo_ext.verifiers import get_verifier


def test_a_verifier_file_is_imported_once_however_often_asked(tmp_path):
    path = tmp_path / "counting_verifier_for_test.py"
    path.write_text(
        textwrap.dedent(
            """
            from trl_grpo_ext.verifiers import VerificationResult, Verifier, register_verifier

            EXECUTIONS = globals().get("EXECUTIONS", 0) + 1

            @register_verifier("counting_verifier_for_test")
            class Counting(Verifier):
                def verify(self, completion, reference):
                    return VerificationResult(float(completion == reference), "checked")
            """
        )
    )
    task = Task(verifier_imports=[str(path)])
    try:
        import_verifier_modules(task)
        import_verifier_modules(task)  # would raise "already registered" if the file ran twice
        assert sys.modules["counting_verifier_for_test"].EXECUTIONS == 1
        assert get_verifier("counting_verifier_for_test").verify("a", "a").score == 1.0
    finally:
        sys.modules.pop("counting_verifier_for_test", None)
