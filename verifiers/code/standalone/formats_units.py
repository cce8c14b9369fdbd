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
    type_names = frozenset()  # that type's classes, its own first (see candidate_raised)


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
MAX_TYPE_NAMES = 32


class CandidateExit(SystemExit):
    """The candidate called `sys.exit()` (or raised SystemExit) in a call: test code expecting it
    (`pytest.raises(SystemExit)`, `assertRaises(SystemExit)`) sees it, as in plain execution, and, as there, it is not
    an `Exception`: `except Exception` in test code does not swallow it."""

    type_name = "SystemExit"
    type_names = frozenset({"SystemExit"})

    def __str__(self):
        return self.message


class CandidateClasses:
    """The candidate's exception classes as the judge knows them, per verification: one class of the judge's making per
    name (a CandidateFailure, holding nothing of the candidate's), so that `self.assertRaises(solution.AppError)` and
    `except solution.AppError:` work; an exception the candidate raises is an instance of the classes named in its
    MRO, and so is caught by each of them, as in plain execution."""

    def __init__(self):
        self.named: dict[str, type] = {}
        self.combined: dict[tuple, type] = {}

    def named_class(self, name: str) -> type | None:
        if name not in self.named and len(self.named) < MAX_CLASSES:
            self.named[name] = type(name, (CandidateFailure,), {"__str__": _message})
        return self.named.get(name)

    def combined_class(self, bases: tuple) -> type:
        if bases not in self.combined and len(self.combined) < MAX_CLASSES:
            try:
                made = type(bases[0].__name__, bases, {"__str__": _message})
            except TypeError:  # no consistent order, or a layout conflict: the first class alone
                made = bases[0]
            self.combined[bases] = made
        return self.combined.get(bases, bases[0])


MAX_CLASSES = 256


def _message(exc) -> str:
    """The candidate's message; an instance the test code makes itself (`AppError("x")`) has its arguments."""
    return exc.message if hasattr(exc, "message") else Exception.__str__(exc)


def candidate_raised(error_text: str, type_names=(), exit_code=None, classes: CandidateClasses | None = None):
    """The exception the judge raises for a call in which the candidate raised `error_text` ("ValueError: msg").

    `type_names`: the names of the classes of the candidate's exception, its own first (`[InvalidInput, AppError,
    ValueError, Exception, BaseException]`), as the sandbox reported them. The first builtin exception type among them
    is kept (the object is both a `ValueError` and a `CandidateFailure`), so test code that expects it
    (`pytest.raises(ValueError)`, `assertRaises(KeyError)`, `except ZeroDivisionError`) behaves as in plain
    execution, a candidate's subclass of ValueError included; `str()` gives the candidate's message, never its class's
    name. The candidate's own classes among them become classes of `classes` (CandidateClasses), of which it is an
    instance; the names are also kept, so `pytest.raises(solution.AppError)` matches a subclass of `AppError`.
    SystemExit arrives as CandidateExit.
    """
    name, _, message = error_text.partition(": ")
    names = [name]
    if type(type_names) is list:
        names += [n for n in type_names[:MAX_TYPE_NAMES] if type(n) is str and n.isidentifier()]
    if "SystemExit" in names:
        exc = CandidateExit(exit_code)
    else:
        builtin = next(filter(None, map(_builtin_exception, names)), None)
        own = [] if classes is None else [classes.named_class(n) for n in dict.fromkeys(names) if _is_own(n)]
        bases = tuple(filter(None, [_raised_class(builtin) if builtin is not None else None, *own]))
        cls = CandidateFailure if not bases else bases[0] if len(bases) == 1 else classes.combined_class(bases)
        exc = _instance(cls, message)
    exc.message, exc.type_name, exc.type_names = message, name, frozenset(names)
    return exc


def _is_own(name: str) -> bool:
    """A class name that is not a builtin's: one of the candidate's own classes (or a standard module's)."""
    return not isinstance(getattr(builtins, name, None), type)


def _builtin_exception(name: str) -> type | None:
    base = getattr(builtins, name, None)
    if isinstance(base, type) and issubclass(base, Exception) and base is not Exception:
        if not issubclass(base, _NOT_MAPPED):
            return base
    return None


def _raised_class(base: type) -> type:
    cls = _RAISED_TYPES.get(base.__name__)
    if cls is None:
        cls = _RAISED_TYPES[base.__name__] = type(base.__name__, (base, CandidateFailure), {"__str__": _message})
    return cls


def _instance(cls: type, message: str):
    try:
        return cls(message)
    except TypeError:  # UnicodeDecodeError and friends want more arguments; the message is all there is
        return cls.__new__(cls, message)


def describe(exc: BaseException) -> str:
    message = str(exc)[:200]
    name = getattr(exc, "type_name", "") if isinstance(exc, (CandidateFailure, CandidateExit)) else ""
    name = name or type(exc).__name__
    return f"{name}: {message}" if message else name


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
