"""Judge side of assert-style tests (MBPP rows, HumanEval's `check(candidate)`): each assert statement is a unit.

Each `assert T` is rewritten so that a failing assert is recorded and the test goes on, which gives the fraction of
assert statements passed (a statement passes when every execution of it passed, so an assert in a loop counts once).
Asserts of a constant (`assert True`) are not counted, nor those of a top-level function nothing refers to.

Standard library only, imported by the judge script: no package-relative imports.
"""

from __future__ import annotations

import ast

from formats_units import ReferenceFault, UnsupportedTest, describe


class AssertRecorder(ast.NodeTransformer):
    """Rewrites `assert T, msg` into `try: __judge_assert__.result(k, T)` / `except Exception as e:
    __judge_assert__.raised(k, e)`: T is evaluated where the assert stood, so a walrus in one assert binds a name the
    next one reads, as in plain execution. Asserts of a constant stay as they are, and so do the asserts of a
    top-level function the test code never refers to (a helper nobody calls: plain execution never runs them)."""

    def __init__(self, unused: frozenset = frozenset()):
        self.lines = []
        self.unused = unused

    def visit_Module(self, node):
        node.body = [
            statement if _defines(statement) & self.unused else self.visit(statement) for statement in node.body
        ]
        return node

    def visit_Assert(self, node):
        if isinstance(node.test, ast.Constant):
            return node
        self.generic_visit(node)
        self.lines.append(node.lineno)
        index = ast.Constant(len(self.lines) - 1)
        tally = ast.Name("__judge_assert__", ast.Load())
        check = ast.Expr(ast.Call(ast.Attribute(tally, "result", ast.Load()), [index, node.test], []))
        exc = ast.Name("__judge_exc__", ast.Load())
        report = ast.Expr(ast.Call(ast.Attribute(tally, "raised", ast.Load()), [index, exc], []))
        handler = ast.ExceptHandler(ast.Name("Exception", ast.Load()), "__judge_exc__", [report])
        return ast.copy_location(ast.Try([check], [handler], [], []), node)


def _defines(statement: ast.stmt) -> set:
    return {statement.name} if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)) else set()


def unused_functions(tree: ast.Module, roots=()) -> frozenset:
    """Top-level functions that nothing running refers to: no top-level statement, no decorator, and no function that
    is itself used names them (`roots`: functions called from outside, HumanEval's `check`)."""
    functions = {
        s.name: s for s in tree.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and not s.decorator_list
    }
    seeds = [
        s for s in tree.body if not (isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name in functions)
    ]
    used, todo = set(), [*seeds, *(functions[r] for r in roots if r in functions)]
    while todo:
        for node in ast.walk(todo.pop()):
            name = node.id if isinstance(node, ast.Name) else None
            if name in functions and name not in used:
                used.add(name)
                todo.append(functions[name])
    return frozenset(functions) - used - set(roots)


class Tally:
    """Outcome per assert statement: passes only if every execution passed."""

    def __init__(self, lines, fault_of, gone):
        self.lines = lines
        self.fault_of = fault_of  # exc -> why it is the test code's fault, or None (see UnitTally)
        self.gone = gone  # () -> why the sandbox ended, or None: then nothing passes any more
        self.status = {}
        self.failures = []

    def result(self, index, value):
        """Assert number `index` evaluated to `value`."""
        try:
            passed = bool(value)
        except Exception as exc:  # a candidate object has no truth value
            self.raised(index, exc)
            return
        self._record(index, passed, "assertion is false")

    def raised(self, index, exc):
        """Evaluating assert number `index` raised `exc`."""
        if isinstance(exc, (UnsupportedTest, ReferenceFault)):
            raise exc
        fault = self.fault_of(exc)
        if fault:
            raise ReferenceFault(f"{fault} (assert on line {self.lines[index]})") from None
        self._record(index, False, describe(exc))

    def _record(self, index, passed, why):
        if passed and self.gone():
            passed, why = False, f"CandidateGone: {self.gone()}"
        self.status[index] = self.status.get(index, True) and passed
        if not passed and len(self.failures) < 5:
            self.failures.append({"line": self.lines[index], "error": why})

    def passed(self):
        return sum(self.status.values())
