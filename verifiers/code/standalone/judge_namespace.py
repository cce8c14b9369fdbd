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

import builtins
import importlib
import sys

from formats_modules import JUDGE_MODULE
from formats_units import UnsupportedTest, candidate_raised
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


def bind_candidate(session: Session, kinds: dict, referenced: set) -> dict:
    """The test's namespace: candidate callables as proxies, its stdlib imports re-imported here, values fetched.

    Names of builtins are never bound, and a name of a standard-library module is always the real module: a candidate
    defining `sorted`, or a `math` whose `isclose` always agrees, must not rewrite the test's own tools.
    """
    namespace = {"__name__": JUDGE_MODULE, "__builtins__": builtins}
    for name, kind in kinds.items():
        if not isinstance(name, str) or not name.isidentifier() or hasattr(builtins, name) or name not in referenced:
            continue
        value = bind_name(session, name, kind) if name not in RESERVED else _UNBOUND
        if value is not _UNBOUND:
            namespace[name] = value
    return namespace


def bind_name(session: Session, name: str, kind):
    """What the test sees for one of the test's names that the candidate defines (`_UNBOUND`: nothing).

    `name` comes from the test code; `kind` from the candidate, and it only chooses between a proxy and a fetched
    value: it is never imported (see the module docstring)."""
    if name in sys.stdlib_module_names:
        module = _stdlib_module(name)
        return _UNBOUND if module is None else module
    if kind == "callable":
        return RemoteObject(session, {"name": name})
    if isinstance(kind, str) and kind.startswith("module:"):
        session.touched = True  # the candidate chose what this name is: `import math as add`
        return RemoteObject(session, {"name": name}, "module")
    if kind == "value":
        return session.request("get", {"name": name})[1]
    return _UNBOUND


class CandidateModule:
    """The solution's module in a test module: `import solution` binds it, `from solution import f` reads `f` from it.
    Reading a name the completion does not define raises ImportError, as importing it would."""

    def __init__(self, session: Session, kinds: dict, module: str):
        self._session, self._kinds, self._module = session, kinds, module

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        value = bind_name(self._session, name, self._kinds[name]) if name in self._kinds else _UNBOUND
        if value is _UNBOUND:
            raise candidate_raised(f"ImportError: cannot import name {name!r} from {self._module!r}")
        return value

    def star(self, names: dict, referenced: set) -> None:
        """`from solution import *`: the public names the test uses, except test names (`test_*`, `Test*`): a
        candidate's own `test_add` never replaces the test's."""
        bound = bind_candidate(self._session, self._kinds, referenced)
        names.update({k: v for k, v in bound.items() if not k.startswith(("_", "test", "Test"))})

    @staticmethod
    def unsupported(path: str):
        raise UnsupportedTest(f"the test imports {path!r}: only the solution's module itself comes from the candidate")
