"""C++ programs in the same sandbox as Python ones: compiled there, run there per stdio case, checked there.

A C++ source is compiled in a sandbox of its own (a second pool, with the compile limits: CPU time, memory), by the
system's `g++` with fixed flags; the harness sends the program back on its stdout (code/standalone/harness.py,
mode "compile"), and the verifier keeps it on disk by the hash of the source and the flags (code/programs.py,
`ProgramCache`). Each stdio case then runs in a fresh sandbox of the candidate's pool: the harness writes the program to a memory file, applies
the limits (rlimits with the case's CPU time and memory, the uid drop, the seccomp allowlist) and execs it in its own
place (mode "native"), so the program is the sandboxed process itself, in its cgroup, on the candidate's clock. Its
stdout is compared here, as a Python program's is (`outputs_match`), or by the row's checker: a program of the
dataset, compiled (with the headers the verifier was given, e.g. testlib.h) and run in sandboxes of its own (its own
limits) with the case's input, the candidate's output and the
expected answer as files, testlib's contract (exit 0 accepts, 1 or 2 rejects, anything else is the checker's fault).

Nothing of this runs on the host: the compiler runs as the candidate, under its seccomp filter, with /usr read-only
and a /tmp of its own; the expected answers reach only the checker's sandbox, never the candidate's.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..sandbox.pool import SandboxPool
from ..sandbox.process import Limits, cpu_limit_s
from .programs import COMPILER
from .runner import Outcome, SandboxRun, compare_output, run_in_sandbox, stdio_outcome

CPP_LANGUAGES = ("cpp", "c++", "cc", "cxx")
LANGUAGES = ("auto", "python", "cpp")
DEFAULT_CPP_FLAGS = ("-O2", "-std=c++17")
# testlib's exit codes: _ok, _wa, _pe accept or reject; _fail (3) and anything else is the checker's own failure.
CHECKER_ACCEPTS, CHECKER_REJECTS = (0,), (1, 2)
COMPILE_ERROR, MISSING_COMPILER = "compile_error", "no C++ compiler"


def compiler_missing() -> str | None:
    """Why C++ cannot be judged here (no g++ on the machine), or None."""
    if shutil.which(COMPILER, path="/usr/local/bin:/usr/bin:/bin") is None:
        return (
            f"{MISSING_COMPILER}: `{COMPILER}` is not installed; the code verifier compiles C++ with the "
            "distribution's g++ inside its sandbox (apt-get install g++)"
        )
    return None


def read_checker_headers(paths: Sequence[str | os.PathLike]) -> dict[str, str]:
    """{file name: text} of the headers checkers may include (`#include "testlib.h"`), read once; ValueError naming
    the option where a path is not a readable text file or two share a name."""
    if isinstance(paths, (str, bytes, os.PathLike)):
        paths = [paths]
    headers: dict[str, str] = {}
    for path in paths:
        name = os.path.basename(os.fspath(path))
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError, TypeError) as exc:
            raise ValueError(
                f"code verifier option checker_headers: {path!r} is not a readable text file ({exc}); give the paths "
                "of the headers rows' checkers include, e.g. ['/path/to/testlib.h']."
            ) from None
        if name in headers or name == "main.cpp":
            raise ValueError(f"code verifier option checker_headers: two headers are named {name!r}.")
        headers[name] = text
    return headers


@dataclass(frozen=True)
class CaseLimits:
    """One case's bounds: the candidate's own time and its memory."""

    time_s: float
    memory_mb: int

    @classmethod
    def for_row(cls, options: dict, limits: Limits) -> CaseLimits:
        """A row's `time_limit` and `memory_limit`, each at most the verifier's own (`timeout_s`, `memory_mb`, the
        bounds of the pool its cases run in); the verifier's where the row gives none."""
        time_s = min(options.get("time_limit", limits.time_s), limits.time_s)
        return cls(float(time_s), int(min(options.get("memory_limit", limits.memory_mb), limits.memory_mb)))

    def rlimits(self) -> dict:
        cpu = cpu_limit_s(self.time_s)  # the clock ends it at time_s; the rlimit is the backstop of each process
        memory = self.memory_mb << 20
        # The stack: bounded by the memory alone (RLIMIT_AS), as judges give it (deep recursion, 10**6 calls, passes);
        # unlimited rather than the memory's size, so that each thread's stack stays glibc's default (2 MiB) rather
        # than the stack limit (four threads would reserve four times the memory).
        return {"RLIMIT_CPU": [cpu, cpu + 1], "RLIMIT_AS": [memory, memory], "RLIMIT_STACK": [-1, -1]}


