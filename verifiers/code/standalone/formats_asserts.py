"""Judge side of assert-style tests (MBPP rows, HumanEval's `check(candidate)`): each assert statement is a unit.

Each `assert T` is rewritten to `__judge_assert__(k, lambda: T)`: a failing assert is recorded and the test goes on,
which gives the fraction of assert statements passed (a statement passes when every execution of it passed, so an
assert in a loop counts once). Asserts of a constant (`assert True`) are not counted.

Standard library only, imported by the judge script: no package-relative imports.
"""

from __future__ import annotations

import ast

from formats_units import ReferenceFault, UnsupportedTest


class AssertRecorder(ast.NodeTransformer):
    """Rewrites `assert T, msg` into `__judge_assert__(k, lambda: T)`; asserts of a constant stay as they are."""

    def __init__(self):
        self.lines = []

    def visit_Assert(self, node):
        if isinstance(node.test, ast.Constant):
            return node
        self.lines.append(node.lineno)
        thunk = ast.Lambda(args=ast.arguments([], [], None, [], [], None, []), body=node.test)
        call = ast.Call(ast.Name("__judge_assert__", ast.Load()), [ast.Constant(len(self.lines) - 1), thunk], [])
        return ast.copy_location(ast.Expr(call), node)


class Tally:
    """Outcome per assert statement: passes only if every execution passed."""

    def __init__(self, lines, fault_of, gone):
        self.lines = lines
        self.fault_of = fault_of  # exc -> why it is the test code's fault, or None (see UnitTally)
        self.gone = gone  # () -> why the sandbox ended, or None: then nothing passes any more
        self.status = {}
        self.failures = []

    def __call__(self, index, thunk):
        try:
            passed, why = bool(thunk()), "assertion is false"
        except UnsupportedTest:
            raise
        except Exception as exc:
            fault = self.fault_of(exc)
            if fault:
                raise ReferenceFault(f"{fault} (assert on line {self.lines[index]})") from None
            passed, why = False, f"{type(exc).__name__}: {str(exc)[:200]}"
        if passed and self.gone():
            passed, why = False, f"CandidateGone: {self.gone()}"
        self.status[index] = self.status.get(index, True) and passed
        if not passed and len(self.failures) < 5:
            self.failures.append({"line": self.lines[index], "error": why})

    def passed(self):
        return sum(self.status.values())
