"""The `code` verifier: runs a completion's Python against hidden unit tests in a sandbox.

```python
verifier = get_verifier("code", timeout_s=5, partial_credit=False)
verifier.verify(completion, "assert add(1, 2) == 3")                                   # assert-style (MBPP)
verifier.verify(completion, {"test": "def check(candidate): ...", "entry_point": "add"})  # HumanEval
verifier.verify(completion, [{"input": "1 2\\n", "output": "3\\n"}])                     # stdin/stdout
verifier.verify(completion, "from solution import add\\ndef test_add(): assert add(1, 2) == 3")  # pytest, unittest
verifier.verify(completion, {"fn_name": "add", "inputs": [[1, 2]], "outputs": [3]})     # call-based (APPS)
```

Each format is detected from the reference (code/formats.py). The language from the completion: the last fenced block
tagged python or cpp/c++/cc (or `language="python"`/`"cpp"`); a C++ program is compiled and run in the same sandbox,
on stdin/stdout cases, with the row's time limit, memory limit and checker (code/native.py).

The verdict is formed outside the sandbox (see code/standalone/judge.py and code/standalone/harness.py for why it cannot be forged) and the
result's `details` say which isolation was in force (see sandbox/isolation.py for what each level protects against).

Never raises into the trainer, and never turns its own failure into a 0: a completion that is not text scores 0
(`bad_completion: ...`); an unusable reference gives None (`unusable_reference: ...`); a sandbox that cannot start or
a judge that dies (or a system call that reaches them fails) is retried once, then gives None (`internal_error:
...`); any other exception is a bug of this code, not retried: None with `internal_error: bug in the verifier: ...`,
its traceback logged. An exception of the judge's own code while it handles this candidate's data scores 0 with
`judge_error: ...` (None would let a policy escape the penalty by triggering it), counted apart from failing tests.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
import traceback
from collections.abc import Hashable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

from ..core.cache import BatchStats
from ..core.contract import INTERNAL_ERROR, VerificationResult, Verifier, bad_completion
from ..core.deadline_pool import default_worker_count
from ..core.registry import register_verifier
from ..sandbox.cgroups import candidate_cgroups
from ..sandbox.pool import Limits, SandboxError, SandboxPool, detect_isolation
from .extract import extract_code, extract_program, is_prose
from .formats import parse_reference
from .native import (
    COMPILE_ERROR,
    DEFAULT_CPP_FLAGS,
    LANGUAGES,
    CaseLimits,
    Checker,
    compiler_missing,
    judge_case,
    read_checker_headers,
    run_program,
)
from .programs import MAX_PROGRAM_BYTES, Compiled, ProgramCache
from .runner import JUDGE_ERROR, JudgeError, JudgeProcess, Outcome, run_function_tests, run_in_sandbox

logger = logging.getLogger("trl_grpo_ext.verifiers")

# What is retried once: the sandbox or the judge failed (they could not start, set up, or ended without a verdict), or
# the system calls that reach them did (a pipe, a socket, a cgroup file). Any other exception is a bug of the
# verifier's own Python: not retried (it would fail again, and hide as the machinery's failure), logged with its
# traceback, and reported as `internal_error: bug in the verifier: ...`.
INFRASTRUCTURE_FAILURES = (SandboxError, JudgeError, OSError)
BUG = "bug in the verifier"


_PLAIN_DATA = (str, int, float, bool, type(None))


def _plain(value: Any, depth: int = 0) -> bool:
    """Built of strings, numbers, None, lists, tuples and dicts only: two such values with the same repr are equal."""
    if isinstance(value, _PLAIN_DATA):
        return True
    if depth > 20:
        return False
    if isinstance(value, (list, tuple)):
        return all(_plain(item, depth + 1) for item in value)
    if isinstance(value, dict):
        return all(_plain(k, depth + 1) and _plain(v, depth + 1) for k, v in value.items())
    return False


def _same_run_key(completion: Any, reference: Any, language: str = "auto") -> tuple | None:
    """What decides a run: the extracted program, its language and the tests (the options are the verifier's own);
    None when the item should not be grouped (not text, or a reference of other types, whose repr may not say what
    it holds)."""
    if not isinstance(completion, str) or not _plain(reference):
        return None
    return extract_program(completion, language), type(reference).__name__, repr(reference)


@register_verifier("code")
class CodeVerifier(Verifier):
    """Runs the completion's Python or C++ against unit tests in a sandbox; 1.0 when every test passes.

    What each option means: `OPTION_HELP` (code/options.py), the one description, which the examples' `--help` is
    built from; the defaults are this signature's.
    """

    def __init__(
        self,
        timeout_s: float = 10.0,
        memory_mb: int = 1024,
        max_processes: int = 64,
        max_output_bytes: int = 8 << 20,
        partial_credit: bool = False,
        float_tolerance: float | None = None,
        workers: int | None = None,
        isolation: str = "auto",
        python: str | None = None,
        site_packages: bool = False,
        solution_module: str = "solution",
        cgroup: bool = True,
        language: str = "auto",
        cpp_flags: Sequence[str] = DEFAULT_CPP_FLAGS,
        compile_timeout_s: float = 10.0,
        compile_memory_mb: int = 1024,
        checker_timeout_s: float = 10.0,
        checker_memory_mb: int = 1024,
        checker_headers: Sequence[str] = (),
    ):
        for name, value in (("timeout_s", timeout_s), ("memory_mb", memory_mb), ("max_processes", max_processes)):
            if not isinstance(value, (int, float)) or value <= 0:
                raise ValueError(f"{name}={value!r} must be a positive number.")
        self.limits = Limits(
            time_s=float(timeout_s), memory_mb=int(memory_mb),
            processes=int(max_processes), output_bytes=int(max_output_bytes),
        )  # fmt: skip
        if float_tolerance is not None and (
            isinstance(float_tolerance, bool)
            or not isinstance(float_tolerance, (int, float))
            or not 0 < float_tolerance < 1
        ):
            raise ValueError(
                f"code verifier option float_tolerance={float_tolerance!r} must be None (exact output) or a number "
                "between 0 and 1, e.g. 1e-6."
            )
        if not isinstance(site_packages, bool):
            raise ValueError(
                f"code verifier option site_packages={site_packages!r} must be True (the sandbox interpreter's "
                "site-packages are importable, read-only) or False (standard library only, the default)."
            )
        if not isinstance(solution_module, str) or not solution_module.isidentifier():
            raise ValueError(
                f"code verifier option solution_module={solution_module!r} must be a module name, the one test modules "
                "import the solution from (`from solution import f`: 'solution', the default)."
            )
        self.solution_module = solution_module
        if language not in LANGUAGES:
            raise ValueError(
                f"code verifier option language={language!r} must be one of {', '.join(map(repr, LANGUAGES))}: 'auto' "
                "(the completion's last fenced block tagged python or cpp/c++/cc decides), 'python' or 'cpp'."
            )
        if isinstance(cpp_flags, str) or not all(isinstance(f, str) and f.startswith("-") for f in cpp_flags):
            raise ValueError(
                f"code verifier option cpp_flags={cpp_flags!r} must be a list of g++ options, e.g. ['-O2', "
                "'-std=c++17'] (the default)."
            )
        for name, value in (
            ("compile_timeout_s", compile_timeout_s), ("compile_memory_mb", compile_memory_mb),
            ("checker_timeout_s", checker_timeout_s), ("checker_memory_mb", checker_memory_mb),
        ):  # fmt: skip
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise ValueError(f"code verifier option {name}={value!r} must be a positive number.")
        self.checker_headers = read_checker_headers(checker_headers)
        self.language = language
        self.cpp_flags = tuple(cpp_flags)
        if language == "cpp" and (missing := compiler_missing()) is not None:
            raise RuntimeError(f"code verifier: language='cpp' needs a C++ compiler: {missing}")
        self.compile_limits = Limits(
            time_s=float(compile_timeout_s), memory_mb=int(compile_memory_mb),
            processes=int(max_processes), file_mb=MAX_PROGRAM_BYTES >> 20, tmp_mb=128,
            output_bytes=MAX_PROGRAM_BYTES + 16,
        )  # fmt: skip
        # A checker is the dataset's program: limits of its own, in sandboxes of its own (started with the first).
        self.checker_limits = Limits(
            time_s=float(checker_timeout_s), memory_mb=int(checker_memory_mb),
            processes=int(max_processes), tmp_mb=128,
        )  # fmt: skip
        self.programs = ProgramCache()
        self._reference_verdicts: dict = {}  # whether each row's checker accepts a case's answer against itself
        self._side_pools: dict[str, SandboxPool] = {}  # "compile" and "checker", each started on first use
        self.partial_credit = partial_credit
        self.float_tolerance = float_tolerance
        self.workers = workers or min(8, default_worker_count())  # sandboxes run at once, per training process
        if not isinstance(cgroup, bool):
            raise ValueError(
                f"code verifier option cgroup={cgroup!r} must be True (a cgroup per candidate bounds its memory, "
                "processes and CPU as a whole; the default) or False (per-process rlimits only, asked for by name)."
            )
        self.isolation = detect_isolation(isolation, python, site_packages=site_packages)
        self._cgroups = candidate_cgroups(cgroup)
        if self._cgroups is not None:
            self.isolation = replace(self.isolation, cgroup=f"v{self._cgroups.version}")
        self._pool = None
        self._judge = None
        self._executor = None
        self._start_lock = threading.Lock()

    def _ensure_started(self) -> None:
        with self._start_lock:
            if self._pool is None:
                self._pool = SandboxPool(self.isolation, self.limits, size=self.workers, cgroups=self._cgroups)
                self._judge = JudgeProcess(self._cgroups, self.workers)

    def _side_pool(self, role: str) -> SandboxPool:
        """The sandboxes of `role`: "compile" (C++ sources, with the compile limits) or "checker" (rows' checkers, with
        the checker limits); started on first use, two at most."""
        with self._start_lock:
            if role not in self._side_pools:
                limits = {"compile": self.compile_limits, "checker": self.checker_limits}[role]
                size = max(1, min(2, self.workers))
                self._side_pools[role] = SandboxPool(self.isolation, limits, size=size, cgroups=self._cgroups)
            return self._side_pools[role]

    def verify(self, completion: str, reference: Any) -> VerificationResult:
        return self._verify_same_program([completion], reference)[0]

    def _verify_same_program(self, completions: list[Any], reference: Any) -> list[VerificationResult]:
        """Completions whose extracted programs are the same, against one reference: the program runs once, and each
        completion gets its own result (whether it reads as prose is a property of the completion's text)."""
        if not isinstance(completions[0], str):
            return [bad_completion(completion) for completion in completions]
        try:
            kind, tests = parse_reference(reference)
        except ValueError as exc:  # parse_reference's word for a reference it cannot use
            logger.warning("code verifier: %s", exc)
            return [VerificationResult(None, f"unusable_reference: {exc}") for _ in completions]
        except Exception as exc:  # anything else is a bug of parse_reference, not the row's fault
            logger.debug("code verifier: a bug reading a reference", exc_info=exc)
            return [self._failed("", f"{BUG}: {type(exc).__name__}: {exc}", exc) for _ in completions]
        language, code = extract_program(completions[0], self.language)
        if language == "cpp" and kind != "stdio":
            why = (
                "C++ programs are judged on stdin/stdout cases; this reference is Python test code "
                f"({'call-based cases' if tests.get('format') == 'calls' else 'asserts or a test module'})"
            )
            if self.language == "cpp":  # the verifier was told the dataset is C++: the row is not
                return [VerificationResult(None, f"unusable_reference: {why}") for _ in completions]
            # the policy chose C++ for a Python task: its answer, not the row's fault (None would let it escape a 0)
            details = self._details(Outcome())
            return [VerificationResult(0.0, f"wrong_language: {why}", code, details) for _ in completions]
        if language == "cpp" and (missing := compiler_missing()) is not None:
            logger.error("code verifier: %s", missing)
            return [self._failed(code, missing) for _ in completions]
        if not code.strip():
            return [
                VerificationResult(0.0, "no_code", extracted=code, details=self._details(Outcome()))
                for _ in completions
            ]
        failure = None
        for attempt in range(2):  # a failure of the sandbox or the judge is retried once
            try:
                self._ensure_started()
                if language == "cpp":
                    outcome = self._run_cpp(tests, code)
                else:
                    outcome = self._run(kind, tests, code)
                return [self._result(outcome, code, completion, language) for completion in completions]
            except INFRASTRUCTURE_FAILURES as exc:  # the machinery failed: another sandbox or judge may not
                failure = exc
                logger.warning("code verifier: %s: %s%s", type(exc).__name__, exc, "; retrying" if not attempt else "")
            except Exception as exc:  # a bug of this code: retrying runs it again; the reward adapter logs it
                logger.debug("code verifier: a bug of the verifier's own code, on an item", exc_info=exc)
                return [self._failed(code, f"{BUG}: {type(exc).__name__}: {exc}", exc) for _ in completions]
        logger.error("code verifier: giving up on an item", exc_info=failure)
        what = (
            str(failure) if isinstance(failure, (SandboxError, JudgeError)) else f"{type(failure).__name__}: {failure}"
        )
        return [self._failed(code, what) for _ in completions]

    def _failed(self, code: str, what: str, exc: BaseException | None = None) -> VerificationResult:
        """No verdict: the verifier failed (None, `internal_error: ...`), never the candidate; a bug's traceback is
        kept in `details["traceback"]` (the reward adapter logs the first of each kind at ERROR)."""
        details = self._details(Outcome())
        if exc is not None:
            details["traceback"] = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        return VerificationResult(None, f"{INTERNAL_ERROR}: {what}", code, details)

    def _run(self, kind: str, tests: Any, code: str) -> Outcome:
        if kind == "functions":
            return run_function_tests(self._pool, self._judge, code, {**tests, "module": self.solution_module})
        checker = self._checker(tests)
        if isinstance(checker, Outcome):
            return checker
        options = getattr(tests, "options", {})
        tokens = options.get("tokens", False)  # a Codeforces row: as its C++ answers are
        output_bytes = self._output_bytes(options)

        def run_case(stdin: str, expected: str) -> Outcome:
            message = {"mode": "script", "code": code, "stdin": stdin}
            run = run_in_sandbox(self._pool, message, output_bytes=output_bytes)
            return judge_case(run, stdin, expected, self.float_tolerance, checker, tokens=tokens)

        return self._each_case(tests, run_case)

    def _each_case(self, tests: list, run_case) -> Outcome:
        """Stdio cases one by one, stopping at the first failure unless `partial_credit`; a case without a verdict
        (the machine stalled it, or the row's checker failed) ends the run without one."""
        total, passed, first_error, failures = len(tests), 0, None, []
        for stdin, expected in tests:
            case = run_case(stdin, expected)
            if case.stalled or case.unusable:  # no verdict on this completion: the machine or the row failed it
                return case
            passed += case.passed
            failures += case.failures[:1]
            first_error = first_error or case.error
            if not case.passed and not self.partial_credit:
                break  # one failure decides a binary reward
        return Outcome(passed, total, first_error, failures=failures[:5])

    @staticmethod
    def _output_bytes(options: dict) -> int | None:
        """The row's `output_limit` (MiB) in bytes; None: the verifier's `max_output_bytes`."""
        return int(options["output_limit"] * (1 << 20)) if "output_limit" in options else None

    def _compiled(self, source: str, flags: tuple[str, ...] | None = None) -> Compiled | Outcome:
        return self.programs.get(self._side_pool("compile"), source, flags or self.cpp_flags)

    def _row_flags(self, options: dict) -> tuple[str, ...] | Outcome:
        """`cpp_flags` with the row's `cpp_standard` in place of their `-std=`; an unusable Outcome where this g++
        does not compile an empty program with it (checked once per standard: the probe is cached)."""
        standard = options.get("cpp_standard")
        if standard is None:
            return self.cpp_flags
        flags = (*(flag for flag in self.cpp_flags if not flag.startswith("-std=")), f"-std={standard}")
        probe = self._compiled("int main() {}\n", flags)
        if isinstance(probe, Outcome) or probe.program is not None:
            return probe if isinstance(probe, Outcome) else flags
        return Outcome(unusable=f"cpp_standard {standard!r}: this g++ does not compile with it: {probe.error}")

    def _checker(self, tests: list) -> Checker | Outcome | None:
        """The row's checker, compiled with `checker_headers` (cached like any program) and run with the checker
        limits; None without one; an Outcome when it cannot be had (it does not compile: `unusable_reference`; the
        machine stalled it)."""
        source = getattr(tests, "options", {}).get("checker")
        if source is None:
            return None
        if (missing := compiler_missing()) is not None:
            raise SandboxError(f"the row has a checker, and {missing}")
        built = self.programs.get(self._side_pool("compile"), source, self.cpp_flags, self.checker_headers)
        if isinstance(built, Outcome):
            return built
        if built.program is None:
            return Outcome(unusable=f"checker: does not compile: {built.error}")
        own = CaseLimits(self.checker_limits.time_s, self.checker_limits.memory_mb)
        key = ProgramCache.key(source, self.cpp_flags, self.checker_headers)
        return Checker(built.program, self._side_pool("checker"), own, key, self._reference_verdicts)

    def _run_cpp(self, tests: list, code: str) -> Outcome:
        """A C++ program on stdio cases: compiled once (cached by its hash), then run per case in a fresh sandbox
        under the row's time limit (at most `timeout_s`) and memory limit (at most `memory_mb`); a checker, when the
        row has one, decides each case."""
        options = getattr(tests, "options", {})
        flags = self._row_flags(options)
        if isinstance(flags, Outcome):
            return flags
        compiled = self._compiled(code, flags)
        if isinstance(compiled, Outcome):  # the machine stalled the compile: no verdict
            return compiled
        if compiled.program is None:
            return Outcome(0, len(tests), f"{COMPILE_ERROR}: {compiled.error}")
        checker = self._checker(tests)
        if isinstance(checker, Outcome):
            return checker
        limits = CaseLimits.for_row(options, self.limits)
        output_bytes = self._output_bytes(options)

        def run_case(stdin: str, expected: str) -> Outcome:
            run = run_program(self._pool, compiled.program, stdin, limits, output_bytes=output_bytes)
            # As Codeforces judges C++ by default (testlib's wcmp): tokens, line breaks ignored.
            return judge_case(run, stdin, expected, self.float_tolerance, checker, tokens=True)

        return self._each_case(tests, run_case)

    def _result(self, outcome: Outcome, code: str, completion: str, language: str = "python") -> VerificationResult:
        details = self._details(outcome)
        if outcome.stalled:  # the machine's fault, not the candidate's: counted with the verifier's own failures
            logger.warning("code verifier: stalled: %s", outcome.stalled)
            return VerificationResult(None, f"{INTERNAL_ERROR}: stalled: {outcome.stalled}", code, details)
        if outcome.unusable:
            logger.warning("code verifier: unusable reference: %s", outcome.unusable)
            return VerificationResult(None, f"unusable_reference: {outcome.unusable}", code, details)
        if (outcome.error or "").startswith(JUDGE_ERROR):  # no verdict on the candidate: 0 whatever passed before
            logger.warning("code verifier: %s", outcome.error)
            return VerificationResult(0.0, outcome.error, code, details)
        total = outcome.total or 0
        all_passed = total > 0 and outcome.passed == total and outcome.error is None
        if all_passed:
            return VerificationResult(1.0, "correct", code, details)
        score = min(outcome.passed / total, 1.0) if self.partial_credit and total else 0.0
        if (
            score == 0.0 and language == "python" and is_prose(completion)
        ):  # its SyntaxError (or a stdio run's exit status) says less
            return VerificationResult(0.0, "no_code", code, details)
        return VerificationResult(score, outcome.error or "wrong", code, details)

    def _details(self, outcome: Outcome) -> dict:
        return {
            "passed": outcome.passed,
            "total": outcome.total,
            "failures": outcome.failures,
            "isolation": self.isolation.describe(),
        }

    def verify_batch(self, completions: Sequence[str], references: Sequence[Any]) -> list[VerificationResult]:
        return self.verify_batch_with_stats(completions, references)[0]

    def verify_batch_with_stats(
        self, completions: Sequence[str], references: Sequence[Any]
    ) -> tuple[list[VerificationResult], BatchStats]:
        """`verify_batch`, and what this call did (`BatchStats`). Items with the same extracted program and the same
        tests run once, in parallel with the other distinct programs."""
        if len(completions) != len(references):
            return super().verify_batch(completions, references), BatchStats()  # raises the contract's error
        groups: dict[Hashable, list[int]] = {}
        for i, (completion, reference) in enumerate(zip(completions, references)):
            groups.setdefault(_same_run_key(completion, reference, self.language) or ("alone", i), []).append(i)

        def run(members: list[int]) -> tuple[list[VerificationResult], float]:
            start = time.perf_counter()
            results = self._verify_same_program([completions[i] for i in members], references[members[0]])
            return results, time.perf_counter() - start

        stats = BatchStats(items=len(completions), duplicates=len(completions) - len(groups))
        stats.item_seconds = [0.0] * len(completions)
        results: list[VerificationResult | None] = [None] * len(completions)
        for members, (group_results, seconds) in zip(
            groups.values(), self._batch_executor().map(run, groups.values())
        ):
            for i, result in zip(members, group_results):
                results[i], stats.item_seconds[i] = result, seconds
        return results, stats  # type: ignore[return-value]

    def _batch_executor(self) -> ThreadPoolExecutor:
        """The threads that verify a batch's items, shared by concurrent calls (created once, under the lock: two
        first calls at once must not each start one)."""
        with self._start_lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(self.workers, thread_name_prefix="code-verifier")
            return self._executor

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None
        for pool in self._side_pools.values():
            pool.close()
        self._side_pools = {}
        self.programs.close()
        if self._pool is not None:
            self._pool.close()
            self._judge.close()
            self._pool = self._judge = None

    def __del__(self):
        try:
            self.close()
        except Exception:  # no caller to raise to: said at ERROR, unless the interpreter is already tearing down
            if not sys.is_finalizing():
                logger.error("code verifier: closing it on garbage collection failed", exc_info=True)


__all__ = ["CodeVerifier", "extract_code", "extract_program", "parse_reference"]
