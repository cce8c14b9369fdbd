"""How a dataset's test column becomes a job for the `code` verifier: each test format, detected from the reference.

    "assert f(1) == 2" / ["assert ...", ...] / MBPP row            functions: assert statements (judge decides)
    test code with `def test_*` or `class T(unittest.TestCase)`       functions: test module (judge decides)
    {"test": "def check(candidate): ...", "entry_point": "f"}        functions: HumanEval
    {"fn_name": "f", "inputs": [[args], ...], "outputs": [...]}      calls: APPS / TACO
    the same with each input a string of JSON lines                   calls: LiveCodeBench "functional"
    [{"input": "[1]\n2", "output": "3", "testtype": "functional",      calls: LiveCodeBench test cases, the function's
      "metadata": {"func_name": "f"}}, ...]                                  name in each case's metadata
    [{"input": ..., "output": ...}] / {"inputs": [...], "outputs": [...]}  stdio (a Python or C++ program)
    {"input": [...], "output": [...]} (CodeContests) / {"tests": [{"input", "output"}, ...]}  stdio, and a dict may add
      "time_limit" (seconds), "memory_limit" (MiB), "output_limit" (MiB), "checker" (C++ source, testlib's
      contract) and "cpp_standard" ("c++20"): `StdioCases.options`
    any of these dicts or lists as the JSON string datasets store (APPS `input_output`, LiveCodeBench
    `public_test_cases`)

Whether test code is assert statements or a test module is decided by the judge, which parses it anyway
(code/standalone/formats_modules.is_test_module). Call-based cases travel to the judge in the protocol's exact encoding, so
tuples, sets and integer dict keys of a reference given as Python data arrive as they are.
"""

from __future__ import annotations

import json
from typing import Any

from ..core.contract import QUOTED_CHARS
from .standalone.protocol import ProtocolError, encode

FUNCTION_NAME_KEYS = ("fn_name", "func_name")


class StdioCases(list):
    """Stdin/stdout cases, [(input, output), ...], with the row's own rules in `options`: `time_limit` (seconds per
    case, for compiled programs) and `memory_limit` (MiB), each run at most at the verifier's own (`timeout_s`,
    `memory_mb`: native.CaseLimits.for_row), `output_limit` (MiB a program may print), `checker` (a C++
    source, testlib's contract), `cpp_standard` (g++'s `-std=` for C++ programs, e.g. "c++20"), `tokens` (True:
    outputs compared token by token, whatever the program's language)."""

    options: dict

    def __init__(self, cases, options: dict | None = None):
        super().__init__(cases)
        self.options = options or {}


STDIO_CASE_KEYS = ("tests", "official_tests", "test_cases")
STDIO_OPTION_KEYS = ("time_limit", "memory_limit", "output_limit", "checker", "cpp_standard")
# The C++ standards a row may name (g++'s -std= values); whether this g++ supports one is checked when it compiles.
CPP_STANDARDS = tuple(f"{dialect}++{year}" for dialect in ("c", "gnu") for year in ("11", "14", "17", "20", "23"))
MAX_OUTPUT_LIMIT_MB = 64  # the most a row may let a program print: the trainer reads it


def _stdio_options(row: dict, tokens: bool) -> dict:
    """A row's time limit (seconds), memory limit (MiB) and checker (C++ source), checked; absent ones left out.
    `tokens`: the row is of a Codeforces shape (CodeContests' `input`/`output` lists, `tests`, `official_tests`,
    `test_cases`), whose outputs any program's are compared with as testlib's `wcmp` compares (code/outputs.py)."""
    options = {"tokens": True} if tokens else {}
    for key, most in (("time_limit", 1e6), ("memory_limit", 1e6), ("output_limit", MAX_OUTPUT_LIMIT_MB)):
        value = row.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= most:
            raise ValueError(
                f"a stdio row's {key} must be a positive number (at most {most:g}), got {value!r:.{QUOTED_CHARS}}"
            )
        options[key] = float(value)
    standard = row.get("cpp_standard")
    if standard is not None:
        if not isinstance(standard, str) or standard.lower() not in CPP_STANDARDS:
            raise ValueError(
                f"a stdio row's cpp_standard must be one of {', '.join(CPP_STANDARDS)}, got {standard!r:.{QUOTED_CHARS}}"
            )
        options["cpp_standard"] = standard.lower()
    checker = row.get("checker")
    if checker is not None:
        if not _text(checker) or not checker.strip():
            raise ValueError("a stdio row's checker must be the C++ source of a checker program (testlib's contract)")
        options["checker"] = checker
    return options


