"""Format dispatch of the judge: which test format a job has, and its verdict as plain data.

The test format decides what counts as one test: an assert statement (assert-style and HumanEval, formats_asserts.py),
a test function or method (pytest-style and unittest modules, formats_modules.py), or a call (call-based cases,
formats_calls.py).

Test code that cannot run is the reference's fault, not the candidate's, and gives an `unusable` verdict: it does not
parse, it imports a module this interpreter lacks, it uses a standard module it never imported, or it raises before
anything from the candidate reached it (`reference_fault`).
"""

import sys
import time

from formats_asserts import Tally
from formats_calls import judge_cases
from formats_modules import count_tests
from formats_pytest import make_stand_in
from formats_runner import run_test_module
from formats_units import (
    CandidateFailure,
    CandidateGone,
    CandidateRaised,
    JudgeFault,
    ReferenceFault,
    UnitTally,
    UnsupportedTest,
    describe,
)
from judge_namespace import CandidateModule, LiveValues, bind_candidate, candidate_values
from judge_prepared import TEST_FILE, Prepared, prepared_test
from judge_proxy import RemoteObject, Session


def reference_fault(exc: BaseException, session: "Session", as_module: frozenset = frozenset()) -> str | None:
    """Why `exc`, raised by the test code, is the test's fault rather than the candidate's; None if it may not be.

    A NameError for a standard module's name that the test uses as a module (`as_module`: it reads attributes of it,
    `math.sqrt(...)`) is the test's: it never imported it. A NameError for any other name is the candidate's: it did
    not define the function the test calls, even one named like a standard module (`statistics(xs)`).
    """
    if isinstance(exc, UnsupportedTest):
        return str(exc)
    if isinstance(exc, (CandidateFailure, CandidateRaised)):
        return None
    if isinstance(exc, ImportError):
        hint = ""
        if isinstance(exc, ModuleNotFoundError) and exc.name and exc.name not in sys.stdlib_module_names:
            hint = f" (if {exc.name!r} is the solution's module, pass solution_module={exc.name!r})"
        return f"the test code cannot import what it needs: {describe(exc)}{hint}"
    if isinstance(exc, NameError):
        name = getattr(exc, "name", None)
        if name in sys.stdlib_module_names and name in as_module:
            return f"the test code uses the module {name!r} without importing it"
        return None
    if not session.touched:  # nothing from the candidate has reached the test code yet
        return f"the test code raised {describe(exc)} before using the candidate"
    return None


def judge(job: dict, session: Session) -> dict:
    """Run the test of `job` against the candidate, in the format its reference has; the verdict as plain data."""
    prepared = None
    if job.get("format") == "calls":
        total = len(job.get("cases") or ())
    else:
        prepared = prepared_test(job)  # as the zygote prepared it for an earlier candidate of that test, or now
        if prepared.verdict is not None:
            return dict(prepared.verdict)
        total = prepared.total
    if job.get("stages"):  # the benchmark's readings (sandbox/stages.py): the test is ready to run
        session.prepared = (time.monotonic(), time.process_time())
    started = start_candidate(session)
    if "globals" not in started:
        return {"total": total, **started}
    if prepared is None:
        return judge_calls(job, session, started["globals"])
    if prepared.kind == "tests":
        return judge_test_module(job, session, prepared, started["globals"])
    return judge_asserts(job, session, prepared, started["globals"])


def start_candidate(session: Session) -> dict:
    """{"globals": the candidate's names and kinds} once its sandbox is set up and its code loaded; else a verdict."""
    try:
        setup = session.read_message()  # written by the harness before the candidate runs
    except CandidateGone as exc:
        return {"internal": f"the sandbox ended before running the candidate ({exc})"}
    if setup.get("setup") != "ok":
        return {"internal": f"the sandbox could not set up the candidate's limits: {str(setup.get('error'))[:300]}"}
    if type(setup.get("t")) is dict:  # the benchmark's readings (sandbox/stages.py), relayed with the verdict
        session.events = {**setup["t"], "judge_set_up": time.monotonic()}
    ready = session.read_message()
    if session.events is not None:
        session.events["judge_ready"] = time.monotonic()
    if ready.get("ready") is not True or type(ready.get("globals")) is not dict:
        return {"passed": 0, "error": f"candidate_error: {str(ready.get('error'))[:300]}"}
    return {"globals": ready["globals"]}


