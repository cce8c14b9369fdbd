"""What the judge's test formats share: the exceptions a test run can meet, and the tally of units.

A unit is what a format counts for `partial_credit`: a test function (each parametrized case once), a test method, a
call-based case. It passes when it runs to its end without an exception. How a candidate's exception reaches the
test code (`candidate_raised`) is decided here once, for every format: with its class, by identity (a builtin is the
builtin, the candidate's own class is a class of its own with its real bases, whatever its name), so that test code
expecting it, or not catching it, behaves as in plain execution, while a sandbox that died raises `CandidateGone`,
which no test can catch.

Standard library only, imported by the judge script (judge.py): no package-relative imports.
"""

from __future__ import annotations

import builtins
import sys


class CandidateFailure(Exception):
    """The candidate raised, or sent something that is not plain data."""

    type_name = ""


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


class CandidateRaised:
    """What every exception the judge raises for one the candidate raised is, besides its classes (a mixin, neither an
    Exception nor a BaseException: it changes no `except` clause of the test code). `message` is the candidate's
    message, `type_name` its class's name, for the verdict's reason only."""

    message = ""
    type_name = ""


def _message(exc) -> str:
    """The candidate's message; an instance the test code makes itself (`AppError("x")`) has its arguments."""
    return exc.message if "message" in vars(exc) else BaseException.__str__(exc)


class CandidateExit(SystemExit, CandidateRaised):
    """The candidate called `sys.exit()` (or raised SystemExit) in a call: test code expecting it
    (`pytest.raises(SystemExit)`, `assertRaises(SystemExit)`) sees it, as in plain execution, and, as there, it is not
    an `Exception`: `except Exception` in test code does not swallow it."""

    type_name = "SystemExit"
    __str__ = _message


# Builtin exception classes the test code never receives as they are: a StopIteration would end a loop over
# `map(candidate, ...)` silently, and exception groups need arguments a message cannot give. Each stands for its
# closest ordinary ancestor, so `except Exception` still catches what it would have caught.
_STANDS_FOR = {StopIteration: Exception, StopAsyncIteration: Exception, BaseExceptionGroup: BaseException}
_STANDS_FOR[ExceptionGroup] = Exception
_RAISED_TYPES: dict[type, type] = {SystemExit: CandidateExit}
MAX_CLASSES = 256  # the candidate's own exception classes per verification
MAX_OWN_ENTRIES = 64  # classes described in one report (harness.MAX_EXCEPTION_CLASSES)
MAX_BASES = 16


def _builtin_class(name) -> type | None:
    """The builtin exception class of that name, or None."""
    base = getattr(builtins, name, None) if type(name) is str else None
    return base if isinstance(base, type) and issubclass(base, BaseException) else None


def _raised_class(base: type) -> type:
    """The class of the exceptions the judge raises for a builtin (or standard-library) one the candidate raised: that
    class (or what stands for it) and CandidateRaised."""
    if base not in _RAISED_TYPES:
        real = _STANDS_FOR.get(base, base)
        _RAISED_TYPES[base] = type(base.__name__, (real, CandidateRaised), {"__str__": _message})
    return _RAISED_TYPES[base]


