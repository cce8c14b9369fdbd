"""`compat.replaced_attribute`, the plain helper the trainer swaps a TRL name with, and the rule it serves: product
code does not use test tooling (`unittest.mock`)."""

from __future__ import annotations

import ast
import types

import pytest
from package_uses import REPO, source_files

from trl_grpo_ext.compat import replaced_attribute


def test_the_value_is_replaced_inside_and_restored_after():
    module = types.SimpleNamespace(function="stock")
    with replaced_attribute(module, "function", "ours"):
        assert module.function == "ours"
    assert module.function == "stock"


def test_the_value_is_restored_when_the_block_raises():
    module = types.SimpleNamespace(function="stock")
    with pytest.raises(KeyError), replaced_attribute(module, "function", "ours"):
        raise KeyError("inside")
    assert module.function == "stock"


def test_an_attribute_that_was_not_there_is_removed_and_an_inherited_one_shows_again():
    class Base:
        hook = "base"

    class Child(Base):
        pass

    with replaced_attribute(Child, "hook", "child"), replaced_attribute(Child, "extra", 1):
        assert (Child.hook, Child.extra, Base.hook) == ("child", 1, "base")
    assert Child.hook == "base" and "hook" not in vars(Child) and not hasattr(Child, "extra")


def imports_of(path) -> set[str]:
    modules = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            modules |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules |= {node.module} | {f"{node.module}.{alias.name}" for alias in node.names}
    return modules


def test_no_product_module_imports_unittest_mock():
    offenders = [
        str(path.relative_to(REPO))
        for path in source_files()
        if any(m == "mock" or m.startswith(("unittest.mock", "mock.")) for m in imports_of(path))
    ]
    assert offenders == []
    assert "unittest.mock" in imports_of(REPO / "tests" / "support" / "stock_trl.py")  # the scan sees imports