def judge_asserts(job: dict, session: Session, prepared: Prepared, kinds: dict) -> dict:
    """Assert-style test code, or HumanEval's `check(candidate)`: each assert statement counts."""
    referenced, as_module = prepared.names
    tally = Tally(prepared.lines, lambda exc: reference_fault(exc, session, as_module), lambda: session.gone)
    entry_point = job.get("entry_point")
    error = None
    try:
        namespace = bind_candidate(session, kinds, referenced, as_module)
        bind_solution_module(namespace, session, kinds, job.get("module") or "solution", (referenced, as_module))
        # run as `python -c code + tests` runs it: `if __name__ == "__main__":` blocks run
        namespace.update(__name__="__main__", __judge_assert__=tally)
        if prepared.prompt_code is not None and (unusable := run_prompt(prepared, namespace, session, entry_point)):
            return {"unusable": unusable}
        exec(prepared.code_for(candidate_values(kinds) - prepared.prompt_names), namespace)
        if entry_point:
            check = namespace.get(job.get("check_name") or "check")
            if not callable(check) or isinstance(check, RemoteObject):
                return {"unusable": "the test code names an entry point but defines no check(candidate) function"}
            if kinds.get(entry_point) != "callable":
                raise CandidateFailure(f"the completion defines no function {entry_point!r}")
            check(RemoteObject(session, {"name": entry_point}))
    except (UnsupportedTest, ReferenceFault) as exc:
        return {"unusable": str(exc)}
    except CandidateGone as exc:  # the remaining asserts did not run: they have not passed
        error = f"candidate_error: {exc}"
    except JudgeFault:
        raise
    except BaseException as exc:  # whatever ends a script run as plain Python: a KeyboardInterrupt too
        if ends_script(exc):  # the test code's own `sys.exit(0)`: the script ends there, as in plain execution
            return {"total": prepared.total, "passed": tally.passed(), "failures": tally.failures, "error": None}
        fault = reference_fault(exc, session, as_module)
        if fault:
            return {"unusable": fault}
        candidate = isinstance(exc, (CandidateFailure, CandidateRaised))
        error = f"candidate_error: {describe(exc)}" if candidate else describe(exc)
    return {"total": prepared.total, "passed": tally.passed(), "failures": tally.failures, "error": error}


def run_prompt(prepared: Prepared, namespace: dict, session: Session, entry_point: str) -> str | None:
    """Run a HumanEval prompt's definitions (judge_prepared.prompt_definitions) in the test's namespace, before the
    test code: the helpers the test calls (`poly`, `encode_cyclic`) are then the dataset's, never the completion's;
    the entry point stays the candidate's, for the helpers that call it. Why the reference is unusable, if they
    raise: the dataset's code, not the candidate's."""
    namespace.setdefault(entry_point, RemoteObject(session, {"name": entry_point}))
    try:
        exec(prepared.prompt_code, namespace)
    except Exception as exc:
        return f"the prompt's definitions raised {describe(exc)}"
    return None


def ends_script(exc: BaseException) -> bool:
    """A successful exit the test code itself asked for (`sys.exit()`, `sys.exit(0)`), not the candidate's."""
    return type(exc) is SystemExit and exc.code in (None, 0)


def judge_test_module(job: dict, session: Session, prepared: Prepared, kinds: dict) -> dict:
    """pytest-style and unittest test modules (formats_modules.py): each test function or method counts.

    The solution's module (`solution` unless the job says otherwise) is the candidate: `from solution import f` binds
    a proxy of its `f`, as `import solution` binds one of the module; `import pytest` binds the stand-in."""
    module = job.get("module") or "solution"
    referenced, as_module = prepared.names
    tally = UnitTally(lambda exc: reference_fault(exc, session, as_module), lambda: session.gone)
    try:
        namespace = bind_candidate(session, kinds, referenced, as_module)
        bind_solution_module(namespace, session, kinds, module, (referenced, as_module))
        exec(prepared.code_for(candidate_values(kinds)), namespace)
    except UnsupportedTest as exc:
        return {"unusable": str(exc)}
    except JudgeFault:
        raise
    except BaseException as exc:  # pytest fails every test of a module that does not load
        fault = None if isinstance(exc, CandidateGone) else reference_fault(exc, session, as_module)
        if fault:
            return {"unusable": fault}
        return {"total": count_tests(prepared.tree()), "passed": 0, "error": f"candidate_error: {describe(exc)}"}
    try:
        run_test_module(namespace, tally, TEST_FILE)
    except UnsupportedTest as exc:
        return {"unusable": str(exc)}
    except KeyboardInterrupt as exc:  # unittest lets the candidate's through: it ends the run, as it ends unittest's
        tally.interrupt(exc)
        tally.note("the test run", exc)
    return tally.verdict()


def bind_solution_module(namespace: dict, session: Session, kinds: dict, module: str, used: tuple) -> None:
    """What the imports rewritten by formats_imports.py call: the solution's module is the candidate, `pytest` the
    stand-in. `used`: the names the test uses, and those it uses as modules (`names_used`)."""
    referenced, as_module = used
    solution = CandidateModule(session, kinds, module, as_module)
    namespace.update(
        __judge_import__=solution.__getattr__, __judge_module__=lambda: solution,
        __judge_star__=lambda names: solution.star(names, referenced),
        __judge_unsupported__=CandidateModule.unsupported, __judge_pytest__=make_stand_in(),
        __judge_value__=LiveValues(session),
    )  # fmt: skip


def judge_calls(job: dict, session: Session, kinds: dict) -> dict:
    """Call-based cases (formats_calls.py); each case counts."""
    tally = UnitTally(lambda exc: reference_fault(exc, session), lambda: session.gone)
    return judge_cases(job, kinds, lambda name: RemoteObject(session, {"name": name}), tally)
