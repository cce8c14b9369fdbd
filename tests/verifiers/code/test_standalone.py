"""The scripts of code/standalone/ keep their folder's rule: standard library and neighbours only, loaded by bare
name, and running them writes nothing into the folder (it is the installed package's own)."""

from __future__ import annotations

import ast
import shutil
import sys

import pytest
from code_verifier_helpers import make_code_verifier

from trl_grpo_ext.verifiers.code import runner
from trl_grpo_ext.verifiers.code.standalone import STANDALONE_DIR
from trl_grpo_ext.verifiers.sandbox import isolation, pool

SCRIPTS = sorted(p for p in STANDALONE_DIR.glob("*.py") if p.name != "__init__.py")
NEIGHBOURS = {p.stem for p in SCRIPTS}


def imported_modules(tree: ast.Module) -> list[tuple[str, int]]:
    """(top-level name, relative level) of every import, at any depth."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name.partition(".")[0], 0) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            found.append(((node.module or "").partition(".")[0], node.level))
    return found


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_a_script_imports_only_the_standard_library_and_its_neighbours(script):
    imports = imported_modules(ast.parse(script.read_text()))
    assert imports and not [name for name, level in imports if level], "no package-relative imports"
    outside = {name for name, _ in imports} - NEIGHBOURS - set(sys.stdlib_module_names)
    assert not outside, f"{script.name} imports {outside}"


def test_the_sandbox_files_import_only_each_other():
    for name in isolation.SANDBOX_FILES:
        imports = {n for n, _ in imported_modules(ast.parse((STANDALONE_DIR / name).read_text()))}
        assert not imports & (NEIGHBOURS - {f.removesuffix(".py") for f in isolation.SANDBOX_FILES}), name


def test_the_judge_and_the_sandbox_write_no_bytecode_next_to_their_scripts(tmp_path, monkeypatch):
    """The scripts run from a copy of the folder, which must hold the same files afterwards (no __pycache__)."""
    copy = tmp_path / "standalone"
    shutil.copytree(STANDALONE_DIR, copy, ignore=shutil.ignore_patterns("__pycache__"))
    copy.chmod(0o755)
    tmp_path.chmod(0o755)
    before = sorted(p.relative_to(copy) for p in copy.rglob("*"))
    for module in (runner, pool, isolation):
        monkeypatch.setattr(module, "STANDALONE_DIR", copy)
    verifier = make_code_verifier(10, workers=1)
    try:
        add = "```python\ndef add(a, b):\n    return a + b\n```"
        module_test = "import pytest\nfrom solution import add\n\n@pytest.mark.parametrize('a', [1, 2])\ndef test_add(a):\n    assert add(a, 1) == a + 1\n"
        for tests in ("assert add(1, 2) == 3", module_test, {"fn_name": "add", "inputs": [[1, 2]], "outputs": [3]}):
            assert verifier.verify(add, tests).reason == "correct"
        assert (
            verifier.verify("```python\nprint(int(input()) + 1)\n```", [{"input": "1\n", "output": "2\n"}]).score
            == 1.0
        )
    finally:
        verifier.close()
    assert sorted(p.relative_to(copy) for p in copy.rglob("*")) == before
