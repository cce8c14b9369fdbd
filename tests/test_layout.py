"""The package's modules import one another without a cycle, in layers that point one way, including imports inside
functions; the scripts that run outside the package import only the standard library; package `__init__`s are lazy.

The whole package is read: `trl_grpo_ext/` and `verifiers/` (installed as `trl_grpo_ext.verifiers`). Every `import`
and `from ... import` is followed, at any depth (inside functions, under `if TYPE_CHECKING:`), package-relative ones
resolved, as are the bare-name imports between the scripts of verifiers/code/standalone/. A cycle makes the order of
imports matter and hides which module depends on which (base.py and ray_backend.py once imported each other;
compare.worker -> compare.held_out -> evaluation.tasks -> compare.worker did, through imports inside functions).
"""

from __future__ import annotations

import ast
import sys
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = "trl_grpo_ext"
VERIFIERS = f"{PACKAGE}.verifiers"
TREES = {PACKAGE: REPO / "trl_grpo_ext", VERIFIERS: REPO / "verifiers"}
STANDALONE = f"{VERIFIERS}.code.standalone"
# The tool's cell: its text runs inside the sandbox under the harness (`python -I -S`), never imported by the package.
TOOL_CELL = f"{PACKAGE}.tools.cell"


def module_names() -> dict[str, Path]:
    modules = {}
    for prefix, folder in TREES.items():
        for path in folder.rglob("*.py"):
            parts = path.relative_to(folder).with_suffix("").parts
            modules[".".join((prefix, *(parts[:-1] if parts[-1] == "__init__" else parts)))] = path
    return modules


MODULES = module_names()
# Scripts: run as programs outside the package, standard library and their neighbours (by bare name) only.
SCRIPTS = {name: path for name, path in MODULES.items() if name.startswith(f"{STANDALONE}.")} | {
    TOOL_CELL: MODULES[TOOL_CELL]
}

# Lowest first: a module imports modules of its own layer and of the layers below it, never above. A module belongs
# to the layer of the longest prefix it starts with; "library" holds every other module of trl_grpo_ext/.
LAYERS = [
    ("verifiers", (VERIFIERS,)),  # imports nothing of trl_grpo_ext outside itself
    ("library", (PACKAGE,)),  # data/, models/, tools/, memory/, usage errors
    ("evaluation", (f"{PACKAGE}.evaluation",)),  # never the compare command
    # trainer/: the trainer, its config, the estimators; the package's own __init__ exports their names
    ("trainer", (f"{PACKAGE}.trainer", f"{PACKAGE}.__init__")),
    ("compare", (f"{PACKAGE}.compare",)),
    ("commands", (f"{PACKAGE}.commands", f"{PACKAGE}.cli")),  # on top: nothing below imports a command
]


def layer_of(module: str) -> int:
    key = f"{PACKAGE}.__init__" if module == PACKAGE else module
    found = [
        (len(p), i) for i, (_, prefixes) in enumerate(LAYERS) for p in prefixes if key == p or key.startswith(p + ".")
    ]
    return max(found)[1]