def parse_reference(reference: Any) -> tuple[str, Any]:
    """("functions", job) or ("stdio", [(input, output), ...]); ValueError when the reference is unusable.

    A job is {"test", "entry_point"} for test code (the verifier adds the solution's module name), or
    {"format": "calls", "fn_name", "cases", "compare"} for call-based cases.
    """
    if isinstance(reference, str):
        stored = _json_value(reference)
        if stored is not None:
            return parse_reference(stored)
        return "functions", {"test": reference, "entry_point": None}
    if isinstance(reference, list) and reference and all(isinstance(t, str) for t in reference):
        return "functions", {"test": "\n".join(reference), "entry_point": None}
    if isinstance(reference, list) and reference and all(isinstance(t, dict) for t in reference):
        if any(t.get("testtype") == "functional" for t in reference):
            return "functions", _livecodebench_cases(reference)
        return "stdio", StdioCases([_case(t.get("input"), t.get("output")) for t in reference])
    if isinstance(reference, dict):
        name = next((reference[k] for k in FUNCTION_NAME_KEYS if reference.get(k)), None)
        plural = "inputs" in reference and "outputs" in reference
        if plural or (isinstance(reference.get("input"), list) and isinstance(reference.get("output"), list)):
            # CodeContests stores its cases as {"input": [...], "output": [...]}
            inputs, outputs = (
                (reference["inputs"], reference["outputs"]) if plural else (reference["input"], reference["output"])
            )
            if isinstance(inputs, list) and isinstance(outputs, list) and len(inputs) == len(outputs) and inputs:
                if name is not None:
                    return "functions", _call_cases(name, inputs, outputs)
                cases = [_case(i, o) for i, o in zip(inputs, outputs)]
                return "stdio", StdioCases(cases, _stdio_options(reference, tokens=not plural))
        cases = next((reference[k] for k in STDIO_CASE_KEYS if isinstance(reference.get(k), list)), None)
        if name is None and cases and all(isinstance(t, dict) for t in cases):  # {"tests": [...], "time_limit": ...}
            stdio = [_case(t.get("input"), t.get("output")) for t in cases]
            return "stdio", StdioCases(stdio, _stdio_options(reference, tokens=True))
        if isinstance(reference.get("test"), str):
            entry = reference.get("entry_point")
            entry = entry if isinstance(entry, str) else None
            job = {"test": reference["test"], "entry_point": entry}
            if entry is not None and isinstance(reference.get("prompt"), str):  # a HumanEval row: its helpers
                job["prompt"] = reference["prompt"]
            return "functions", job
        if isinstance(reference.get("test_list"), list):
            parts = [
                *(reference.get("test_imports") or []),
                reference.get("test_setup_code") or "",
                *reference["test_list"],
            ]
            if all(isinstance(p, str) for p in parts):
                return "functions", {"test": "\n".join(parts), "entry_point": None}
    raise ValueError(
        f"unusable code reference of type {type(reference).__name__}: expected test code (str), a list of asserts, "
        "{'test': ..., 'entry_point': ...}, call-based cases {'fn_name': ..., 'inputs': [[args], ...], 'outputs': "
        "[...]}, or stdin/stdout cases [{'input': ..., 'output': ...}]"
    )


def _json_value(text: str):
    """The dict or list a JSON-encoded test column holds; None for anything else (test code, mostly)."""
    stripped = text.lstrip()
    if not stripped.startswith(("{", "[")):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, (dict, list)) else None


def _case(stdin: Any, stdout: Any) -> tuple[str, str]:
    """One stdin/stdout case; a list of lines is joined with newlines, as APPS's grader joins them."""
    stdin, stdout = (
        "\n".join(v) if isinstance(v, list) and all(isinstance(x, str) for x in v) else v for v in (stdin, stdout)
    )
    if not _text(stdin) or not _text(stdout):
        raise ValueError(
            f"a stdin/stdout case needs string 'input' and 'output', got {stdin!r:.{QUOTED_CHARS}} / {stdout!r:.{QUOTED_CHARS}}"
        )
    return stdin, stdout


def _text(value: Any) -> bool:
    """A str that can travel to the sandbox (UTF-8, so no lone surrogates)."""
    if not isinstance(value, str):
        return False
    try:
        value.encode()
    except UnicodeEncodeError:
        return False
    return True


def _call_cases(name: Any, inputs: list, outputs: list) -> dict:
    """APPS/TACO rows: each input is the list of arguments. Inputs written as text are LiveCodeBench's encoding."""
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(
            f"call-based cases need a function name that is an identifier, got fn_name={name!r:.{QUOTED_CHARS}}"
        )
    if all(isinstance(i, str) for i in inputs) and all(isinstance(o, str) for o in outputs):
        return _job(name, [(_json_lines(i), _json(o)) for i, o in zip(inputs, outputs)], "exact")
    if not all(isinstance(i, (list, tuple)) for i in inputs):
        raise ValueError(
            "call-based cases need each input to be the list of the call's arguments, e.g. [[1, 2], [3, 4]]"
        )
    return _job(name, [(list(i), o) for i, o in zip(inputs, outputs)], "apps")


def _livecodebench_cases(cases: list) -> dict:
    """LiveCodeBench test cases: input = one JSON value per line (the arguments), output = one JSON value."""
    if not all(c.get("testtype") == "functional" for c in cases):
        raise ValueError("LiveCodeBench cases mix 'functional' and 'stdin' test types")
    names = {_metadata(c).get("func_name") for c in cases}
    if len(names) != 1 or not isinstance(name := names.pop(), str) or not name.isidentifier():
        raise ValueError(
            "LiveCodeBench 'functional' cases need the function's name: put it in each case's metadata "
            "({'func_name': ...}) or pass {'fn_name': ..., 'inputs': [...], 'outputs': [...]}"
        )
    if not all(_text(c.get("input")) and _text(c.get("output")) for c in cases):
        raise ValueError("LiveCodeBench 'functional' cases need string 'input' and 'output'")
    return _job(name, [(_json_lines(c["input"]), _json(c["output"])) for c in cases], "exact")


def _metadata(case: dict) -> dict:
    metadata = case.get("metadata")
    if isinstance(metadata, str):
        metadata = _json_value(metadata)
    return metadata if isinstance(metadata, dict) else {}


def _json_lines(text: str) -> list:
    return [_json(line) for line in text.split("\n")]


def _json(text: str):
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ValueError(f"a call-based case is not JSON ({exc}): {text!r:.{QUOTED_CHARS}}") from None


def _job(name: str, cases: list, compare: str) -> dict:
    def refuse(obj):
        raise ValueError(f"call-based cases must be plain data, got a {type(obj).__name__}")

    try:
        encoded = [[encode(list(args), refuse), encode(expected, refuse)] for args, expected in cases]
    except ProtocolError as exc:
        raise ValueError(f"call-based cases: {exc}") from None
    return {"format": "calls", "fn_name": name, "cases": encoded, "compare": compare}
