"""Judge side of test modules: pytest-style test functions and classes, and unittest TestCases.

Runs in the judge process, on the test code's namespace once code_judge.py has executed it; the candidate is reachable
only through proxies, so everything here sees plain data and builtin exceptions. A unit is a test function (each
parametrized case counts once) or a test method of a pytest class or of a `unittest.TestCase`; it passes when it
returns without an exception and, for a TestCase, none of its `subTest`s failed. Skipped and expected-to-fail units
are not counted, as pytest and unittest do not count them as failures.

pytest itself is never imported: the test's `import pytest` binds a stand-in (code_formats_pytest.py), so a verdict
does not depend on whether the trainer has pytest, on its plugins or its version. unittest is the judge's own, run
through its own loader and result machinery; nothing of the candidate's process is involved.

Standard library only, imported by the judge script: no package-relative imports.
"""

from __future__ import annotations

import ast
import inspect
import types
import unittest

from formats_units import (
    CandidateGone,
    Failed,
    FixtureSpec,
    Mark,
    ParameterSet,
    UnitTally,
    UnsupportedTest,
)
from formats_unittest import run_test_case

JUDGE_MODULE = "__judge__"  # the test code's `__name__`: what it defines is told apart from what it imported


def _is_test_class(node: ast.ClassDef) -> bool:
    bases = [b.attr if isinstance(b, ast.Attribute) else getattr(b, "id", "") for b in node.bases]
    return any(name.endswith("TestCase") for name in bases) or (
        node.name.startswith("Test")
        and not any(isinstance(n, ast.FunctionDef) and n.name == "__init__" for n in node.body)
    )


def is_test_module(tree: ast.Module) -> bool:
    """Test functions (`def test*`) or test classes (`class Test*`, `unittest.TestCase` subclasses) at top level, and
    no module-level `assert` or call of those tests: a script that runs its own tests stays an assert-style test."""
    tests = {
        node.name
        for node in tree.body
        if (isinstance(node, ast.FunctionDef) and node.name.startswith("test"))
        or (isinstance(node, ast.ClassDef) and _is_test_class(node))
    }
    if not tests:
        return False
    for node in tree.body:
        if isinstance(node, ast.Assert):
            return False
        if isinstance(node, ast.If) and _is_main_guard(node.test):
            continue
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            calls = (n.func for n in ast.walk(node) if isinstance(n, ast.Call))
            if any(isinstance(f, ast.Name) and f.id in tests for f in calls):
                return False
    return True


def _is_main_guard(test: ast.expr) -> bool:
    return isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "__name__"


# Tools that act on the process running the test: the judge's, while the candidate runs in another one, so the test
# would see none of the candidate's output, logs or warnings, and the candidate none of the patches.
PROCESS_TOOLS = {
    "patch": "unittest.mock.patch",
    "assertLogs": "assertLogs",
    "assertNoLogs": "assertNoLogs",
    "assertWarns": "assertWarns",
    "assertWarnsRegex": "assertWarnsRegex",
    "redirect_stdout": "contextlib.redirect_stdout",
    "redirect_stderr": "contextlib.redirect_stderr",
}