def run_program(
    pool: SandboxPool,
    program: str,
    stdin: str,
    limits: CaseLimits,
    files: dict | None = None,
    argv=None,
    output_bytes: int | None = None,
) -> SandboxRun:
    """Run a compiled program (its file, `Compiled.program`) in a fresh sandbox of `pool`, on its own clock of
    `limits.time_s`, printing at most `output_bytes` (else the pool's bound)."""
    message = {"mode": "native", "stdin": stdin, "rlimits": limits.rlimits(), "files": files or {}}
    message["argv"] = argv or ["main"]
    return run_in_sandbox(pool, message, limits.time_s, limits.memory_mb, program=program, output_bytes=output_bytes)


CHECKER_FAILED_ON_OUTPUT = "checker_failed_on_output"
REFERENCE_VERDICTS = 1 << 16  # cases whose reference verdict is kept (32-byte keys: a few MiB)


@dataclass(frozen=True)
class Checker:
    """A row's checker, compiled: run as `checker input.txt output.txt answer.txt` in `pool` under `limits`.
    `reference_verdicts` keeps, per checker (`key`, its source's) and case, whether it accepts the expected answer as
    the output: shared by the verifications of one verifier, `REFERENCE_VERDICTS` kept at most."""

    program: str
    pool: SandboxPool
    limits: CaseLimits
    key: str = ""
    reference_verdicts: dict = field(default_factory=dict, compare=False)

    def judge(self, stdin: str, output: str, expected: str) -> bool | Outcome:
        """True (accepted), False (rejected), or an Outcome. A checker that fails on the candidate's output (testlib's
        `_fail`, a crash, its time) is asked once per case to judge the expected answer against itself: where it
        accepts that, the failure is the output's, the candidate's 0 (`checker_failed_on_output`); where it fails
        there too, the row's (`unusable`, no verdict)."""
        verdict = self._run(stdin, output, expected)
        if not isinstance(verdict, str):
            return verdict
        case = f"{self.key}:{len(stdin)}:{stdin}{expected}"
        key = hashlib.sha256(case.encode("utf-8", "surrogatepass")).digest()
        if key not in self.reference_verdicts:
            on_reference = self._run(stdin, expected, expected)
            if isinstance(on_reference, Outcome):  # stalled: no verdict either way, and nothing learnt
                return on_reference
            if len(self.reference_verdicts) >= REFERENCE_VERDICTS:
                self.reference_verdicts.clear()
            self.reference_verdicts[key] = on_reference
        if self.reference_verdicts[key] is True:
            return Outcome(0, 1, f"{CHECKER_FAILED_ON_OUTPUT}: {verdict}")
        return Outcome(unusable=f"checker: {verdict}, and it does not accept the expected answer either")

    def _run(self, stdin: str, output: str, expected: str) -> bool | str | Outcome:
        """True (exit 0), False (1 or 2), a stalled Outcome, or how the checker failed (a phrase)."""
        files = {"input.txt": stdin, "output.txt": output, "answer.txt": expected}
        argv = ["checker", "input.txt", "output.txt", "answer.txt"]
        run = run_program(self.pool, self.program, "", self.limits, files, argv)
        if run.stopped == "stalled":
            return Outcome(stalled=run.clock.describe())
        if run.stopped is not None:
            return f"{run.stopped} (its limit: {self.limits.time_s:g} s)"
        if run.status in CHECKER_ACCEPTS:
            return True
        if run.status in CHECKER_REJECTS:
            return False
        return f"exit status {run.status} (0 accepts, 1 or 2 rejects; 3 is testlib's own failure)"


def judge_case(
    run: SandboxRun,
    stdin: str,
    expected: str,
    float_tolerance: float | None,
    checker: Checker | None,
    tokens: bool = False,
) -> Outcome:
    """One stdin/stdout case of a program (compiled, or a Python script): it passes when it exits with status 0
    within its time and memory, and its output matches (`outputs_match`; `tokens`: token by token, line breaks
    ignored) or, where the row has one, the checker accepts it."""
    if checker is not None:
        return stdio_outcome(run, lambda actual: checker.judge(stdin, actual, expected))
    return stdio_outcome(run, lambda actual: compare_output(actual, expected, float_tolerance, tokens))
