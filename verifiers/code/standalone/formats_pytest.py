"""A stand-in for `pytest`, for test code that the judge runs (see formats_units.py for why not pytest itself).

`import pytest` in a reference binds `make_stand_in(...)`: `fixture`, `mark.parametrize` / `skip` / `skipif` / `xfail`
(any other mark is recorded and ignored, as pytest ignores unknown marks), `param`, `raises`, `approx`, `skip`,
`xfail`, `fail` and `importorskip`. Any other attribute raises UnsupportedTest, which makes the reference unusable:
a test the verifier cannot run as written never passes by accident.

Standard library only, imported by the judge script: no package-relative imports.
"""

from __future__ import annotations

import importlib
import inspect
import math
import re
import types

from formats_units import (
    CandidateGone,
    Failed,
    FixtureSpec,
    Mark,
    ParameterSet,
    Skipped,
    UnsupportedTest,
)


def fixture(function=None, *, scope="function", params=None, autouse=False, ids=None, name=None):
    if params is not None:
        raise UnsupportedTest(
            "parametrized fixtures (pytest.fixture(params=...)) are not supported by the code verifier"
        )
    spec = FixtureSpec(scope, autouse, name)

    def mark(fn):
        fn._judge_fixture = spec
        return fn

    return mark(function) if function is not None else mark


class MarkDecorator:
    """`pytest.mark.NAME` and `pytest.mark.NAME(...)`: applied to a function or class, records the mark on it."""

    def __init__(self, name, args=(), kwargs=None):
        self.mark = Mark(name, args, kwargs)

    def __call__(self, *args, **kwargs):
        if len(args) == 1 and not kwargs and (inspect.isfunction(args[0]) or inspect.isclass(args[0])):
            target = args[0]
            target._judge_marks = [self.mark, *getattr(target, "_judge_marks", [])]
            return target
        return MarkDecorator(self.mark.name, self.mark.args + args, {**self.mark.kwargs, **kwargs})


class MarkGenerator:
    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return MarkDecorator(name)


def param(*values, marks=(), id=None):
    marks = [marks] if isinstance(marks, MarkDecorator) else list(marks)
    return ParameterSet(values, [m.mark for m in marks], id)


class ExceptionInfo:
    value = type = None

    @property
    def typename(self):
        return type(self.value).__name__

    def match(self, regexp):
        if not re.search(regexp, str(self.value)):
            raise AssertionError(f"Regex pattern {regexp!r} does not match {str(self.value)!r}.")
        return True


class RaisesContext:
    """`pytest.raises(classes)`: the exception must be an instance of one of the classes. The candidate's exceptions
    keep their classes by identity (formats_units.candidate_raised): its own classes are classes of the judge's making
    (`solution.AppError`), never matched by their names."""

    def __init__(self, expected, match):
        classes = expected if isinstance(expected, tuple) else (expected,)
        self.classes = []
        for cls in classes:
            if not (isinstance(cls, type) and issubclass(cls, BaseException)):
                raise TypeError(f"pytest.raises expects exception classes, got {cls!r}")
            self.classes.append(cls)
        self.match = match
        self.info = ExceptionInfo()

    def __enter__(self):
        return self.info

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            raise Failed(f"DID NOT RAISE {self.classes}")
        if isinstance(exc, (CandidateGone, Skipped)) or not isinstance(exc, tuple(self.classes)):
            return False
        self.info.value, self.info.type = exc, exc_type
        if self.match is not None:
            self.info.match(self.match)
        return True


class Approx:
    """pytest.approx: numbers within rel (default 1e-6 of the expected value) or abs (default 1e-12); only abs when
    abs alone is given; lists, tuples and dicts element by element; anything else compared with ==."""

    __hash__ = None

    def __init__(self, expected, rel=None, abs=None, nan_ok=False):
        self.expected, self.rel, self.abs, self.nan_ok = expected, rel, abs, nan_ok

    def __eq__(self, actual):
        return self._equal(self.expected, actual)

    def __ne__(self, actual):
        return not self._equal(self.expected, actual)

    def __repr__(self):
        return f"approx({self.expected!r})"

    def _equal(self, expected, actual):
        if type(expected) is dict:
            return (
                type(actual) is dict
                and actual.keys() == expected.keys()
                and all(self._equal(expected[k], actual[k]) for k in expected)
            )
        if type(expected) in (list, tuple):
            return (
                type(actual) in (list, tuple)
                and len(actual) == len(expected)
                and all(self._equal(e, a) for e, a in zip(expected, actual))
            )
        numbers = (int, float, complex, bool)
        if type(expected) not in numbers or type(actual) not in numbers:
            return actual == expected
        if actual == expected:
            return True
        if isinstance(expected, (float, complex)) and math.isnan(abs(expected)):
            return self.nan_ok and math.isnan(abs(actual))
        if math.isinf(abs(expected)) or math.isnan(abs(actual)):
            return False
        absolute = 1e-12 if self.abs is None else self.abs
        if self.rel is None and self.abs is not None:
            return abs(expected - actual) <= absolute
        relative = (1e-6 if self.rel is None else self.rel) * abs(expected)
        return abs(expected - actual) <= max(relative, absolute)


def make_stand_in() -> types.ModuleType:
    """The `pytest` the test code sees."""
    module = _StandIn("pytest")

    def raises(expected, *args, match=None, **kwargs):
        context = RaisesContext(expected, match)
        if not args:
            return context
        with context:
            args[0](*args[1:], **kwargs)
        return context.info

    def skip(reason="", **_):
        raise Skipped(reason)

    def fail(reason="", pytrace=True):
        raise Failed(reason)

    def importorskip(name, minversion=None, reason=None):
        try:
            return importlib.import_module(name)
        except ImportError:
            raise Skipped(reason or f"could not import {name!r}") from None

    module.__dict__.update(
        fixture=fixture, mark=MarkGenerator(), param=param, raises=raises, approx=Approx, skip=skip, xfail=skip,
        fail=fail, importorskip=importorskip,
    )  # fmt: skip
    return module


class _StandIn(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise UnsupportedTest(f"the test code uses pytest.{name}, which the code verifier does not provide")
