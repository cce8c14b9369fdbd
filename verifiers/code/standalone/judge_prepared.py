"""A job's test code made ready to run: parsed, checked, rewritten and compiled; once per test in the judge's zygote.

Preparing a test (parse, the checks of its format, the assert recorder and the import rewriter, the names it uses,
compile) is a third of a judge child's CPU on a trivial candidate, and the G completions of a GRPO group share one
test. The verifier sends each job's test fields (the dataset's code, never the candidate's: `TEST_KEY_FIELDS`) to
the zygote with the job's descriptors; once it has handed the job to its child, the zygote prepares that test
(`remember`) before it forks the next child, which finds it ready (`prepared_test`): the next candidates of that test
skip the work. Nothing is ever executed here: the test code runs only in a child, in a fresh namespace of its own.

The cache is filled only in the zygote, only from what the verifier sends; a child's copy of it is its own (a fork),
so nothing a child does, and no reply of a candidate, reaches the zygote's copy or another child's.

Standard library only, imported by the judge script: no package-relative imports.
"""

import ast
import gc
import json

from formats_asserts import AssertRecorder, unused_functions
from formats_imports import ImportRewriter, with_live_names
from formats_modules import count_tests, is_test_module, process_tool
from judge_namespace import names_used
from protocol import TEST_KEY_FIELDS

TEST_FILE = "<test>"
PROMPT_FILE = "<prompt>"
MAX_PREPARED = 64  # tests kept by the zygote (a GRPO batch's prompts), oldest out first
PREPARED: dict = {}  # test key -> Prepared: filled by the zygote alone
NOTES: dict = {}  # the verifier's note of a test -> its key, in the zygote


class Prepared:
    """One test, ready: `verdict` when it cannot run (`unusable`), else its `kind` ("asserts" or "tests"), its
    rewritten tree, `total` tests, the asserts' `lines`, the `names` it uses (as `names_used` gives them) and its code
    compiled as it runs against a candidate without module-level values (the common case). The zygote keeps no tree
    (ten times the code's memory, which each fork would copy the page tables of): a child that needs it, for a
    candidate's values or a test module that does not load, prepares the test again (`tree`)."""

    def __init__(self, verdict=None, kind=None, tree=None, total=0, lines=(), code=None, job=None, prompt=None):
        self.verdict, self.kind, self._tree, self.total, self.lines = verdict, kind, tree, total, lines
        self.names = names_used(tree) if tree is not None else (set(), set())
        self.code, self.job = code, job
        # HumanEval: the prompt's definitions besides the entry point (`prompt_definitions`), and the names they bind
        self.prompt_code, self.prompt_names = prompt if prompt is not None else (None, frozenset())

    def compact(self) -> "Prepared":
        self._tree = None
        return self

    def tree(self) -> ast.Module:
        if self._tree is None:
            self._tree = prepare(self.job)._tree
        return self._tree

    def code_for(self, values: set):
        """The code to run against a candidate whose module-level values are `values` (their reads made live); may
        raise what compile raises (code that parses and does not compile is the test's fault: the caller says so)."""
        if values or self.code is None:
            return compile(with_live_names(self.tree(), values), TEST_FILE, "exec")
        return self.code


def prepare(job: dict) -> Prepared:
    """`job`'s test, parsed and rewritten; as the judge ran it before it was prepared ahead (the same verdicts)."""
    try:
        tree = ast.parse(job["test"])
    except SyntaxError as exc:
        return Prepared({"unusable": f"the test code does not parse: {exc}"})
    if tool := process_tool(tree):
        return Prepared({"unusable": f"the test uses {tool}, which acts on the process running the test: the "
                         "candidate runs in another one, so its output, logs and warnings, or the patches, never "
                         "cross"})  # fmt: skip
    module = job.get("module") or "solution"
    check_name = job.get("check_name") or "check"
    defines_check = any(isinstance(n, ast.FunctionDef) and n.name == check_name for n in tree.body)
    if is_test_module(tree) and not (job.get("entry_point") and defines_check):  # BigCodeBench rows name one
        total = count_tests(tree)
        tree = ast.fix_missing_locations(ImportRewriter(module).visit(tree))
        return Prepared(kind="tests", tree=tree, total=total, code=compiled(tree), job=job)
    recorder = AssertRecorder(unused_functions(tree, (check_name,) if job.get("entry_point") else ()))
    tree = ImportRewriter(module).visit(tree)  # `from solution import f` in a script
    tree = ast.fix_missing_locations(recorder.visit(tree))
    if not recorder.lines:
        return Prepared({"unusable": "the test code has no assert statement"})
    lines, code = recorder.lines, compiled(tree)
    prompt = prompt_definitions(job.get("prompt"), job["entry_point"]) if job.get("entry_point") else None
    return Prepared(kind="asserts", tree=tree, total=len(lines), lines=lines, code=code, job=job, prompt=prompt)