def resolve(importer: str, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The modules of the package an import statement names (a name imported from a package may be a module)."""
    is_package = MODULES[importer].name == "__init__.py"
    script_folder = importer.rpartition(".")[0] if importer in SCRIPTS else None
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
        found = [n for n in names if n in MODULES]
        if script_folder is not None:
            found += [f"{script_folder}.{n}" for n in names if f"{script_folder}.{n}" in SCRIPTS]
        return found
    if node.level:
        anchor = importer.split(".") if is_package else importer.split(".")[:-1]
        anchor = anchor[: len(anchor) - node.level + 1]
        base = ".".join([*anchor, *([node.module] if node.module else [])])
    elif node.module and node.module.partition(".")[0] == PACKAGE:
        base = node.module
    elif script_folder is not None and f"{script_folder}.{node.module}" in SCRIPTS:
        base = f"{script_folder}.{node.module}"
    else:
        return []
    found = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in MODULES]
    return found or ([base] if base in MODULES else [])


def imports_of(path: Path) -> list[ast.Import | ast.ImportFrom]:
    return [n for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, (ast.Import, ast.ImportFrom))]


def import_graph() -> dict[str, set[str]]:
    """A package imports what its `__init__.pyi` lists too: `lazy_loader` imports those modules on first access."""
    return {
        name: {
            target
            for source in (path, path.with_suffix(".pyi"))
            if source.exists()
            for node in imports_of(source)
            for target in resolve(name, node)
        }
        - {name}
        for name, path in MODULES.items()
    }


GRAPH = import_graph()


def test_the_graph_sees_the_imports_it_must():
    v = VERIFIERS
    assert f"{v}.core.contract" in GRAPH[f"{v}.backends.ray"] and f"{v}.backends.local" in GRAPH[f"{v}.backends.ray"]
    assert {f"{v}.backends.local", f"{v}.backends.ray"} <= GRAPH[f"{v}.core.registry"]
    assert {f"{STANDALONE}.{m}" for m in ("judge_formats", "judge_proxy", "protocol")} <= GRAPH[f"{STANDALONE}.judge"]
    assert f"{STANDALONE}.protocol" in GRAPH[f"{v}.sandbox.process"]
    # inside functions, absolute and relative, across the two trees
    assert f"{PACKAGE}.evaluation.tasks" in GRAPH[f"{PACKAGE}.compare.held_out"]
    assert f"{PACKAGE}.data.datasets" in GRAPH[f"{PACKAGE}.data.task"]
    assert f"{v}.core.plugins" in GRAPH[f"{PACKAGE}.trainer.kl"]
    assert {f"{PACKAGE}.trainer.config", f"{PACKAGE}.trainer.trainer", f"{PACKAGE}.data.datasets"} <= GRAPH[PACKAGE]


def test_no_module_imports_one_that_imports_it_back():
    try:
        TopologicalSorter(GRAPH).prepare()
    except CycleError as exc:
        pytest.fail(f"import cycle: {' -> '.join(exc.args[1])}")


def test_layers_point_one_way():
    upward = [
        f"{name} ({LAYERS[layer_of(name)][0]}) imports {target} ({LAYERS[layer_of(target)][0]})"
        for name, targets in sorted(GRAPH.items())
        for target in sorted(targets)
        if layer_of(target) > layer_of(name)
    ]
    assert not upward, "\n".join(upward)


def test_the_package_root_holds_folders_and_three_modules():
    """Every module is in a folder that says what it is (trainer/, data/, models/, ...) but the package's public names
    (`__init__`), the command line's entry point (`cli`) and the user errors that every layer raises (`usage`)."""
    loose = {path.stem for path in TREES[PACKAGE].glob("*.py")}
    assert loose == {"__init__", "cli", "usage"}


def test_the_layers_name_the_modules_they_are_meant_for():
    assert layer_of(f"{VERIFIERS}.core.registry") == 0 and layer_of(f"{PACKAGE}.models.tiny_model") == 1
    assert (
        layer_of(f"{PACKAGE}.data.task")
        < layer_of(f"{PACKAGE}.evaluation.tasks")
        < layer_of(f"{PACKAGE}.compare.plan")
    )
    assert layer_of(f"{PACKAGE}.evaluation.core") < layer_of(f"{PACKAGE}.trainer.kl") == layer_of(f"{PACKAGE}.trainer")
    assert layer_of(PACKAGE) == layer_of(f"{PACKAGE}.trainer.trainer") < layer_of(f"{PACKAGE}.cli")


@pytest.mark.parametrize("script", sorted(SCRIPTS), ids=lambda name: name.rpartition(".")[2])
def test_a_script_imports_only_the_standard_library_and_its_neighbours(script):
    """code/standalone/ (the judge, the sandbox's harness and fork server) and the tool's cell run outside the
    package, the sandboxed ones with `-I -S`: nothing but the standard library is there for them."""
    folder = script.rpartition(".")[0]
    neighbours = {name.rpartition(".")[2] for name in SCRIPTS if name.rpartition(".")[0] == folder}
    found = [
        ((a.name if isinstance(n, ast.Import) else n.module or "").partition(".")[0], getattr(n, "level", 0))
        for n in imports_of(SCRIPTS[script])
        for a in (n.names if isinstance(n, ast.Import) else [n])
    ]
    assert not [name for name, level in found if level], "no package-relative imports"
    outside = {name for name, _ in found} - neighbours - set(sys.stdlib_module_names)
    assert not outside, f"{script} imports {outside}"


def test_the_package_takes_only_the_wire_format_and_the_uid_clean_up_from_the_scripts():
    """The package reads the standalone folder's path and shares its protocol and the reaper's way of emptying a uid;
    the cell is read as text, not run."""
    taken = {t for name, targets in GRAPH.items() if name not in SCRIPTS for t in targets}
    shared = {STANDALONE, f"{STANDALONE}.protocol", f"{STANDALONE}.reaper"}
    assert {t for t in taken if t in SCRIPTS or t == STANDALONE} == shared


PACKAGE_INITS = sorted(name for name, path in MODULES.items() if path.name == "__init__.py")


@pytest.mark.parametrize("package", PACKAGE_INITS)
def test_a_lazy_package_lists_what_it_exports(package):
    """Every name its `__init__.pyi` imports is in `__all__` and resolves (`package.Name`, `dir(package)`); a package
    without a stub imports no names of its own modules."""
    import importlib

    stub = MODULES[package].with_suffix(".pyi")
    if not stub.exists():
        return
    lazy = {alias.asname or alias.name for statement in imports_of(stub) for alias in statement.names}
    module = importlib.import_module(package)
    assert lazy <= set(module.__all__) and set(module.__all__) <= set(dir(module))
    assert set(module.__all__) - lazy <= set(vars(module)), "a name in __all__ that nothing defines"
    for name in sorted(lazy):
        assert getattr(module, name) is not None
    with pytest.raises(AttributeError, match="not_a_name"):
        module.not_a_name  # noqa: B018


def test_a_stub_imports_only_its_own_package_by_name():
    """`lazy_loader.attach_stub` reads `from .module import name` only: no alias (it would bind the name itself), no
    other level, no bare `import`."""
    for package in PACKAGE_INITS:
        stub = MODULES[package].with_suffix(".pyi")
        for statement in imports_of(stub) if stub.exists() else []:
            assert isinstance(statement, ast.ImportFrom) and statement.level == 1 and statement.module, package
            assert all(alias.asname is None for alias in statement.names), package


def test_a_lazy_name_that_is_also_a_submodule_stays_the_name_after_the_submodule_is_imported():
    """`trl_grpo_ext.memory.estimate` is a function and a module: importing the module (which sets the package's
    attribute to it) must not hide the function, in a fresh process where nothing else was imported first."""
    import subprocess
    import sys

    code = (
        "import importlib\n"
        "module = importlib.import_module('trl_grpo_ext.memory.estimate')\n"
        "from trl_grpo_ext.memory import estimate\n"
        "assert callable(estimate) and estimate is module.estimate, estimate\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