def process_tool(tree: ast.Module) -> str | None:
    """The first tool in PROCESS_TOOLS the test uses (`patch` only when it comes from unittest.mock), or None."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in ("unittest.mock", "mock", "contextlib"):
            for alias in node.names:
                if alias.name in PROCESS_TOOLS:
                    return PROCESS_TOOLS[alias.name]
        if isinstance(node, ast.Attribute) and node.attr in PROCESS_TOOLS:
            owner = node.value
            owner_name = owner.id if isinstance(owner, ast.Name) else getattr(owner, "attr", "")
            if node.attr != "patch" or owner_name == "mock":
                return PROCESS_TOOLS[node.attr]
    return None


class ImportRewriter(ast.NodeTransformer):
    """`from solution import f as g` -> `g = __judge_import__('f')`; `import solution as s` -> `s =
    __judge_module__()`; `from solution import *` -> `__judge_star__(globals())`; `import pytest` (and `from pytest
    import raises`) bind the stand-in. Works at any depth (imports inside test functions too). A top-level
    `unittest.main()` outside the `__main__` guard is dropped: the judge runs the tests itself."""

    def __init__(self, module: str):
        self.module = module

    def visit_Module(self, node):
        node.body = [statement for statement in node.body if not _runs_tests(statement)]
        self.generic_visit(node)
        return node

    def visit_Import(self, node):
        kept, assigns = [], []
        for alias in node.names:
            top = alias.name.partition(".")[0]
            bound = alias.asname or top
            if alias.name == self.module:
                assigns.append(_assign(bound, _call("__judge_module__")))
            elif alias.name == "pytest":
                assigns.append(_assign(bound, ast.Name("__judge_pytest__", ast.Load())))
            elif top == self.module:
                assigns.append(_assign(bound, _call("__judge_unsupported__", ast.Constant(alias.name))))
            else:
                kept.append(alias)
        return _replace(node, ast.Import(kept) if kept else None, assigns)

    def visit_ImportFrom(self, node):
        if node.level or node.module not in (self.module, "pytest"):
            if node.level == 0 and (node.module or "").partition(".")[0] == self.module:
                return ast.copy_location(ast.Expr(_call("__judge_unsupported__", ast.Constant(node.module))), node)
            return node
        if node.module == "pytest":
            source = lambda name: ast.Attribute(ast.Name("__judge_pytest__", ast.Load()), name, ast.Load())  # noqa: E731
        else:
            source = lambda name: _call("__judge_import__", ast.Constant(name))  # noqa: E731
        if any(alias.name == "*" for alias in node.names):
            if node.module == "pytest":
                return node
            star = _call("__judge_star__", _call("globals"))
            return ast.copy_location(ast.Expr(star), node)
        assigns = [_assign(alias.asname or alias.name, source(alias.name)) for alias in node.names]
        return _replace(node, None, assigns)


def _runs_tests(statement: ast.stmt) -> bool:
    """A top-level `unittest.main(...)` or `pytest.main(...)` left unguarded: here the judge runs the tests."""
    call = statement.value if isinstance(statement, ast.Expr) else None
    function = call.func if isinstance(call, ast.Call) else None
    return (
        isinstance(function, ast.Attribute)
        and function.attr == "main"
        and isinstance(function.value, ast.Name)
        and function.value.id in ("unittest", "pytest")
    )


def _call(name: str, *args) -> ast.Call:
    return ast.Call(ast.Name(name, ast.Load()), list(args), [])


def _assign(name: str, value) -> ast.Assign:
    return ast.Assign([ast.Name(name, ast.Store())], value)


def _replace(node, kept, assigns):
    nodes = ([kept] if kept is not None else []) + assigns
    for new in nodes:
        ast.copy_location(new, node)
    return nodes or ast.copy_location(ast.Pass(), node)


def count_tests(tree: ast.Module) -> int:
    """Test functions and methods written in the module (parametrized cases count once): the total when the module
    itself fails to load, as pytest then fails every test it holds."""
    count = 0
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test"):
            count += 1
        elif isinstance(node, ast.ClassDef) and _is_test_class(node):
            count += sum(isinstance(n, ast.FunctionDef) and n.name.startswith("test") for n in node.body)
    return max(count, 1)


# ----------------------------------------------------------------------------------------------------------------
# Running the units
# ----------------------------------------------------------------------------------------------------------------


def run_test_module(namespace: dict, tally: UnitTally, filename: str) -> None:
    """Every test the executed module defines, in definition order: pytest functions and classes, TestCases."""
    fixtures = Fixtures(namespace)
    try:
        for name, obj in list(namespace.items()):
            if tally.unusable:
                return
            if _written_here(obj, filename) and name.startswith("test") and "_judge_fixture" not in obj.__dict__:
                for unit, params in _cases(tally, name, obj, namespace):
                    tally.run(unit, lambda fn=obj, params=params: fixtures.call(fn, params))
            elif isinstance(obj, type) and obj.__module__ == JUDGE_MODULE:
                if issubclass(obj, unittest.TestCase):
                    run_test_case(obj, tally)
                elif name.startswith("Test") and obj.__init__ is object.__init__:  # pytest skips classes with one
                    _run_pytest_class(obj, tally, fixtures, namespace)
    finally:
        fixtures.close()


def _written_here(obj, filename: str) -> bool:
    """A function the test code defines: never a candidate proxy, nor a function it imported."""
    return isinstance(obj, types.FunctionType) and obj.__code__.co_filename == filename


def _cases(tally: UnitTally, name: str, fn, namespace: dict, class_marks=()) -> list[tuple[str, dict]]:
    """(unit name, parameters) for each case of a test function; none when it is skipped or expected to fail."""
    if inspect.iscoroutinefunction(fn) or inspect.isgeneratorfunction(fn):
        raise UnsupportedTest(f"the test {name} is a coroutine or a generator, which pytest does not run as a test")
    try:
        marks = [*class_marks, *fn.__dict__.get("_judge_marks", [])]
        if any(_skips(mark, namespace) for mark in marks):
            return []
        cases = [("", {})]
        for mark in marks:
            if mark.name == "parametrize":
                cases = [
                    (f"{case_id}-{new_id}" if case_id else new_id, {**params, **new})
                    for case_id, params in cases
                    for new_id, new in _parametrize(mark)
                ]
    except UnsupportedTest:
        raise
    except Exception as exc:  # a malformed mark: the test code's fault (or, after a call, the candidate's)
        tally.failed(name, exc)
        return []
    return [(f"{name}[{case_id}]" if case_id else name, params) for case_id, params in cases]


def _skips(mark: Mark, namespace: dict) -> bool:
    if mark.name == "skip":
        return True
    if mark.name in ("skipif", "xfail"):
        conditions = mark.args or ((mark.kwargs.get("condition", True),) if mark.name == "xfail" else ())
        return any(eval(c, namespace) if isinstance(c, str) else bool(c) for c in conditions)  # noqa: S307
    return False


def _parametrize(mark: Mark) -> list[tuple[str, dict]]:
    if mark.kwargs.get("indirect"):
        raise UnsupportedTest("pytest.mark.parametrize(indirect=...) is not supported by the code verifier")
    names = mark.args[0] if mark.args else mark.kwargs["argnames"]
    values = mark.args[1] if len(mark.args) > 1 else mark.kwargs["argvalues"]
    if isinstance(names, str):
        names = [n.strip() for n in names.split(",") if n.strip()]
    cases = []
    for index, value in enumerate(values):
        marks, case_id = (), str(index)
        if isinstance(value, ParameterSet):
            marks, case_id, value = value.marks, value.id or case_id, value.values
            value = value[0] if len(names) == 1 else value
        if any(m.name in ("skip", "xfail") for m in marks):
            continue
        row = [value] if len(names) == 1 else list(value)
        if len(row) != len(names):
            raise ValueError(f"parametrize: {len(names)} names but a case with {len(row)} values")
        cases.append((case_id, dict(zip(names, row))))
    return cases


def _requested(fn) -> list[str]:
    """The fixture names a function asks for: its parameters without a default value."""
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    parameters = inspect.signature(fn).parameters.values()
    return [p.name for p in parameters if p.kind in kinds and p.default is inspect.Parameter.empty]


class Fixtures:
    """The fixtures the test code defines, resolved by parameter name like pytest: function scope is fresh for every
    test, broader scopes are made once; a generator fixture's code after `yield` runs as its teardown."""

    def __init__(self, namespace: dict):
        self.definitions = {}
        for name, obj in namespace.items():
            spec = obj.__dict__.get("_judge_fixture") if isinstance(obj, types.FunctionType) else None
            if isinstance(spec, FixtureSpec):
                self.definitions[spec.name or name] = (obj, spec)
        self.shared: dict = {}
        self.shared_teardowns: list = []

    def call(self, fn, given: dict) -> None:
        values, teardowns = dict(given), []
        try:
            for name, (_, spec) in self.definitions.items():
                if spec.autouse:
                    self._value(name, values, teardowns, ())
            fn(**{name: self._value(name, values, teardowns, (fn.__name__,)) for name in _requested(fn)})
        except BaseException:
            _finish(teardowns, quiet=True)
            raise
        _finish(teardowns, quiet=False)

    def _value(self, name: str, values: dict, teardowns: list, chain: tuple):
        if name in values:
            return values[name]
        if name in self.shared:
            return self.shared[name]
        if name not in self.definitions or name in chain:
            raise UnsupportedTest(
                f"{chain[0] if chain else 'a fixture'} asks for the fixture {name!r}, which the test code does not "
                "define: the code verifier provides no built-in fixtures (tmp_path, capsys, monkeypatch act on the "
                "judge's process, and the candidate runs in another)"
            )
        function, spec = self.definitions[name]
        value = function(**{p: self._value(p, values, teardowns, (*chain, name)) for p in _requested(function)})
        if inspect.isgenerator(value):
            generator, value = value, next(value)
            (teardowns if spec.scope == "function" else self.shared_teardowns).append(generator)
        (values if spec.scope == "function" else self.shared)[name] = value
        return value

    def close(self) -> None:
        _finish(self.shared_teardowns, quiet=True)


