"""Runs one candidate against one kind of test, with the sandbox pool and the judge process.

Function tests (assert-style and `check(candidate)`): the candidate's code goes into a warm sandbox, the test code into
a child of the judge zygote, and the two talk over pipes; the verifier only waits for the judge's verdict, under the
wall-clock deadline, and then kills the sandbox whatever happened. Stdin/stdout tests: one sandbox per case, whose
stdout is compared here with the expected output.

A candidate killed at its deadline is a `timeout`. A sandbox that cannot start or set itself up, or a judge that ends
without a verdict before the deadline, is a failure of the verifier: `SandboxError` or `JudgeError`, never a verdict.
"""

from __future__ import annotations

import base64
import json
import os
import select
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import BinaryIO

from ..core.zygote_client import ZygoteClient
from ..sandbox import stages
from ..sandbox.cgroups import CandidateGroup, CgroupTree, CgroupUnavailable, join_command
from ..sandbox.pool import SandboxError, SandboxPool
from .clock import CandidateClock
from .outputs import outputs_match
from .standalone import SCRIPT_FLAGS, STANDALONE_DIR
from .standalone.protocol import MAX_TEST_NOTE_BYTES, TEST_KEY_FIELDS, LineReader, ProtocolError, write_message

# How much of a wrong stdout a failure's detail shows.
SHOWN_OUTPUT_CHARS = 200

# The judge and the sandbox tear down in a few milliseconds once the candidate is killed.
TEARDOWN_S = 2.0
# The judge runs the dataset's test code: its own limits, per verification (docs/code_verifier_sandbox.md, The
# judge process's limits).
JUDGE_MEMORY_MB = 4096
JUDGE_CPU_GRACE_S = 5
# The judge's cgroup, for the zygote and all its children at once: what rlimits per process leave out (processes the
# test code starts, memory in files, threads on many CPUs). Per judge child (one per candidate running, `workers`,
# and one for the zygote and children still ending): its address space, 64 processes and threads, one CPU.
JUDGE_PROCESSES = 64
# The judge bounds what it reports (code/standalone/judge.py); these bound what is read here all the same.
MAX_VERDICT_BYTES = 1 << 20
MAX_REASON_CHARS = 1000
# One thread per numerical library: a judge is one of many at once, and thread pools sized to a large node's cores
# (OpenBLAS reserves memory per thread) would not fit its address space.
JUDGE_THREADS = {name: "1" for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}


JUDGE_ERROR = "judge_error"  # reason prefix: the judge's own code raised while handling a candidate's data


class JudgeError(RuntimeError):
    """The judge process could not be reached or ended without a verdict: the verifier failed, not the candidate."""


@dataclass
class Outcome:
    """What a run established: assert statements (or cases) passed out of total, and why it stopped, if it did."""

    passed: int = 0
    total: int | None = None
    error: str | None = None  # "timeout", "output_limit", "candidate_error: ...", "runtime_error: ...", ...
    unusable: str | None = None  # the reference cannot be judged (score None)
    stalled: str | None = None  # the machine gave the candidate no CPU until the wall-clock backstop (score None)
    failures: list = field(default_factory=list)


