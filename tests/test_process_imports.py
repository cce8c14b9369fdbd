"""Each kind of process imports only what it runs: each is started for real, the way the package starts it,
reports its `sys.modules`, and its modules of this package and its third-party libraries are checked against what
that kind of process is allowed.

- a math worker (`DeadlinePool` under `MathVerifier`, after a comparison that needs sympy): the math it runs, sympy
  and latex2sympy2; no verifier, registry or reward adapter, no sandbox, no code verifier, no Ray, no torch;
- the judge (`python -I -B judge.py`, a child of its zygote running the hidden test) and the candidate (the harness
  in a fresh sandbox, `python -I -B -S harness.py`): the standard library and their own scripts only;
- the fork server (`zygote.py` in a long-lived sandbox, where this machine forks candidates): what a child it forks
  finds loaded, which holds everything the server imported;
- the tool's cell (`cell.py` run by the harness in the sandbox, through `PythonSession`): the standard library only.

The judge reports through the hidden test, which writes its own `sys.modules` and the candidate's (the value a
candidate function returns) to a file; the cell prints them as the model's code would.
"""

from __future__ import annotations

import ast
import json

import pytest
from code_verifier_helpers import make_code_verifier
from process_modules import loaded_modules, package_modules, third_party

from trl_grpo_ext.tools import PythonSession, PythonToolConfig
from trl_grpo_ext.verifiers.code.standalone import STANDALONE_DIR
from trl_grpo_ext.verifiers.math.verifier import MathVerifier
from trl_grpo_ext.verifiers.sandbox import pool as pool_module
from trl_grpo_ext.verifiers.sandbox.fork import forks_candidates
from trl_grpo_ext.verifiers.sandbox.isolation import detect_isolation

V = "trl_grpo_ext.verifiers"
# The standalone scripts, which the judge and the sandbox load by bare name, and the candidate's own module.
SCRIPTS = {p.stem for p in STANDALONE_DIR.glob("*.py") if p.name != "__init__.py"} | {"candidate"}

MATH_WORKER_MODULES = {
    "trl_grpo_ext",  # packages on the way, lazy (`lazy_loader`)
    V,
    f"{V}.core",
    f"{V}.core.deadline_pool_worker",  # the worker's loop
    f"{V}.core.contract",  # the verifiers' shared constants (standard library only)
    f"{V}.math",
    f"{V}.math.worker",  # its entry points, unpickled
    *(
        f"{V}.math.{m}"  # the comparison and the warm-up (math/__init__.py lists the worker's side)
        for m in (
            "compare", "expressions", "normalize", "numbers", "parse", "points", "prediction", "ratios", "refute",
            "relations", "structure", "units", "warmup",
            "wrappers",  # ratios and wrappers: pieces of normalize, standard library only
        )
    ),
}  # fmt: skip
# gmpy2: where sympy finds it; lazy_loader: the packages on the way resolve their public names with it.
MATH_WORKER_LIBRARIES = {"sympy", "mpmath", "antlr4", "latex2sympy2_extended", "gmpy2", "lazy_loader"}
NEVER_IN_A_MATH_WORKER = {"torch", "trl", "transformers", "ray", "datasets"}


def check(kind: str, modules: list[str], allowed_modules: set[str] = frozenset(), allowed_libraries=frozenset()):
    assert len(modules) > 20, f"{kind}: not a report of sys.modules: {modules[:5]}"
    extra_modules = package_modules(modules) - set(allowed_modules)
    extra_libraries = third_party(modules, own=SCRIPTS) - set(allowed_libraries)
    assert not extra_modules, f"{kind} imports modules of the package it does not run: {sorted(extra_modules)}"
    assert not extra_libraries, f"{kind} imports libraries it does not use: {sorted(extra_libraries)}"


def test_a_math_worker_imports_the_math_it_runs_and_nothing_else():
    verifier = MathVerifier(n_workers=1)
    try:
        assert verifier.verify(r"\boxed{x+x}", "2x").reason == "correct"  # a worker compared it with sympy
        outcome = verifier._pool.map(loaded_modules, [()])[0]
        assert outcome.status == "ok", outcome
    finally:
        verifier.close()
    modules = outcome.value
    check("a math worker", modules, MATH_WORKER_MODULES, MATH_WORKER_LIBRARIES | {"process_modules"})  # the probe
    assert {"sympy", "latex2sympy2_extended", f"{V}.math.compare"} <= set(modules)  # it did run the comparison
    assert not NEVER_IN_A_MATH_WORKER & {m.partition(".")[0] for m in modules}


def judge_and_candidate(tmp_path) -> dict[str, list[str]]:
    """Run one candidate through the code verifier; the hidden test reports the judge's and the candidate's modules."""
    report = tmp_path / "report.json"
    tmp_path.chmod(0o777)  # the judge's child writes here
    candidate = "```python\nimport sys\n\ndef modules():\n    return sorted(sys.modules)\n```"
    test = (
        "import sys\nJUDGE = sorted(sys.modules)\nimport json\n"  # before the test imports anything of its own
        f"with open({str(report)!r}, 'w') as f:\n    json.dump({{'judge': JUDGE, 'candidate': modules()}}, f)\n"
        "assert isinstance(modules(), list)\n"
    )
    verifier = make_code_verifier(20.0, workers=1)
    try:
        result = verifier.verify(candidate, test)
    finally:
        verifier.close()
    assert (result.score, result.reason) == (1.0, "correct"), (result.reason, result.details)
    return json.loads(report.read_text())


def test_the_judge_and_a_fresh_candidate_import_the_standard_library_only(tmp_path, monkeypatch):
    monkeypatch.setattr(pool_module, "forks_candidates", lambda isolation: False)  # one sandbox per candidate
    reported = judge_and_candidate(tmp_path)
    check("the judge", reported["judge"])
    check("a candidate", reported["candidate"])
    assert {"judge_proxy", "protocol"} <= set(reported["judge"])  # judge.py is __main__, its neighbours by name
    assert "protocol" in reported["candidate"] and "harness" not in reported["candidate"]  # harness.py is __main__


def test_the_fork_server_imports_the_standard_library_only(tmp_path):
    if not forks_candidates(detect_isolation()):
        pytest.skip("this machine runs no fork server (it needs bubblewrap, as root)")
    modules = judge_and_candidate(tmp_path)["candidate"]
    check("the fork server (as its child finds it)", modules)
    assert "harness" in modules  # forked from the server (zygote.py, __main__), which imported the harness by name


def test_the_tool_cell_imports_the_standard_library_only():
    session = PythonSession(PythonToolConfig(timeout_s=20.0, max_output_chars=100_000))
    try:
        output = session.python("import sys\nprint(sorted(sys.modules))")
    finally:
        session._end_session()
    modules = ast.literal_eval(output.strip().splitlines()[0])
    check("the tool's cell", modules)
    assert "protocol" in modules  # the harness's, which runs the cell
