"""Judge side of test modules: runs the units of pytest-style test functions and classes, and unittest TestCases.

Runs in the judge process, on the test code's namespace once judge.py has executed it; the candidate is reachable
only through proxies, so everything here sees plain data and builtin exceptions. A unit is a test function (each
parametrized case counts once) or a test method of a pytest class or of a `unittest.TestCase`; it passes when it
returns without an exception and, for a TestCase, none of its `subTest`s failed. Skipped and expected-to-fail units
are not counted, as pytest and unittest do not count them as failures.

pytest itself is never imported: the test's `import pytest` binds a stand-in (formats_pytest.py), so a verdict
does not depend on whether the trainer has pytest, on its plugins or its version. unittest is the judge's own, run
through its own loader and result machinery; nothing of the candidate's process is involved.

Standard library only, imported by the judge script: no package-relative imports.
"""

from __future__ import annotations

import inspect
import types
import unittest

from formats_modules import JUDGE_MODULE
from formats_units import (
    FixtureSpec,
    JudgeFault,
    Mark,
    ParameterSet,
    Skipped,
    UnitTally,
    UnsupportedTest,
)
from formats_unittest import run_test_case


def run_test_module(namespace: dict, tally: UnitTally, filename: str) -> None:
    """Every test the executed module defines, in definition order: pytest functions and classes, TestCases, inside
    the module's xunit-style set-up and teardown (`setup_module`/`setUpModule`, which unittest would not find here: the
    test module is not in `sys.modules`)."""
    xunit = XUnit(namespace, filename)
    broken = xunit.call(("setUpModule", "setup_module"), ModuleView(namespace))
    fixtures = Fixtures(namespace)
    try:
        for name, obj in list(namespace.items()):
            if tally.unusable:
                return
            if _written_here(obj, filename) and name.startswith("test") and "_judge_fixture" not in obj.__dict__:
                for unit, params in _cases(tally, name, obj, namespace):
                    tally.run(unit, broken.fail if broken else lambda fn=obj, p=params: xunit.run(fn, fixtures, p))
            elif isinstance(obj, type) and obj.__module__ == JUDGE_MODULE:
                if issubclass(obj, unittest.TestCase):
                    run_test_case(obj, tally, broken)
                elif name.startswith("Test") and obj.__init__ is object.__init__:  # pytest skips classes with one
                    _run_pytest_class(obj, tally, fixtures, namespace, broken)
    finally:
        fixtures.close()
        if not broken:
            xunit.call(("tearDownModule", "teardown_module"), ModuleView(namespace))


class ModuleView:
    """The test module as `setup_module(module)` sees it: `module.data = ...` sets a global of the test code."""

    def __init__(self, namespace: dict):
        object.__setattr__(self, "_namespace", namespace)

    def __getattr__(self, name):
        try:
            return self._namespace[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name, value):
        self._namespace[name] = value


class SetupFailed:
    """A set-up that raised: every test it covers fails with its exception, as under pytest."""

    def __init__(self, exc: BaseException):
        self.exc = exc

    def fail(self):
        raise self.exc


class XUnit:
    """pytest's xunit-style set-up functions the test code defines: `setup_module`/`teardown_module` (and unittest's
    `setUpModule`/`tearDownModule`), `setup_function`/`teardown_function` around each test function, `setup_class`/
    `teardown_class` around a test class; each is called with its argument when it takes one, as pytest calls it."""

    def __init__(self, namespace: dict, filename: str):
        self.namespace, self.filename = namespace, filename

    def call(self, names: tuple, argument) -> SetupFailed | None:
        """Call the first of `names` the test code defines; a SetupFailed if it raised."""
        function = next(
            (self.namespace[n] for n in names if _written_here(self.namespace.get(n), self.filename)), None
        )
        return call_with_optional_argument(function, argument) if function is not None else None

    def run(self, test, fixtures: Fixtures, params: dict) -> None:
        broken = self.call(("setup_function",), test)
        if broken:
            broken.fail()
        try:
            fixtures.call(test, params)
        finally:
            after = self.call(("teardown_function",), test)
        if after:
            after.fail()


def call_with_optional_argument(function, argument) -> SetupFailed | None:
    function = getattr(function, "__func__", function)  # a classmethod's function, called with the class
    try:
        function(argument) if function.__code__.co_argcount else function()
    except (JudgeFault, Skipped):
        raise
    except BaseException as exc:  # whatever class the candidate's exception has: the set-up failed
        return SetupFailed(exc)
    return None


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
        except (JudgeFault, Skipped):
            raise
        except BaseException as exc:
            error = error or exc
    generators.clear()
    if error is not None and not quiet:
        raise error


def _run_pytest_class(cls: type, tally: UnitTally, fixtures: Fixtures, namespace: dict, broken=None) -> None:
    """A pytest test class: `setup_class`/`teardown_class` around it, a fresh instance per test, with
    setup_method/teardown_method around each."""
    names = [n for n in dict.fromkeys(k for c in reversed(cls.__mro__) for k in vars(c)) if n.startswith("test")]
    setup, teardown = (getattr(cls, n, None) for n in ("setup_class", "teardown_class"))
    broken = broken or (call_with_optional_argument(setup, cls) if callable(setup) else None)
    for name in names:
        method = inspect.getattr_static(cls, name)
        function = method.__func__ if isinstance(method, (staticmethod, classmethod)) else method
        if not isinstance(function, types.FunctionType):
            continue
        for unit, params in _cases(
            tally, f"{cls.__name__}.{name}", function, namespace, cls.__dict__.get("_judge_marks", [])
        ):
            body = broken.fail if broken else lambda name=name, params=params: _run_method(cls, name, params, fixtures)
            tally.run(unit, body)
    if not broken and callable(teardown):
        call_with_optional_argument(teardown, cls)


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