class JudgeProcess(ZygoteClient):
    """The zygote of code/standalone/judge.py; started lazily, restarted if it dies. It runs the venv's interpreter, so
    test code may import what the trainer can import; it never runs candidate code."""

    what = "judge process"
    error = JudgeError

    def __init__(self, cgroups: CgroupTree | None = None, workers: int = 1):
        super().__init__()
        self.cgroups, self.workers = cgroups, workers
        self.cgroup: CandidateGroup | None = None  # made at the first launch, kept across restarts

    def _group(self) -> CandidateGroup | None:
        if self.cgroups is None:
            return None
        if self.cgroup is None:
            share = self.workers + 1
            try:
                self.cgroup = self.cgroups.judge_group(share * JUDGE_MEMORY_MB << 20, share * JUDGE_PROCESSES, share)
            except CgroupUnavailable as exc:
                raise JudgeError(f"cannot make the judge's cgroup: {exc}") from None
        return self.cgroup

    def launch(self) -> tuple[subprocess.Popen, socket.socket]:
        parent_end, child_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        parent_end.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 * MAX_TEST_NOTE_BYTES)  # room for a test's note
        command = [sys.executable, *SCRIPT_FLAGS, str(STANDALONE_DIR / "judge.py"), str(child_end.fileno())]
        try:
            group = self._group()
            proc = subprocess.Popen(
                command if group is None else join_command(group, command),
                pass_fds=(child_end.fileno(),), stdin=subprocess.DEVNULL, env={**os.environ, **JUDGE_THREADS},
            )  # fmt: skip
        except (OSError, JudgeError) as exc:
            parent_end.close()
            raise JudgeError(f"cannot start the judge process: {exc}") from exc
        finally:
            child_end.close()
        return proc, parent_end

    def close(self) -> None:
        """Stop the zygote, then remove its cgroup (killing what the test code may have left in it)."""
        super().close()
        with self.lock:
            if self.cgroup is not None:
                self.cgroup.remove()
                self.cgroup = None

    def kill_child(self, pid: int | None) -> None:
        """SIGKILL the judge child `pid`, if it is still a child of this judge's zygote."""
        proc = self.proc
        if pid is None or proc is None:
            return
        try:
            handle = os.pidfd_open(pid)
        except OSError:  # gone already
            return
        try:
            with open(f"/proc/{pid}/stat", "rb") as stat:
                parent = int(stat.read().rpartition(b")")[2].split()[1])
            if parent == proc.pid:  # read with the pidfd held: a pid reused before it is not signalled
                signal.pidfd_send_signal(handle, signal.SIGKILL)
        except (OSError, ValueError, IndexError):
            pass
        finally:
            os.close(handle)

    def submit(self, request_w: int, reply_r: int, job: dict) -> socket.socket:
        """Hand the candidate's pipes to a new judge child; returns the job socket to talk to it. The job's test goes
        with them, for the zygote to prepare it for the next children (code/standalone/judge_prepared.py)."""
        ours, theirs = socket.socketpair()
        try:
            self.send(b"J" + test_note(job), [theirs.fileno(), request_w, reply_r])
        finally:
            theirs.close()
        return ours


def test_note(job: dict) -> bytes:
    """The fields of `job` its test's preparation depends on, as JSON; empty for call-based cases (nothing to prepare)
    and for a test too long for one message (its children prepare it themselves)."""
    if job.get("format") == "calls":
        return b""
    note = json.dumps({field: job.get(field) for field in TEST_KEY_FIELDS}).encode()
    return note if len(note) <= MAX_TEST_NOTE_BYTES else b""


def _read_message(reader: LineReader) -> dict:
    try:
        message = reader.read_message()
    except (ProtocolError, OSError) as exc:
        raise JudgeError(f"unreadable verdict from the judge process: {exc}") from None
    if message is None:
        raise JudgeError("the judge process ended without a verdict (crashed, or killed by a limit)")
    return message


def _await_verdict(job: socket.socket, reader: LineReader, clock: CandidateClock) -> tuple[dict | None, str | None]:
    """(the judge's verdict, None), or (None, "timeout" or "stalled") when the candidate's clock ran out first.
    JudgeError if the judge ended without a verdict. The judge's other words (its pid, its count of requests) update
    the clock, which is read every `clock.wait_s()` whatever arrives meanwhile."""
    look = time.monotonic() + clock.wait_s()
    while True:
        if select.select([job], [], [], max(0.0, look - time.monotonic()))[0]:
            message = _read_message(reader)
            if type(message.get("judge_pid")) is int:  # the judge child's first word: its threads keep the clock
                clock.judge_pid = message["judge_pid"]
            elif "calls" in message:  # the requests the judge has made so far: their transport is not charged
                clock.count_calls(message["calls"])
            else:
                return message, None
            if time.monotonic() < look:
                continue
        if (stopped := clock.expired()) is not None:
            return None, stopped
        look = time.monotonic() + clock.wait_s()


def _verdict_after_kill(job: socket.socket, reader: LineReader) -> dict:
    """The verdict the judge gives once the candidate is killed (its remaining tests fail at once); {} if none."""
    deadline = time.monotonic() + TEARDOWN_S
    try:
        while select.select([job], [], [], max(0.0, deadline - time.monotonic()))[0]:
            message = _read_message(reader)
            if "judge_pid" not in message and "calls" not in message:
                return message
    except JudgeError:
        pass
    return {}