class CandidateClasses:
    """The candidate's own exception classes as the judge knows them, per verification: one class of the judge's making
    per class of the candidate's, known by its identity (the number the sandbox gives each class object), never by its
    name, and made with the judge's classes for the real bases: the builtin classes themselves, and the judge's classes
    of the candidate's own. `except AppError`, `pytest.raises(solution.AppError)` and `assertRaises(AppError)` catch an
    AppError and its subclasses, as in plain execution; a candidate's `class ValueError(BaseException)` is a class named
    ValueError that is no ValueError, and no Exception either. Nothing of the candidate runs here: a class holds its
    name and bases only."""

    def __init__(self):
        self.own: dict[int, type] = {}

    def resolve(self, described) -> type | None:
        """The judge's class for an exception class as the sandbox describes it (harness.exception_class): a builtin
        class itself, or one of the candidate's own; None when the description is not one."""
        if type(described) is not dict:
            return None
        entries: dict = {}
        own = described.get("own")
        for entry in own[:MAX_OWN_ENTRIES] if type(own) is list else ():
            if type(entry) is list and len(entry) in (3, 5) and type(entry[0]) is int and type(entry[1]) is str:
                entries.setdefault(entry[0], entry)
        return self._class(described.get("type"), entries, set())

    def _class(self, ref, entries: dict, making: set) -> type | None:
        if type(ref) is str:
            return _builtin_class(ref)
        if type(ref) is not int:
            return None
        if ref in self.own:
            return self.own[ref]
        if ref not in entries or ref in making or len(self.own) >= MAX_CLASSES:  # a cycle: only a forged report
            return None
        making.add(ref)
        name, bases = entries[ref][1:3]
        found = _standard_class(*entries[ref][3:]) if len(entries[ref]) == 5 else None
        if found is None:
            bases = [self._class(b, entries, making) for b in (bases[:MAX_BASES] if type(bases) is list else ())]
            found = _own_class(name[:100], [b for b in bases if b is not None])
        self.own[ref] = found
        return found


def _standard_class(module, qualname) -> type | None:
    """The judge's own class of a standard-library module that the sandbox says the candidate's class is
    (`json.decoder.JSONDecodeError`), as a builtin is the builtin: `pytest.raises(json.JSONDecodeError)` catches a
    failed `json.loads`, as in plain execution. Only a module the judge has already imported (the test code imports
    what it names; nothing is imported for a candidate), only an exception class found under that very name (read from
    the module's and classes' own attributes: no module `__getattr__` runs), and never one of unittest's, whose
    exceptions steer the test run (SkipTest, _ShouldStop): a claim the candidate forges can only name a class it could
    have raised itself."""
    if type(module) is not str or type(qualname) is not str or module.partition(".")[0] not in sys.stdlib_module_names:
        return None
    found = sys.modules.get(module)
    for part in qualname.split(".")[:8] if found is not None else ():
        found = vars(found).get(part) if hasattr(found, "__dict__") else None
    if not (isinstance(found, type) and issubclass(found, BaseException) and found.__module__ == module):
        return None
    if found.__qualname__ != qualname or any(str(c.__module__).startswith("unittest") for c in found.__mro__):
        return None
    return found


def _own_class(name: str, bases: list) -> type:
    """A class of the judge's making named `name`, with `bases` (builtin classes, or the judge's classes of the
    candidate's own; what stands for a builtin the test never receives) and CandidateRaised."""
    bases = list(dict.fromkeys(_STANDS_FOR.get(b, b) for b in bases)) or [BaseException]
    namespace = {"__str__": _message, "__module__": "solution", "__qualname__": name, "type_name": name}
    for tried in (bases, bases[:1], [BaseException]):  # a forged report's bases may not combine
        try:
            return type(name, (*tried, CandidateRaised), namespace)
        except TypeError:
            continue
    raise JudgeFault(f"cannot make an exception class named {name!r}")