PROMPT_STATEMENTS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom, ast.Assign)


def prompt_definitions(prompt, entry_point: str) -> tuple | None:
    """A HumanEval row's prompt (the dataset's code: the entry point's signature and docstring, with the helpers and
    imports it needs), as the test code must see it: its definitions besides the entry point, compiled, and the names
    they bind; None when there is no prompt, or one that is not Python (a dataset's prose). Plain execution runs
    `prompt + completion + test`, so a completion that redefines a helper the test calls (HumanEval/32's `poly`) would
    decide what the test checks with; here the test calls the dataset's helper, run in the judge like the test code,
    and only the entry point comes from the completion. Only definitions are taken: functions, classes, imports and
    assignments, never a statement that does something else."""
    if type(prompt) is not str:
        return None
    try:
        tree = ast.parse(prompt)
    except (SyntaxError, ValueError):
        return None
    kept = [statement for statement in tree.body if isinstance(statement, PROMPT_STATEMENTS)]
    kept = [statement for statement in kept if entry_point not in _bound_by(statement)]
    if not kept:
        return None
    names = frozenset(name for statement in kept for name in _bound_by(statement))
    return compile(ast.Module(kept, []), PROMPT_FILE, "exec"), names


def _bound_by(statement: ast.stmt) -> set:
    """The names a definition, an import or an assignment binds at top level."""
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {statement.name}
    if isinstance(statement, (ast.Import, ast.ImportFrom)):
        return {(alias.asname or alias.name).partition(".")[0] for alias in statement.names}
    return {node.id for target in statement.targets for node in ast.walk(target) if isinstance(node, ast.Name)}


def compiled(tree: ast.Module):
    """`tree` compiled, or None when it does not compile (`return` outside a function): the child then compiles it
    where the test code's own errors are judged, as before it was prepared ahead."""
    try:
        return compile(tree, TEST_FILE, "exec")
    except Exception:
        return None


def test_key(job: dict) -> tuple | None:
    """What a test's preparation depends on, from a job (None when it is not a test the cache holds)."""
    key = tuple(job.get(field) for field in TEST_KEY_FIELDS)
    plain = all(v is None or type(v) is str for v in key)
    return key if plain and type(key[0]) is str and job.get("format") != "calls" else None


def prepared_test(job: dict) -> Prepared:
    """`job`'s test as the zygote prepared it, or prepared now (this child's first candidate of that test)."""
    key = test_key(job)
    prepared = PREPARED.get(key) if key is not None else None
    return prepared if prepared is not None else prepare(job)


def remember(note: bytes) -> None:
    """In the zygote: prepare the test the verifier sent with a job (JSON of its TEST_KEY_FIELDS), for the children
    forked from now on. Only ever a lost speed-up when it fails: a child prepares what it does not find. A note seen
    before is known by its bytes: the zygote decodes nothing more for the next candidates of that test (each object it
    makes between two forks is a page it copies, since its last child still shares it)."""
    key = NOTES.get(note)
    if key is not None and key in PREPARED:
        return
    try:
        fields = json.loads(note)
        key = test_key(fields) if type(fields) is dict else None
        if key is None:
            return
        NOTES[note] = key
        if key not in PREPARED:
            PREPARED[key] = prepare({field: fields.get(field) for field in TEST_KEY_FIELDS}).compact()
    except Exception:  # what a child's own preparation of that test raises there, where it is judged
        return
    for kept in (PREPARED, NOTES):
        while len(kept) > MAX_PREPARED:
            del kept[next(iter(kept))]
    gc.collect()  # only what is not frozen yet: cheap, and no garbage cycle becomes permanent below
    gc.freeze()  # the new objects stay out of the children's collections, which would write to their pages