def run_function_tests(pool: SandboxPool, judge: JudgeProcess, code: str, job: dict) -> Outcome:
    """`job`: {"test": test code, "entry_point": name or None}. The verdict comes from the judge only."""
    acquiring = time.monotonic()
    sandbox = pool.acquire(refill=False)  # refilled below, while the candidate runs
    events = getattr(sandbox, "events", None)  # the benchmark's readings (sandbox/stages.py); None when off
    job_socket = None
    try:
        stages.merge(events, {"acquire_begin": acquiring})
        stages.mark(events, "acquired")
        sandbox.send({"mode": "functions", "code": code})
        job_socket = judge.submit(sandbox.request_w, sandbox.reply_r, job)
        sandbox.hand_over_pipes()  # the judge child holds them now
        clock = CandidateClock(sandbox.cgroup, pool.limits.time_s)
        deadline_s = clock.backstop_s + TEARDOWN_S  # the judge's own backstops: its alarm, and its CPU time
        write_message(
            job_socket.fileno(),
            {
                **job,
                "deadline_s": deadline_s,
                "memory_mb": JUDGE_MEMORY_MB,
                "cpu_s": deadline_s + JUDGE_CPU_GRACE_S,
                "candidate_budget_s": pool.limits.time_s,  # the judge's time reading its replies is the candidate's
                "reply_memory_mb": pool.limits.memory_mb,  # and the memory one reply may make it build
                **({"stages": True} if events is not None else {}),
            },  # fmt: skip
        )
        stages.mark(events, "submitted")
        pool.refill()
        reader = LineReader(job_socket.fileno(), MAX_VERDICT_BYTES)
        verdict, stopped = _await_verdict(job_socket, reader, clock)
        if stopped is None and verdict.get("error") and clock.expired() == "timeout":
            stopped = "timeout"  # it failed once its time was spent (between two looks, or killed by its rlimit)
        stages.mark(events, "verdict")
        if events is not None:
            stages.merge(events, (verdict or {}).get("t"))
            stages.merge(events, {"clock_samples": clock.samples})
        if stopped is not None:  # kill the candidate; the judge then fails the remaining tests quickly
            sandbox.finish()
            verdict = _verdict_after_kill(job_socket, reader)
            if not verdict:  # still busy, on the candidate's values: its time is spent
                judge.kill_child(clock.judge_pid)
    finally:
        if job_socket is not None:
            job_socket.close()
        sandbox.finish(grace_s=0.5)
    if verdict.get("internal"):  # the sandbox failed before the candidate ran, whether or not the clock ran out
        raise SandboxError(str(verdict["internal"])[:MAX_REASON_CHARS])
    if stopped == "stalled":
        return Outcome(stalled=clock.describe())
    if verdict.get("unusable"):
        return Outcome(unusable=str(verdict["unusable"])[:MAX_REASON_CHARS])
    if verdict.get("judge_error"):  # the judge's own bug on this candidate: counted apart from a failing test
        return Outcome(0, None, f"{JUDGE_ERROR}: {str(verdict['judge_error'])[:MAX_REASON_CHARS]}")
    error = stopped or verdict.get("error")
    passed = verdict.get("passed") if type(verdict.get("passed")) is int else 0
    total = verdict.get("total") if type(verdict.get("total")) is int else None
    failures = verdict.get("failures") if type(verdict.get("failures")) is list else []
    return Outcome(passed, total, None if error is None else str(error)[:MAX_REASON_CHARS], failures=failures[:5])


@dataclass
class SandboxRun:
    """One program's run in a sandbox: its stdout, why its clock or its output bound stopped it (None if neither),
    its exit status and its clock."""

    output: bytes
    stopped: str | None
    status: int | None
    clock: CandidateClock


