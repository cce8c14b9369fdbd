"""Judge side of test modules: which test code is a module of pytest-style tests or unittest TestCases, and how
many tests it holds.

A unit is a test function (each parametrized case counts once) or a test method of a pytest class or of a
`unittest.TestCase`. Once judge.py has executed the module (its imports rewritten by formats_imports.py), its units
are run by formats_runner.py.

Standard library only, imported by the judge script: no package-relative imports.
"""

from __future__ import annotations

import ast

JUDGE_MODULE = "__judge__"  # the test code's `__name__`: what it defines is told apart from what it imported


def _is_test_class(node: ast.ClassDef) -> bool:
    bases = [b.attr if isinstance(b, ast.Attribute) else getattr(b, "id", "") for b in node.bases]
    return any(name.endswith("TestCase") for name in bases) or (
        node.name.startswith("Test")
        and not any(isinstance(n, ast.FunctionDef) and n.name == "__init__" for n in node.body)
    )


def is_test_module(tree: ast.Module) -> bool:
    """Test functions (`def test*`) or test classes (`class Test*`, `unittest.TestCase` subclasses) at top level, and
    no module-level `assert` or call of those tests: a script that runs its own tests stays an assert-style test."""
    tests = {
        node.name
        for node in tree.body
        if (isinstance(node, ast.FunctionDef) and node.name.startswith("test"))
        or (isinstance(node, ast.ClassDef) and _is_test_class(node))
    }
    if not tests:
        return False
    for node in tree.body:
        if isinstance(node, ast.Assert):
            return False
        if isinstance(node, ast.If) and _is_main_guard(node.test):
            continue
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            calls = (n.func for n in ast.walk(node) if isinstance(n, ast.Call))
            if any(isinstance(f, ast.Name) and f.id in tests for f in calls):
                return False
    return True


def _is_main_guard(test: ast.expr) -> bool:
    return isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "__name__"


# Tools that act on the process running the test: the judge's, while the candidate runs in another one, so the test
# would see none of the candidate's output, logs or warnings, and the candidate none of the patches.
PROCESS_TOOLS = {
    "patch": "unittest.mock.patch",
    "assertLogs": "assertLogs",
    "assertNoLogs": "assertNoLogs",
    "assertWarns": "assertWarns",
    "assertWarnsRegex": "assertWarnsRegex",
    "redirect_stdout": "contextlib.redirect_stdout",
    "redirect_stderr": "contextlib.redirect_stderr",
}


def process_tool(tree: ast.Module) -> str | None:
    """The first tool in PROCESS_TOOLS the test uses (`patch` only when it comes from unittest.mock), or None."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in ("unittest.mock", "mock", "contextlib"):
            for alias in node.names:
                if alias.name in PROCESS_TOOLS:
                    return PROCESS_TOOLS[alias.name]
        if isinstance(node, ast.Attribute) and node.attr in PROCESS_TOOLS:
            owner = node.value
            owner_name = owner.id if isinstance(owner, ast.Name) else getattr(owner, "attr", "")
            if node.attr != "patch" or owner_name == "mock":
                return PROCESS_TOOLS[node.attr]
    return None


def count_tests(tree: ast.Module) -> int:
    """Test functions and methods written in the module (parametrized cases count once): the total when the module
    itself fails to load, as pytest then fails every test it holds."""
    count = 0
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test"):
            count += 1
        elif isinstance(node, ast.ClassDef) and _is_test_class(node):
            count += sum(isinstance(n, ast.FunctionDef) and n.name.startswith("test") for n in node.body)
    return max(count, 1)
