"""What the test code's namespace holds of the candidate: its names as proxies, never the test's own tools.

Names of builtins are never bound, a name of a standard-library module is always the real module (imported here,
in the judge), and `pytest` is the stand-in: a candidate defining `sorted`, or a `math` whose `isclose` always agrees,
cannot rewrite what the test checks with.

Everything the candidate reports is data: the names come from the test code (only names it uses are bound), and the
kind the candidate gives a name ("callable", "value", "module:<name>") never makes the judge import anything. The only
module imported here for a candidate name is the top-level standard module of that very name, which the test code
itself names (`math` in `assert math.isclose(...)`); a candidate's module under another name (`import venv.__main__
as add`) is a handle into the sandbox, like any object that is not data.
"""

import ast
import builtins
import importlib
import sys

from formats_modules import JUDGE_MODULE
from formats_units import UnsupportedTest, builtin_raised
from judge_proxy import RemoteObject, Session

# Importing these has side effects a test never needs; a candidate could name them as its "module" globals.
UNIMPORTABLE = {"antigravity", "this", "idlelib", "tkinter", "turtle", "turtledemo"}


def _stdlib_module(name: str):
    """The standard module `name` (top level only: a name the test uses is never dotted), or None."""
    if name not in sys.stdlib_module_names or name in UNIMPORTABLE or name.startswith("_"):
        return None
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


_UNBOUND = object()
RESERVED = {"pytest"}  # the test's own tools: a candidate name never replaces them


def names_used(tree) -> tuple[set, set]:
    """The names the test code uses, and those of them it reads attributes of (`math.isclose`: used as a module)."""
    referenced, as_module = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            referenced.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            as_module.add(node.value.id)
    return referenced, as_module


def bind_candidate(session: Session, kinds: dict, referenced: set, as_module: set) -> dict:
    """The test's namespace: candidate callables as proxies, its stdlib imports re-imported here, values fetched.

    Names of builtins are never bound, and a name of a standard-library module the test uses as a module
    (`as_module`: it reads an attribute of it) is always the real module: a candidate defining `sorted`, or a `math`
    whose `isclose` always agrees, must not rewrite the test's own tools. A candidate function named like a module
    (`def calendar(year)`) that the test only calls is the candidate's.
    """
    namespace = {"__name__": JUDGE_MODULE, "__builtins__": builtins}
    for name, kind in kinds.items():
        if not isinstance(name, str) or not name.isidentifier() or hasattr(builtins, name) or name not in referenced:
            continue
        own_function = kind in ("callable", "exception") and name not in as_module
        value = bind_name(session, name, kind, own_function) if name not in RESERVED else _UNBOUND
        if value is not _UNBOUND:
            namespace[name] = value
    return namespace


def bind_name(session: Session, name: str, kind, own_function: bool = False):
    """What the test sees for one of the test's names that the candidate defines (`_UNBOUND`: nothing).

    `name` comes from the test code; `kind` from the candidate, and it only chooses between a proxy and a fetched
    value: it is never imported (see the module docstring). `own_function`: a candidate callable bound as such even
    when its name is a standard module's (the test only calls it)."""
    if name in sys.stdlib_module_names and not own_function:
        module = _stdlib_module(name)
        return _UNBOUND if module is None else module
    if kind == "callable":
        return RemoteObject(session, {"name": name})
    if kind == "exception":  # the judge's class for it, by identity (formats_units.CandidateClasses)
        return exception_class(session, name)
    if isinstance(kind, str) and kind.startswith("module:"):
        session.touched = True  # the candidate chose what this name is: `import math as add`
        return RemoteObject(session, {"name": name}, "module")
    if kind == "value":
        return session.request("get", {"name": name})[1]
    return _UNBOUND


def exception_class(session: Session, name: str):
    """The class the candidate's global `name` is (it reported an exception class): the builtin class itself for a
    builtin one (`AppError = ValueError`), else the judge's class of the candidate's own, which its exceptions of that
    class are instances of; a proxy when the sandbox does not describe it. Asking is not using the candidate: test
    code that fails before any call is still the reference's fault (`Session.touched`)."""
    touched = session.touched
    try:
        reply, _ = session.request("class", {"name": name})
    finally:
        session.touched = touched
    return session.classes.resolve(reply.get("class")) or RemoteObject(session, {"name": name})


def candidate_values(kinds: dict) -> set:
    """The candidate's module-level values the test may read (as `bind_candidate` binds them)."""
    return {
        name
        for name, kind in kinds.items()
        if kind == "value"
        and isinstance(name, str)
        and name.isidentifier()
        and not hasattr(builtins, name)
        and name not in sys.stdlib_module_names
        and name not in RESERVED
    }


class LiveValues:
    """`__judge_value__(name)`: a candidate's module-level value as it is now; fetched again only when the candidate
    has been called (or iterated, or an attribute read) since the last fetch."""

    def __init__(self, session: Session):
        self.session, self.seen = session, {}

    def __call__(self, name: str):
        seen = self.seen.get(name)
        if seen is None or seen[0] != self.session.actions:
            value = self.session.request("get", {"name": name})[1]
            self.seen[name] = seen = (self.session.actions, value)
        return seen[1]


class CandidateModule:
    """The solution's module in a test module: `import solution` binds it, `from solution import f` reads `f` from it.
    Reading a name the completion does not define raises ImportError, as importing it would."""

    def __init__(self, session: Session, kinds: dict, module: str, as_module: set):
        self._session, self._kinds, self._module, self._as_module = session, kinds, module, as_module

    def __getattr__(self, name: str):
        """`from solution import random` and `solution.random` name the solution's own `random` explicitly."""
        if name.startswith("__"):
            raise AttributeError(name)
        kind = self._kinds.get(name)
        own = kind in ("callable", "exception")
        value = bind_name(self._session, name, kind, own) if name in self._kinds else _UNBOUND
        if value is _UNBOUND:
            raise builtin_raised(ImportError, f"cannot import name {name!r} from {self._module!r}")
        return value

    def star(self, names: dict, referenced: set) -> None:
        """`from solution import *`: the public names the test uses, except test names (`test_*`, `Test*`): a
        candidate's own `test_add` never replaces the test's."""
        bound = bind_candidate(self._session, self._kinds, referenced, self._as_module)
        names.update({k: v for k, v in bound.items() if not k.startswith(("_", "test", "Test"))})

    @staticmethod
    def unsupported(path: str):
        raise UnsupportedTest(f"the test imports {path!r}: only the solution's module itself comes from the candidate")
