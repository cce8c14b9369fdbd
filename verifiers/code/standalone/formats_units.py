"""What the judge's test formats share: the exceptions a test run can meet, and the tally of units.

A unit is what a format counts for `partial_credit`: a test function (each parametrized case once), a test method, a
call-based case. It passes when it runs to its end without an exception. How a candidate's exception reaches the
test code (`candidate_raised`) is decided here once, for every format: with its builtin type, so that test code
expecting it behaves as in plain execution, while a sandbox that died raises `CandidateGone`, which no test can catch.

Standard library only, imported by the judge script (judge.py): no package-relative imports.
"""

from __future__ import annotations

import builtins


class CandidateFailure(Exception):
    """The candidate raised, or sent something that is not plain data."""

    type_name = ""  # the type of the exception the candidate raised, as its sandbox reported it


class CandidateGone(BaseException):
    """The sandbox ended (crash, `os._exit`, deadline) or broke the protocol. A BaseException so that no test code can
    catch it (`except Exception`, `pytest.raises(Exception)`): a candidate that dies has not raised anything."""


class JudgeFault(BaseException):
    """The judge's own code raised while handling the candidate's data (decoding a reply, mirroring an argument): a
    bug of the verifier, not a failing test. A BaseException so that no test code's `except Exception` turns it into
    a test result; judge.py reports it as `judge_error`."""


class UnsupportedTest(Exception):
    """The test needs something the verifier cannot give the candidate (a lambda argument, a built-in fixture, ...)."""


class ReferenceFault(Exception):
    """The test code itself cannot run (judge_formats.reference_fault says when): the reference is unusable."""


class Skipped(BaseException):
    """pytest.skip(), pytest.xfail() or a failed importorskip: the unit is not counted."""


class Failed(BaseException):
    """pytest.fail(), or pytest.raises() that saw no exception. A BaseException, as pytest's own: a test's
    `except Exception` does not swallow it."""


class FixtureSpec:
    """What `@pytest.fixture(...)` records on the function."""

    def __init__(self, scope="function", autouse=False, name=None):
        if scope not in ("function", "class", "module", "package", "session"):
            raise UnsupportedTest(f"pytest.fixture(scope={scope!r}) is not a pytest scope")
        self.scope, self.autouse, self.name = scope, autouse, name


class Mark:
    """One `pytest.mark.NAME(*args, **kwargs)` on a test function or class."""

    def __init__(self, name, args=(), kwargs=None):
        self.name, self.args, self.kwargs = name, args, kwargs or {}


class ParameterSet:
    """`pytest.param(*values, marks=..., id=...)`."""

    def __init__(self, values, marks=(), id=None):
        self.values, self.marks, self.id = values, marks, id


_RAISED_TYPES: dict[str, type] = {}
_NOT_MAPPED = (StopIteration, StopAsyncIteration, BaseExceptionGroup)


def candidate_raised(error_text: str) -> CandidateFailure:
    """The exception the judge raises for a call in which the candidate raised `error_text` ("ValueError: msg").

    A builtin exception type keeps its type (the object is both a `ValueError` and a `CandidateFailure`), so test code
    that expects it (`pytest.raises(ValueError)`, `assertRaises(KeyError)`, `except ZeroDivisionError`) behaves as in
    plain execution; `str()` gives the candidate's message. Other types (the candidate's own classes, or standard ones
    such as `json.JSONDecodeError`) arrive as a plain CandidateFailure carrying the type's name: the sandbox reports a
    name, not the class.
    """
    name, _, message = error_text.partition(": ")
    base = getattr(builtins, name, None)
    exc = None
    if name.isidentifier() and isinstance(base, type) and issubclass(base, Exception) and base is not Exception:
        if not issubclass(base, _NOT_MAPPED):
            exc = _make_raised(name, base, message)
    if exc is None:
        exc = CandidateFailure(error_text)
    exc.type_name = name
    return exc


def _make_raised(name: str, base: type, message: str):
    cls = _RAISED_TYPES.get(name)
    if cls is None:
        cls = _RAISED_TYPES[name] = type(name, (base, CandidateFailure), {"__str__": lambda self: self.message})
    try:
        exc = cls(message)
    except TypeError:  # UnicodeDecodeError and friends want more arguments; the message is all there is
        exc = cls.__new__(cls, message)
    exc.message = message
    return exc


def describe(exc: BaseException) -> str:
    message = str(exc)[:200]
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


class UnitTally:
    """Pass or fail per unit, in order. `fault_of(exc)` says why an exception is the test code's fault (the reference
    is then unusable and the run stops), or None when it counts against the candidate. `gone()` says why the sandbox
    ended, or None: once it has, no unit passes, even one whose test code swallowed the failure with a bare `except`,
    as in plain execution a crash ends every test still to come."""

    def __init__(self, fault_of, gone=lambda: None):
        self.fault_of = fault_of
        self.gone = gone
        self.results: dict[str, bool] = {}
        self.failed_units: set[str] = set()
        self.failures: list[dict] = []
        self.unusable: str | None = None

    def expect(self, name: str) -> None:
        self.results.setdefault(name, False)  # a unit that never reports (its class set-up failed) has failed

    def passed(self, name: str) -> None:
        if self.gone():
            self.failed(name, CandidateGone(self.gone()))
        elif name not in self.failed_units:
            self.results[name] = True

    def skipped(self, name: str) -> None:
        self.results.pop(name, None)

    def failed(self, name: str, exc: BaseException) -> None:
        self.failed_units.add(name)
        self.results[name] = False
        self.note(name, exc)

    def note(self, where: str, exc: BaseException) -> None:
        """Record an exception (of a unit, or of a class set-up that fails the units it holds)."""
        fault = None if isinstance(exc, CandidateGone) else self.fault_of(exc)
        if fault:
            self.unusable = self.unusable or f"{fault} (in {where})"
        if len(self.failures) < 5:
            self.failures.append({"test": where, "error": describe(exc)})

    def run(self, name: str, body) -> None:
        """Run one unit: it passes when `body()` returns."""
        if self.unusable:
            return
        try:
            body()
        except Skipped:
            self.skipped(name)
        except (Exception, CandidateGone, Failed, SystemExit) as exc:
            self.failed(name, exc)
        else:
            self.passed(name)

    def verdict(self) -> dict:
        if self.unusable:
            return {"unusable": self.unusable}
        if not self.results:
            return {"unusable": "the test code defines test functions or classes, but none of them ran (all skipped)"}
        return {"total": len(self.results), "passed": sum(self.results.values()), "failures": self.failures}
