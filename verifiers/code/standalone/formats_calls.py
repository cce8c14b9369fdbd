"""Judge side of call-based tests (APPS, TACO, LiveCodeBench "functional" rows): call the candidate's function with
each case's arguments and compare its return value with the expected one, the way the dataset's own grader does.

Each case is one unit (formats_units.py). Two comparisons, chosen by code/formats.py from the row's encoding:

- `apps` (rows whose inputs are argument lists, as APPS and TACO store them), after hendrycks/apps `testing_util.py`:
  a tuple result counts as a list; it passes if it equals the expected value, or the expected value's first element
  when that is a non-empty list (APPS wraps many single outputs in a list: `"outputs": [[true], [false]]`), or, for a
  list of tuples, if its tuples as lists equal that first element. As there, dict keys that JSON turned into strings
  become ints again when they all can, in the first argument and in the expected value (`_apps_keys`).
- `exact` (rows whose inputs are LiveCodeBench's newline-separated JSON text), after LiveCodeBench's
  `grade_call_based`: a tuple result counts as a list, and it must equal the expected value.

The comparisons run here, on plain data decoded by the judge: a candidate object that is not data never equals
anything. Standard library only, imported by the judge script: no package-relative imports.
"""

from __future__ import annotations

from formats_units import CandidateFailure, JudgeFault, UnitTally, describe
from protocol import ProtocolError, decode


def judge_cases(job: dict, kinds: dict, remote, tally: UnitTally) -> dict:
    """The verdict on `job`'s cases. `kinds`: the candidate's names; `remote(name)`: a proxy of one of them. The
    function is `fn_name`, or the method of that name of one `Solution()` made for the row when the completion
    defines `class Solution`, as the APPS and LiveCodeBench graders do."""
    try:
        cases = decode(job["cases"])
    except (ProtocolError, KeyError) as exc:
        return {"unusable": f"malformed call-based cases: {exc}"}
    name = str(job.get("fn_name"))
    found = []

    def method():
        if not found:
            try:
                if kinds.get("Solution") == "callable":
                    found.append(getattr(remote("Solution")(), name))
                elif kinds.get(name) == "callable":
                    found.append(remote(name))
                else:
                    raise CandidateFailure(f"the completion defines no function {name!r} and no class Solution")
            except JudgeFault:
                raise
            except BaseException as exc:  # the candidate's, whatever its class: every case fails with it
                found.append(exc)
        if isinstance(found[0], BaseException):
            raise found[0]
        return found[0]

    run_calls(cases, method, job.get("compare"), tally)
    verdict = tally.verdict()
    if found and isinstance(found[0], BaseException) and "unusable" not in verdict:
        verdict["error"] = f"candidate_error: {describe(found[0])}"
    return verdict


def run_calls(cases: list, method, compare: str, tally: UnitTally) -> None:
    """`cases`: [[args, expected], ...]; `method()`: the candidate's callable (raises, every time, if there is none)."""
    match = apps_match if compare == "apps" else exact_match
    for index, case in enumerate(cases):
        args, expected = case
        if compare == "apps":
            args, expected = _apps_keys(args, expected)
        tally.run(f"case {index}", lambda args=args, expected=expected: _check(method(), args, expected, match))


def _check(function, args: list, expected, match) -> None:
    output = function(*args)
    if not match(output, expected):
        raise AssertionError(f"returned {_short(output)}, expected {_short(expected)}")


def _short(value) -> str:
    try:
        text = repr(value)
    except ValueError:  # an int too long to print
        text = f"<{type(value).__name__}>"
    return text if len(text) <= 80 else text[:77] + "..."


def exact_match(output, expected) -> bool:
    """LiveCodeBench: `list(output) if tuple`, then ==."""
    try:
        return bool((list(output) if type(output) is tuple else output) == expected)
    except (TypeError, CandidateFailure):  # a candidate object: it refuses to be compared
        return False
    except Exception as exc:  # comparing plain data raises nothing else but by a bug of the judge's
        raise JudgeFault(f"comparing a call's result: {describe(exc)}") from exc


def apps_match(output, expected) -> bool:
    """APPS and TACO's call-based check (see the module docstring)."""
    if type(output) is tuple:
        output = list(output)
    wrapped = type(expected) is list and len(expected) > 0
    try:
        if output == expected or (wrapped and output == expected[0]):
            return True
        tuples = type(output) is list and len(output) > 0 and type(output[0]) is tuple
        return wrapped and tuples and [list(x) for x in output] == expected[0]
    except (TypeError, CandidateFailure):  # a candidate object: it refuses to be compared
        return False
    except Exception as exc:  # comparing plain data raises nothing else but by a bug of the judge's
        raise JudgeFault(f"comparing a call's result: {describe(exc)}") from exc


def _int_keys(value: dict) -> dict | None:
    """The dict with int keys, as APPS's `{int(k): v for k, v in d.items()}`; None when a key does not convert (APPS's
    `try` then leaves the value as it is)."""
    try:
        return {int(k): v for k, v in value.items()}
    except (TypeError, ValueError, OverflowError):
        return None


def _apps_keys(args: list, expected):
    """APPS undoes JSON's string keys where every key converts to an int: in a dict first argument, and in a dict
    expected value (which it also wraps in a list). Two deviations: APPS keeps only that first argument, and cuts a
    list of dicts whose first dict converts to that first dict alone (a wrong answer then passes and a correct one
    fails); here the other arguments stay, and every dict of such a list gets int keys where all its keys convert.
    A list of dicts whose keys are not numbers is compared as it is, as in APPS."""
    if args and type(args[0]) is dict and (converted := _int_keys(args[0])) is not None:
        args = [converted, *args[1:]]
    if type(expected) is dict and (converted := _int_keys(expected)) is not None:
        expected = [converted]
    elif type(expected) is list and expected and type(expected[0]) is dict and _int_keys(expected[0]) is not None:
        expected = [_int_keys(d) if type(d) is dict and _int_keys(d) is not None else d for d in expected]
    return args, expected
