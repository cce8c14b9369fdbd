"""The verifiers' modules import one another without a cycle, including imports inside functions.

A cycle (base.py and ray_backend.py once imported each other) makes the order of imports matter and hides which
module depends on which. Package-relative imports, absolute `trl_grpo_ext.verifiers...` ones and the bare-name
imports between the scripts of code/standalone/ are all followed.
"""

from __future__ import annotations

import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2] / "verifiers"
PACKAGE = "trl_grpo_ext.verifiers"
STANDALONE = "code.standalone"


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in ROOT.rglob("*.py")}


def resolve(importer: str, node: ast.ImportFrom | ast.Import) -> list[str]:
    """The modules of this package that an import statement names (a name imported from a package may be a module)."""
    is_package = MODULES[importer].name == "__init__.py"
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
        bases = [n.removeprefix(PACKAGE + ".") for n in names if n.startswith(PACKAGE + ".")]
        if importer.startswith(STANDALONE + "."):
            bases += [f"{STANDALONE}.{n}" for n in names if f"{STANDALONE}.{n}" in MODULES]
        return [b for b in bases if b in MODULES]
    if node.level:
        anchor = importer.split(".") if is_package else importer.split(".")[:-1]
        anchor = anchor[: len(anchor) - node.level + 1]
        base = ".".join([*anchor, *([node.module] if node.module else [])]).strip(".")
    elif node.module and node.module.startswith(PACKAGE + "."):
        base = node.module.removeprefix(PACKAGE + ".")
    elif importer.startswith(STANDALONE + ".") and f"{STANDALONE}.{node.module}" in MODULES:
        base = f"{STANDALONE}.{node.module}"
    else:
        return []
    found = [f"{base}.{a.name}".strip(".") for a in node.names if f"{base}.{a.name}".strip(".") in MODULES]
    return found or ([base] if base in MODULES else [])


def import_graph() -> dict[str, set[str]]:
    graph = {}
    for name, path in MODULES.items():
        tree = ast.parse(path.read_text())
        nodes = [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
        graph[name] = {target for node in nodes for target in resolve(name, node)} - {name}
    return graph


def test_the_graph_sees_the_imports_it_must():
    graph = import_graph()
    assert "core.contract" in graph["backends.ray"] and "backends.local" in graph["backends.ray"]
    assert {"backends.local", "backends.ray"} <= graph["core.registry"]
    assert {"judge_formats", "judge_proxy", "protocol"} <= {
        m.rsplit(".", 1)[-1] for m in graph["code.standalone.judge"]
    }
    assert "code.standalone.protocol" in graph["sandbox.process"]


def test_no_module_imports_one_that_imports_it_back():
    graph = import_graph()
    graph.pop("", None)  # the package's own __init__ imports the public API; nothing imports it back by name
    try:
        TopologicalSorter(graph).prepare()
    except CycleError as exc:
        pytest.fail(f"import cycle: {' -> '.join(exc.args[1])}")


def test_the_package_takes_only_the_wire_format_from_the_standalone_scripts():
    """code/standalone/ runs outside the package; the package reads its folder's path and shares its protocol only."""
    graph = import_graph()
    taken = {t for name, targets in graph.items() if not name.startswith(STANDALONE) for t in targets}
    assert {t for t in taken if t.startswith(STANDALONE)} == {STANDALONE, f"{STANDALONE}.protocol"}
