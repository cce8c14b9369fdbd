"""The trusted side of a code verification: runs the hidden test code against proxies of the candidate's functions.

A zygote started once per verifier (`python -I judge.py CONTROL_FD`) forks one child per verification, ahead of it
(the child waits for its job, so a verification does not wait for the fork). The child receives, through the zygote,
the three descriptors sent over the control socket: the job socket (to the verifier), the request pipe (to the
candidate sandbox) and the reply pipe (from it); with them comes the job's test (the dataset's), which the zygote then
prepares for the children it forks next (judge_prepared.py). The test code runs here, never in the sandbox: every
call of a candidate function becomes a request carrying its arguments, and the reply is decoded as plain builtin data,
so the `==` of an assert is always the builtin one and the expected values never leave this process.

This file is the judge process itself: the fork server and each child's limits (address space, CPU seconds, and an
alarm at the deadline); Python's limit on int-to-str conversions stays on, so a candidate's huge integer cannot make
the judge spend minutes printing it. The rest lives next to it: judge_formats.py (which format, which verdict),
judge_prepared.py (a test parsed, rewritten and compiled once per test),
judge_namespace.py (what the test code sees of the candidate), judge_proxy.py (the candidate's functions as proxies),
and formats_*.py (each format). A candidate's exception reaches the test code with its builtin type
(`pytest.raises(ValueError)` works); a sandbox that dies raises CandidateGone, which no test code can catch
(formats_units.py). An exception of the judge's own code while it handles the candidate's data (JudgeFault, or any
exception that escapes the formats) is reported as `judge_error`, never as a failing test.
"""

import gc
import json
import os
import resource
import signal
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from formats_units import CandidateFailure, CandidateGone, JudgeFault, describe  # noqa: E402
from judge_formats import judge  # noqa: E402
from judge_prepared import NOTES, PREPARED, remember  # noqa: E402
from judge_proxy import Session  # noqa: E402
from protocol import MAX_MESSAGE_BYTES, MAX_TEST_NOTE_BYTES, LineReader, encode, write_message  # noqa: E402

MAX_TEXT, MAX_ITEMS = 1000, 20  # what a verdict may hold of the candidate's text and values


def apply_limits(job: dict) -> None:
    """The child's own limits, as sent by the verifier: address space, and CPU seconds (SIGXCPU ends the child)."""
    memory, cpu = int(job.get("memory_mb", 4096)) << 20, int(job.get("cpu_s", 60))
    for limit, soft, hard in ((resource.RLIMIT_AS, memory, memory), (resource.RLIMIT_CPU, cpu, cpu + 1)):
        current = resource.getrlimit(limit)[1]
        if current != resource.RLIM_INFINITY:
            soft, hard = min(soft, current), min(hard, current)
        resource.setrlimit(limit, (soft, hard))


def bounded(value, depth: int = 0):
    """A verdict as plain data of bounded size: strings cut to MAX_TEXT characters, lists to MAX_ITEMS items (the
    candidate's error text and values reach the verdict; the verifier reads it whole)."""
    if type(value) is str:
        return value[:MAX_TEXT]
    if type(value) in (int, float, bool) or value is None:
        return value
    if depth > 3:
        return "..."
    if type(value) is list:
        return [bounded(item, depth + 1) for item in value[:MAX_ITEMS]]
    if type(value) is dict:
        return {str(k)[:MAX_TEXT]: bounded(v, depth + 1) for k, v in list(value.items())[:MAX_ITEMS]}
    return str(type(value).__name__)


def run_job(job_fd: int, request_fd: int, reply_fd: int, received: float = 0.0) -> None:
    forked, cpu_at_fork = time.monotonic(), time.process_time()
    job = LineReader(job_fd, MAX_MESSAGE_BYTES).read_message()
    job_read = time.monotonic()
    if job is None:
        return
    write_message(job_fd, {"judge_pid": os.getpid()})  # the verifier watches whether this process runs (its clock)
    signal.alarm(max(1, int(job.get("deadline_s", 60))))  # a backstop: the verifier also enforces its deadline
    apply_limits(job)
    budget_s, reply_memory_mb = float(job.get("candidate_budget_s", float("inf"))), job.get("reply_memory_mb")
    session = Session(
        request_fd, reply_fd, budget_s, int(reply_memory_mb) if reply_memory_mb else None,
        on_calls=lambda calls: report_calls(job_fd, calls),
    )  # fmt: skip
    try:
        verdict = judge(job, session)
    except (CandidateFailure, CandidateGone) as exc:
        verdict = {"total": None, "passed": 0, "error": f"candidate_error: {exc}"}
    except JudgeFault as exc:
        verdict = {"judge_error": str(exc)}
    except Exception as exc:  # the test code's exceptions are judged inside judge(): what escapes is the judge's own
        verdict = {"judge_error": describe(exc)}
    os.close(request_fd)  # end of file tells the candidate harness to exit
    if job.get("stages"):  # the benchmark's readings (sandbox/stages.py): the sandbox's, relayed, then the judge's
        usage = resource.getrusage(resource.RUSAGE_SELF)
        judge_events = {
            "judge_received": received, "judge_forked": forked, "judge_job_read": job_read,
            "judge_verdict": time.monotonic(),
        }  # fmt: skip
        if session.prepared is not None:
            judge_events.update(
                judge_prepared=session.prepared[0], judge_prepare_cpu_s=session.prepared[1] - cpu_at_fork
            )
        verdict["t"] = {
            **(session.events or {}), **judge_events,
            "judge_cpu_s": usage.ru_utime + usage.ru_stime, "judge_faults": usage.ru_minflt,
        }  # fmt: skip
    write_message(job_fd, bounded(verdict))