def run_in_sandbox(
    pool: SandboxPool,
    message: dict,
    budget_s: float | None = None,
    memory_mb: int | None = None,
    program: str | None = None,
    sink: BinaryIO | None = None,
    output_bytes: int | None = None,
) -> SandboxRun:
    """Send `message` (the only one: a script, a compile, a native program) to a fresh sandbox of `pool`, then read
    its stdout and wait for its end, on the candidate's clock (`budget_s`, else the pool's `time_s`). `memory_mb`
    below the pool's bounds the whole candidate's cgroup (with its /tmp, as the pool's), where it has one. `program`:
    a file whose bytes (after its first `PROGRAM_HEADER_BYTES`) go in the message's "program" field, in base64,
    streamed; `sink`: a file that gets the stdout (the run's `output` is then empty). Neither is held in memory.
    `output_bytes`: the most it may print (else the pool's bound)."""
    sandbox = pool.acquire(refill=False)
    try:
        if memory_mb is not None and memory_mb < pool.limits.memory_mb and sandbox.cgroup is not None:
            try:
                sandbox.cgroup.bound_memory((memory_mb + pool.limits.tmp_mb) << 20)
            except OSError as exc:
                raise SandboxError(f"cannot bound the candidate's cgroup at {memory_mb} MiB: {exc}") from None
        if program is None:
            sandbox.send(message)
        else:
            write_with_program(sandbox.request_w, message, program)
        sandbox.close_request()
        pool.refill()  # while the candidate runs
        clock = CandidateClock(sandbox.cgroup, pool.limits.time_s if budget_s is None else budget_s, judged=False)
        _check_setup(sandbox, time.monotonic() + clock.backstop_s)
        output, stopped = sandbox.read_stdout(clock, sink, output_bytes)
        status = None
        while stopped is None and (status := sandbox.wait(time.monotonic() + clock.wait_s())) is None:
            stopped = clock.expired()
    finally:
        sandbox.finish()
    return SandboxRun(output, stopped, status, clock)


# A compiled program's file starts with the compile sandbox's `OK\n` (code/programs.py keeps its stdout as it is).
PROGRAM_HEADER_BYTES = 3
STREAMED_BYTES = 3 << 20  # a multiple of 3: each piece's base64 ends without padding


def write_with_program(fd: int, message: dict, program: str) -> None:
    """`message` as one JSON line, its "program" field the base64 of the file `program` (from its
    `PROGRAM_HEADER_BYTES`th byte), written a piece at a time."""
    head = json.dumps({**message, "program": ""})
    if not head.endswith('""}'):
        raise ValueError("the program field must be the message's last")
    with open(program, "rb") as file:
        file.seek(PROGRAM_HEADER_BYTES)
        _write_all(fd, head[:-2].encode())
        while piece := file.read(STREAMED_BYTES):
            _write_all(fd, base64.b64encode(piece))
    _write_all(fd, b'"}\n')


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def compare_output(actual: str, expected: str, float_tolerance: float | None, tokens: bool = False) -> bool | Outcome:
    """`outputs_match`, or the judge_error of a bug of ours on this output (two strings raise nothing else)."""
    try:
        return outputs_match(actual, expected, float_tolerance, tokens)
    except Exception as exc:
        return Outcome(0, 1, f"{JUDGE_ERROR}: comparing the output: {type(exc).__name__}: {exc}")


def stdio_outcome(run: SandboxRun, judge: Callable[[str], bool | Outcome]) -> Outcome:
    """A stdio case's outcome: passed when the program exits with status 0 in time and `judge` accepts its output
    (True); an Outcome from `judge` is final (a judge_error, or a checker that failed: no verdict)."""
    if run.stopped == "stalled":
        return Outcome(stalled=run.clock.describe())
    if run.stopped is not None:
        return Outcome(0, 1, run.stopped)
    if run.status != 0:
        return Outcome(0, 1, f"runtime_error: exit status {run.status}")
    actual = run.output.decode("utf-8", errors="replace")
    matched = judge(actual)
    if isinstance(matched, Outcome):
        return matched
    if not matched:
        return Outcome(0, 1, None, failures=[{"error": "wrong output", "output": actual[:SHOWN_OUTPUT_CHARS]}])
    return Outcome(1, 1)


def _check_setup(sandbox, deadline: float) -> None:
    """The harness reports its set-up (limits, uid drop) before it runs the candidate, then closes the reply pipe."""
    remaining = deadline - time.monotonic()
    try:
        ready = select.select([sandbox.reply_r], [], [], max(0.0, remaining))[0]
        message = LineReader(sandbox.reply_r, 1 << 12).read_message() if ready else None
    except (ProtocolError, OSError) as exc:
        raise SandboxError(f"unreadable set-up report from the sandbox: {exc}") from None
    if not isinstance(message, dict) or message.get("setup") != "ok":
        why = (message or {}).get("error") or ("no report in time" if not ready else "it ended first")
        raise SandboxError(f"the sandbox could not set up the candidate's limits: {why}")


__all__ = [
    "JUDGE_ERROR", "JudgeError", "JudgeProcess", "Outcome", "SandboxRun", "run_function_tests", "run_in_sandbox",
    "stdio_outcome",
]  # fmt: skip