def _finish(generators: list, quiet: bool) -> None:
    """Run the teardown of generator fixtures, last set up first; the first error fails the test unless `quiet`."""
    error = None
    for generator in reversed(generators):
        try:
            next(generator)
            error = error or RuntimeError("a fixture yielded more than once")
        except StopIteration:
            pass
        except (Exception, CandidateGone, Failed) as exc:
            error = error or exc
    generators.clear()
    if error is not None and not quiet:
        raise error


def _run_pytest_class(cls: type, tally: UnitTally, fixtures: Fixtures, namespace: dict) -> None:
    """A pytest test class: a fresh instance per test, with setup_method/teardown_method around it."""
    names = [n for n in dict.fromkeys(k for c in reversed(cls.__mro__) for k in vars(c)) if n.startswith("test")]
    for name in names:
        method = inspect.getattr_static(cls, name)
        function = method.__func__ if isinstance(method, (staticmethod, classmethod)) else method
        if not isinstance(function, types.FunctionType):
            continue
        for unit, params in _cases(
            tally, f"{cls.__name__}.{name}", function, namespace, cls.__dict__.get("_judge_marks", [])
        ):
            tally.run(unit, lambda name=name, params=params: _run_method(cls, name, params, fixtures))


def _run_method(cls: type, name: str, params: dict, fixtures: Fixtures) -> None:
    instance = cls()
    bound = getattr(instance, name)
    if hasattr(instance, "setup_method"):
        instance.setup_method(bound)
    try:
        fixtures.call(bound, params)
    finally:
        if hasattr(instance, "teardown_method"):
            instance.teardown_method(bound)