def report_calls(job_fd: int, calls: int) -> None:
    """Tell the verifier how many requests the candidate has answered so far: its clock credits each one's transport
    (code/clock.py). A verifier that no longer listens has its verdict already, or has stopped the candidate."""
    try:
        write_message(job_fd, {"calls": calls})
    except OSError:
        pass


def spare_child(control: socket.socket, spares: list) -> socket.socket:
    """Fork a child ahead of its job, so that a verification does not wait for the fork: it waits on a socket of its
    own for the job's three descriptors (and the time the zygote received them), runs the job and exits. Returns
    the zygote's end of that socket. Each child is still a fresh fork of the zygote, used for one job only."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    if os.fork() == 0:
        try:
            for held in (control, ours, *spares):
                held.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            message, fds, _, _ = socket.recv_fds(theirs, 64, 3)
            theirs.close()
            if message and len(fds) == 3:
                run_job(*fds, float(message))
        finally:
            os._exit(0)
    theirs.close()
    return ours


def hand_over(spares: list, fds: list, received: float) -> bool:
    """Give the job's descriptors to a waiting child; False if none took them (one that died while it waited)."""
    while spares:
        child = spares.pop(0)
        try:
            socket.send_fds(child, [repr(received).encode()], fds)
            return True
        except OSError:
            pass
        finally:
            child.close()
    return False


# What the zygote judges once before it forks any child (warm_up): assert-style, HumanEval and pytest-style tests.
WARM_UP_JOBS = (
    {"test": "assert add(1, 2) == 3\nassert add(5, 7) == 12\nassert add(-4, 4) == 0\n", "entry_point": None},
    {"test": "def check(candidate):\n    assert candidate(1, 2) == 3\n    assert candidate([1], [2]) == [1, 2]\n"
     "    assert candidate('a', 'b') == 'ab'\n", "entry_point": "add"},
    {"test": "from solution import add\n\ndef test_numbers():\n    assert add(1, 2) == 3\n\n"
     "def test_lists():\n    assert add([1], [2]) == [1, 2]\n\nclass TestText:\n    def test_text(self):\n"
     "        assert add('a', 'b') == 'ab'\n", "entry_point": None},
)  # fmt: skip
WARM_UP_RESULTS = (3, 12, 0), (3, [1, 2], "ab"), (3, [1, 2], "ab")  # what a correct `add` returns to each job's calls


def warm_up() -> list[dict]:
    """Judge WARM_UP_JOBS in the zygote, against replies written ahead for a correct candidate (no sandbox runs), and
    return the verdicts: each job once with its test prepared in the child's way and once as the zygote prepares it
    ahead (judge_prepared.py). What the judge's code builds the first time it runs (Python's type-attribute cache, the
    specialised bytecode of each function, objects made on first use) is then made once here, in pages every child
    shares, rather than in each child, where each write copies a page: measured in docs/benchmarks.md. Nothing of
    any candidate or dataset is in it: the jobs and the replies are these constants, and the prepared tests are
    dropped afterwards."""
    verdicts = []
    for job, results in zip(WARM_UP_JOBS, WARM_UP_RESULTS):
        job = {**job, "module": "solution"}
        for ahead in (False, True):
            if ahead:
                remember(json.dumps(job).encode())
            verdicts.append(bounded(judge_replayed(job, results)))
    PREPARED.clear()
    NOTES.clear()
    return verdicts


def judge_replayed(job: dict, results: tuple) -> dict:
    """`job` judged against the replies a correct candidate returning `results` gives, written ahead into a pipe."""
    request_r, request_w = os.pipe()
    reply_r, reply_w = os.pipe()
    try:
        replies = [{"setup": "ok"}, {"ready": True, "globals": {"add": "callable"}}]
        replies += [{"id": n, "ok": True, "value": encode(value)} for n, value in enumerate(results, 1)]
        for reply in replies:  # a few hundred bytes: the pipe holds them, and the judge's requests
            write_message(reply_w, reply)
        return judge(job, Session(request_w, reply_r, 10.0))
    finally:
        for fd in (request_r, request_w, reply_r, reply_w):
            os.close(fd)


def main() -> None:
    control = socket.socket(fileno=int(sys.argv[1]))
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel
    try:
        warm_up()
    except Exception:  # only ever a lost speed-up: every child still judges from scratch
        pass
    gc.freeze()  # what the judge has loaded stays out of its children's collections, so they share its pages
    spares = [spare_child(control, [])]
    while True:
        message, fds, _, _ = socket.recv_fds(control, MAX_TEST_NOTE_BYTES + 16, 3)
        received = time.monotonic()
        if not message:
            return
        if len(fds) == 3 and not hand_over(spares, fds, received) and os.fork() == 0:
            control.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            try:
                run_job(*fds, received)
            finally:
                os._exit(0)
        for fd in fds:
            os.close(fd)
        if len(message) > 1:  # the job's test (the dataset's): prepared for the children forked from now on
            remember(message[1:])
        if not spares:  # the next child is forked once this job's descriptors are closed here: it holds none of them
            spares.append(spare_child(control, spares))


if __name__ == "__main__":
    main()