def candidate_raised(
    error_text: str, described=None, exit_code=None, classes: CandidateClasses | None = None, attributes=None
):
    """The exception the judge raises for a call in which the candidate raised `error_text` ("ValueError: msg").

    `described`: the exception's class as the sandbox described it (harness.exception_class). Its class crosses by
    identity (CandidateClasses): a builtin is the builtin (with CandidateRaised), so test code that expects it
    (`pytest.raises(ValueError)`, `assertRaises(KeyError)`, `except ZeroDivisionError`) behaves as in plain
    execution, a candidate's subclass of ValueError included, and a KeyboardInterrupt or a `class Boom(BaseException)`
    escapes `except Exception` as it does there; `str()` gives the candidate's message, never its class's name.
    SystemExit arrives as CandidateExit, with its code. A class the judge cannot tell (no description, or a class made
    to break it) is a bare BaseException: only `except BaseException` or a bare `except` catches it.

    `attributes`: the exception's `args` and other attributes as plain data (harness.raised_attributes): an OSError's
    `errno`, what the candidate's own class set; never one of the judge's (`message`, `type_name`, names with an
    underscore, a SystemExit's `code`), and none that its class refuses."""
    name, _, message = error_text.partition(": ")
    cls = classes.resolve(described) if classes is not None else None
    known = cls if cls is not None and not issubclass(cls, CandidateRaised) else None  # a builtin, or a standard one
    cls = _raised_class(known) if known is not None else cls or _raised_class(BaseException)
    exc = _instance(cls, exit_code if issubclass(cls, SystemExit) else message)
    for attribute, value in (attributes or {}).items() if type(attributes) is dict else ():
        if attribute == "args" and type(value) is tuple and not issubclass(cls, SystemExit):
            exc.args = value
        elif type(attribute) is str and attribute.isidentifier() and not attribute.startswith("_"):
            if attribute not in _JUDGES_ATTRIBUTES and not (attribute == "code" and issubclass(cls, SystemExit)):
                try:
                    setattr(exc, attribute, value)
                except (AttributeError, TypeError, ValueError):
                    pass
    exc.message, exc.type_name = message, name
    return exc


_JUDGES_ATTRIBUTES = frozenset({"message", "type_name", "args", "with_traceback", "add_note"})


def builtin_raised(base: type, message: str):
    """An exception of the builtin class `base` that plain execution would raise at the test's use of the candidate (an
    import of a name the solution does not define): the candidate's fault, not the test code's."""
    exc = _instance(_raised_class(base), message)
    exc.message, exc.type_name = message, base.__name__
    return exc


def _instance(cls: type, argument):
    try:
        return cls(argument)
    except TypeError:  # UnicodeDecodeError and friends want more arguments; the message is all there is
        return cls.__new__(cls, argument)


def describe(exc: BaseException) -> str:
    message = str(exc)[:200]
    name = getattr(exc, "type_name", "") if isinstance(exc, (CandidateFailure, CandidateRaised)) else ""
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
        self.interrupted: str | None = None  # a KeyboardInterrupt ended the run (see `run`)

    def expect(self, name: str) -> None:
        self.results.setdefault(name, False)  # a unit that never reports (its class set-up failed) has failed

    def passed(self, name: str) -> None:
        if self.gone():
            self.failed(name, CandidateGone(self.gone()))
        elif self.interrupted:
            self.failed(name, builtin_raised(KeyboardInterrupt, f"the run was interrupted ({self.interrupted})"))
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
        """Run one unit: it passes when `body()` returns. Any other exception fails it, whatever its class (the
        candidate's `class Boom(BaseException)` and its GeneratorExit too, as pytest and unittest fail the test); a
        KeyboardInterrupt also ends the run (`interrupt`), as it ends a pytest session or a unittest run."""
        if self.unusable:
            return
        try:
            body()
        except Skipped:
            self.skipped(name)
        except JudgeFault:
            raise
        except BaseException as exc:
            self.failed(name, exc)
            if isinstance(exc, KeyboardInterrupt):
                self.interrupt(exc)
        else:
            self.passed(name)

    def interrupt(self, exc: BaseException) -> None:
        """A KeyboardInterrupt (the candidate's) ended the run: no unit passes from now on, as none runs after it in
        plain execution."""
        self.interrupted = self.interrupted or describe(exc)

    def verdict(self) -> dict:
        if self.unusable:
            return {"unusable": self.unusable}
        if not self.results:
            return {"unusable": "the test code defines test functions or classes, but none of them ran (all skipped)"}
        return {"total": len(self.results), "passed": sum(self.results.values()), "failures": self.failures}
