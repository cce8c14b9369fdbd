"""Judge side of test modules: the test code's imports of the solution's module and of pytest, rewritten.

The solution's module is the candidate, reachable only through proxies; `pytest` is the stand-in of
formats_pytest.py. The rewritten names are bound by judge_formats.py (`__judge_import__`, `__judge_module__`,
`__judge_star__`, `__judge_unsupported__`, `__judge_pytest__`).

Standard library only, imported by the judge script: no package-relative imports.
"""

from __future__ import annotations

import ast


class ImportRewriter(ast.NodeTransformer):
    """`from solution import f as g` -> `g = __judge_import__('f')`; `import solution as s` -> `s =
    __judge_module__()`; `from solution import *` -> `__judge_star__(globals())`; `import pytest` (and `from pytest
    import raises`) bind the stand-in. Works at any depth (imports inside test functions too). A top-level
    `unittest.main()` outside the `__main__` guard is dropped: the judge runs the tests itself."""

    def __init__(self, module: str):
        self.module = module

    def visit_Call(self, node):
        if _runs_tests(node):  # under `if __name__ == "__main__":` too: assert-style scripts run that block
            return ast.copy_location(ast.Constant(0), node)  # `sys.exit(unittest.main())` exits with 0
        self.generic_visit(node)
        return node

    def visit_Import(self, node):
        kept, assigns = [], []
        for alias in node.names:
            top = alias.name.partition(".")[0]
            bound = alias.asname or top
            if alias.name == self.module:
                assigns.append(_assign(bound, _call("__judge_module__")))
            elif alias.name == "pytest":
                assigns.append(_assign(bound, ast.Name("__judge_pytest__", ast.Load())))
            elif top == self.module:
                assigns.append(_assign(bound, _call("__judge_unsupported__", ast.Constant(alias.name))))
            else:
                kept.append(alias)
        return _replace(node, ast.Import(kept) if kept else None, assigns)

    def visit_ImportFrom(self, node):
        if node.level or node.module not in (self.module, "pytest"):
            if node.level == 0 and (node.module or "").partition(".")[0] == self.module:
                return ast.copy_location(ast.Expr(_call("__judge_unsupported__", ast.Constant(node.module))), node)
            return node
        if node.module == "pytest":
            source = lambda name: ast.Attribute(ast.Name("__judge_pytest__", ast.Load()), name, ast.Load())  # noqa: E731
        else:
            source = lambda name: _call("__judge_import__", ast.Constant(name))  # noqa: E731
        if any(alias.name == "*" for alias in node.names):
            if node.module == "pytest":
                return node
            star = _call("__judge_star__", _call("globals"))
            return ast.copy_location(ast.Expr(star), node)
        assigns = [_assign(alias.asname or alias.name, source(alias.name)) for alias in node.names]
        return _replace(node, None, assigns)


class LiveNames(ast.NodeTransformer):
    """Reads of the candidate's module-level values become `__judge_value__(name)`, fetched again after each call to
    the candidate (`fib(30); assert memo[30] == 832040` reads the memo as the calls left it). `live`: test name ->
    candidate name, for names the test only reads (see `live_names`)."""

    def __init__(self, live: dict):
        self.live = live

    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Load) and node.id in self.live:  # the new nodes get the name's location
            return ast.fix_missing_locations(
                ast.copy_location(_call("__judge_value__", ast.Constant(self.live[node.id])), node)
            )
        return node


def with_live_names(tree: ast.Module, values: set) -> ast.Module:
    """`tree` with the reads of the candidate's values `values` made live (`LiveNames`); as it is when the candidate
    has no module-level values, the common case, which spares the two walks of the tree."""
    return LiveNames(live_names(tree, values)).visit(tree) if values else tree


def live_names(tree: ast.Module, values: set) -> dict:
    """Test name -> candidate name for the candidate's values (`values`) that the test reads and never binds itself:
    used as they are (as when tests are appended to the code), or bound only by `from solution import memo [as m]`."""
    imported, imports, bound = {}, set(), set()
    for node in ast.walk(tree):  # breadth first: an import's assignment comes before its target name
        call = node.value if isinstance(node, ast.Assign) else None
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "__judge_import__":
            target, (source,) = node.targets[0], call.args
            imports.add(id(target))
            imported[target.id] = source.value if imported.get(target.id, source.value) == source.value else None
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load) and id(node) not in imports:
            bound.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            bound.update(node.names)
        elif isinstance(node, ast.alias):
            bound.add((node.asname or node.name).partition(".")[0])
        elif isinstance(node, (ast.arg, ast.ExceptHandler, ast.MatchAs, ast.MatchStar)):
            bound.add(getattr(node, "arg", None) or node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            bound.add(node.rest)
    live = {name: source for name, source in imported.items() if source in values}
    live.update({name: name for name in values if name not in imported})
    return {name: source for name, source in live.items() if name not in bound}


def _runs_tests(call: ast.Call) -> bool:
    """A call of `unittest.main(...)` or `pytest.main(...)`: here the judge runs the tests."""
    function = call.func
    return (
        isinstance(function, ast.Attribute)
        and function.attr == "main"
        and isinstance(function.value, ast.Name)
        and function.value.id in ("unittest", "pytest")
    )


def _call(name: str, *args) -> ast.Call:
    return ast.Call(ast.Name(name, ast.Load()), list(args), [])


def _assign(name: str, value) -> ast.Assign:
    return ast.Assign([ast.Name(name, ast.Store())], value)


def _replace(node, kept, assigns):
    nodes = ([kept] if kept is not None else []) + assigns
    for new in nodes:
        ast.copy_location(new, node)
    return nodes or ast.copy_location(ast.Pass(), node)
