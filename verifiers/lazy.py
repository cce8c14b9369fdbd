"""Lazy package `__init__`s: a package's public names are loaded from their modules on first access (PEP 562).

Each process imports only what it runs: a math worker imports `trl_grpo_ext.verifiers.core.deadline_pool_worker` and
the math modules it uses, and importing a package on the way (`trl_grpo_ext`, `trl_grpo_ext.verifiers`) must not
load the rest of it (the sandbox, the code verifier, the Ray backend). So a package's `__init__` lists its public
names as the imports of an `if TYPE_CHECKING:` block (what type checkers and editors read) and hands them to
`lazy_exports`, which imports a name's module when the name is first asked for:

    from typing import TYPE_CHECKING

    from trl_grpo_ext.verifiers.lazy import lazy_exports

    if TYPE_CHECKING:
        from .core.contract import Verifier

    __all__ = ["Verifier"]
    __getattr__, __dir__ = lazy_exports(__name__, __file__)

`from package import Name`, `package.Name` and `dir(package)` work as with eager imports. Standard library only; it
lives in the lowest layer so that every package of the tree can use it.
"""

from __future__ import annotations

import ast
import importlib
import sys
from collections.abc import Callable
from pathlib import Path


def type_checking_imports(init_file: str) -> dict[str, tuple[str, str]]:
    """{public name: (relative module, name in it)} from the `if TYPE_CHECKING:` block of a package's `__init__`."""
    exports = {}
    for node in ast.parse(Path(init_file).read_text()).body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for statement in node.body:
                if isinstance(statement, ast.ImportFrom):
                    module = "." * statement.level + (statement.module or "")
                    exports.update({(a.asname or a.name): (module, a.name) for a in statement.names})
    return exports


def lazy_exports(package: str, init_file: str) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """The `__getattr__` and `__dir__` of package `package`, whose `__init__` is `init_file`."""
    exports = type_checking_imports(init_file)
    # A name that is also one of the package's submodules is bound now: importing that submodule, from anywhere, sets
    # the package's attribute of that name to the module, which would then hide the lazy name for good.
    folder = Path(init_file).parent
    for name, (module, attribute) in exports.items():
        if (folder / f"{name}.py").exists() or (folder / name / "__init__.py").exists():
            setattr(sys.modules[package], name, getattr(importlib.import_module(module, package), attribute))

    def __getattr__(name: str) -> object:
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, attribute = exports[name]
        value = getattr(importlib.import_module(module, package), attribute)
        setattr(sys.modules[package], name, value)  # found directly from now on
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *exports})

    return __getattr__, __dir__
