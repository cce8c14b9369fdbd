"""What the package uses of TRL, transformers and latex2sympy2_extended, read from its source with `ast`.

The contract test (tests/trl_grpo_ext/test_trl_contract.py) checks every use found here against the installed
versions, so that a new use is tested the moment it is written, with no list to keep up to date by hand:

- `names`: every name imported from those libraries, and every attribute read from a module of theirs imported
  under a name (`stock_module.create_model_from_path`), private or not;
- `inherited`: every attribute that one of our subclasses of their classes (the trainer, the config, the
  callbacks, the LaTeX converter) reads, writes or calls on `self`, on `super()`, on its `args` (the config) or on a
  function parameter named `trainer`, and does not define itself. Our own definitions are what the class bodies
  define (methods, class attributes, dataclass fields) and what `__init__` assigns unconditionally (a statement of
  its body, not one inside an `if`); everything else comes from the library.

Calls are recorded with their positional count and keyword names, so that the test can bind them to the library's
signature.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SOURCES = (REPO / "trl_grpo_ext", REPO / "verifiers")
LIBRARIES = ("trl", "transformers", "latex2sympy2_extended")


@dataclasses.dataclass(frozen=True)
class Call:
    """A call as written: how many positional arguments, which keywords; `open_ended` when it unpacks `*`/`**`."""

    positional: int
    keywords: tuple[str, ...]
    open_ended: bool


@dataclasses.dataclass(frozen=True)
class Use:
    """`owner.name` used at `where` (path:line). `owner` is the library class (`trl.GRPOTrainer`) or module."""

    owner: str
    name: str
    where: str
    call: Call | None = None
    through_super: bool = False


def is_library(qualified: str) -> bool:
    return qualified.split(".")[0] in LIBRARIES


def source_files() -> list[Path]:
    return sorted(p for root in SOURCES for p in root.rglob("*.py"))


def _relative(path: Path) -> str:
    return str(path.relative_to(REPO))


def _imports(tree: ast.Module) -> dict[str, str]:
    """Local name -> what it stands for: `module.attr` for `from module import attr`, the module for `import`.
    Relative imports stand for `.name` (a name of this package)."""
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                module = "." * node.level + (node.module or "")
                names[alias.asname or alias.name] = f"{module}.{alias.name}" if node.level == 0 else f".{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    names[alias.asname] = alias.name
                else:
                    names[alias.name.split(".")[0]] = alias.name.split(".")[0]
    return names


@dataclasses.dataclass
class _Class:
    name: str
    path: Path
    node: ast.ClassDef
    bases: list[str]  # qualified library names, or `.Name` for a class of this package

    def own_names(self) -> set[str]:
        own = set()
        for statement in self.node.body:
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                own.add(statement.name)
            elif isinstance(statement, ast.Assign):
                own |= {t.id for t in statement.targets if isinstance(t, ast.Name)}
            elif isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
                own.add(statement.target.id)
            if isinstance(statement, ast.FunctionDef) and statement.name == "__init__":
                for line in statement.body:  # unconditional assignments only
                    targets = line.targets if isinstance(line, ast.Assign) else [getattr(line, "target", None)]
                    for target in targets:
                        for element in target.elts if isinstance(target, ast.Tuple) else [target]:
                            if _is_self_attribute(element):
                                own.add(element.attr)
        return own


def _is_self_attribute(node: object) -> bool:
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"


def _qualified(expr: ast.expr, imports: dict[str, str]) -> str | None:
    if isinstance(expr, ast.Name):
        return imports.get(expr.id, f".{expr.id}")
    if isinstance(expr, ast.Attribute):
        owner = _qualified(expr.value, imports)
        return None if owner is None else f"{owner}.{expr.attr}"
    return None


def _classes() -> dict[str, _Class]:
    classes: dict[str, _Class] = {}
    for path in source_files():
        tree = ast.parse(path.read_text(), str(path))
        imports = _imports(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                bases = [q for q in (_qualified(b, imports) for b in node.bases) if q is not None]
                classes.setdefault(node.name, _Class(node.name, path, node, bases))
    return classes


def _library_roots(cls: _Class, classes: dict[str, _Class]) -> list[str]:
    roots = []
    for base in cls.bases:
        if is_library(base):
            roots.append(base)
        elif base.startswith(".") and base[1:] in classes and base[1:] != cls.name:
            roots += _library_roots(classes[base[1:]], classes)
    return roots


@dataclasses.dataclass
class _Family:
    """Our classes on top of the same library classes (the trainer and its mixin; the config; ...)."""

    roots: tuple[str, ...]
    members: list[_Class]

    def own_names(self) -> set[str]:
        return set().union(*(m.own_names() for m in self.members))


def families() -> dict[tuple[str, ...], _Family]:
    classes = _classes()
    found: dict[tuple[str, ...], _Family] = {}
    for cls in classes.values():
        roots = tuple(sorted(set(_library_roots(cls, classes))))
        if roots:
            found.setdefault(roots, _Family(roots, [])).members.append(cls)
    return found


def _call_of(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> Call | None:
    parent = parents.get(node)
    if not (isinstance(parent, ast.Call) and parent.func is node):
        return None
    starred = any(isinstance(a, ast.Starred) for a in parent.args) or any(k.arg is None for k in parent.keywords)
    return Call(len(parent.args), tuple(k.arg for k in parent.keywords if k.arg is not None), starred)


def _family_of(annotation: ast.expr | None, families_by_class: dict[str, _Family]) -> _Family | None:
    if annotation is None:
        return None
    for node in ast.walk(annotation):
        if isinstance(node, ast.Name) and node.id in families_by_class:
            return families_by_class[node.id]
    return None


@functools.cache
def inherited() -> tuple[Use, ...]:
    """Every attribute our subclasses of library classes use and do not define (see the module)."""
    found = families()
    by_class = {m.name: family for family in found.values() for m in family.members}
    trainer_family = next((f for f in found.values() if "trl.GRPOTrainer" in f.roots), None)
    config_family = next((f for f in found.values() if "trl.GRPOConfig" in f.roots), None)
    uses = []
    for path in source_files():
        tree = ast.parse(path.read_text(), str(path))
        parents = {child: parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)}
        for use_family, node, through_super in _accesses(tree, by_class, trainer_family, config_family):
            uses.append((use_family, node, through_super, path, _call_of(node, parents)))
    result = []
    for family, node, through_super, path, call in uses:
        name = node.attr if isinstance(node, ast.Attribute) else node.value
        if name in family.own_names() and not through_super:
            continue
        for root in family.roots:
            result.append(Use(root, name, f"{_relative(path)}:{node.lineno}", call, through_super))
    return tuple(result)


def _accesses(tree, by_class, trainer_family, config_family) -> Iterator[tuple[_Family, ast.AST, bool]]:
    """(family, node naming the attribute, through super()) for each use in one module."""
    for function, family in _functions(tree, by_class, trainer_family):
        names = {"self": family} if family is not None else {}
        arguments = function.args.posonlyargs + function.args.args + function.args.kwonlyargs
        for argument in arguments:
            if argument.arg == "trainer" and trainer_family is not None:
                names["trainer"] = trainer_family
            annotated = _family_of(argument.annotation, by_class)
            if annotated is not None and argument.arg != "self":
                names[argument.arg] = annotated
        for node in ast.walk(function):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in names:
                yield names[node.value.id], node, False
            elif (  # self.args.X and trainer.args.X: the config
                isinstance(node, ast.Attribute)
                and config_family is not None
                and isinstance(node.value, ast.Attribute)
                and node.value.attr == "args"
                and isinstance(node.value.value, ast.Name)
                and names.get(node.value.value.id) is trainer_family
            ):
                yield config_family, node, False
            elif (  # super().X
                isinstance(node, ast.Attribute)
                and family is not None
                and isinstance(node.value, ast.Call)
                and isinstance(node.value.func, ast.Name)
                and node.value.func.id == "super"
            ):
                yield family, node, True
            elif (  # getattr(self, "X", ...), hasattr(trainer, "X")
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("getattr", "hasattr", "setattr")
                and len(node.args) >= 2
                and isinstance(node.args[0], ast.Name)
                and node.args[0].id in names
                and isinstance(node.args[1], ast.Constant)
                and isinstance(node.args[1].value, str)
            ):
                yield names[node.args[0].id], node.args[1], False
    for node in ast.walk(tree):  # Converter(...).parse(...): a method of an instance built on the spot
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Name)
            and node.value.func.id in by_class
        ):
            yield by_class[node.value.func.id], node, False


def _functions(tree, by_class, trainer_family) -> Iterator[tuple[ast.FunctionDef, _Family | None]]:
    """Each function with the family of the class it is a method of (None for other functions)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            family = by_class.get(node.name)
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    yield item, family
        elif isinstance(node, (ast.Module,)):
            for item in ast.walk(node):
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and not _is_method(item, tree):
                    yield item, None


def _is_method(function: ast.FunctionDef, tree: ast.Module) -> bool:
    return any(isinstance(n, ast.ClassDef) and function in n.body for n in ast.walk(tree))


@functools.cache
def names() -> tuple[Use, ...]:
    """Every name imported from the libraries, and every attribute read from their modules imported under a name."""
    result = []
    for path in source_files():
        tree = ast.parse(path.read_text(), str(path))
        imports = _imports(tree)
        modules = {local for local, target in imports.items() if is_library(target)}
        for node in ast.walk(tree):
            where = f"{_relative(path)}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.ImportFrom) and node.level == 0 and is_library(node.module or ""):
                result += [Use(node.module, alias.name, where) for alias in node.names]
            elif isinstance(node, ast.Import):
                result += [Use(alias.name, "", where) for alias in node.names if is_library(alias.name)]
            elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules:
                result.append(Use(imports[node.value.id], node.attr, where))
    return tuple(result)
