"""The trusted side of a code verification: runs the hidden test code against proxies of the candidate's functions.

A zygote started once per verifier (`python -I code_judge.py CONTROL_FD`) forks one child per verification. The child
receives three descriptors over the control socket: the job socket (to the verifier), the request pipe (to the
candidate sandbox) and the reply pipe (from it). The test code runs here, never in the sandbox: every call of a
candidate function becomes a request carrying its arguments, and the reply is decoded as plain builtin data, so the
`==` of an assert is always the builtin one and the expected values never leave this process.

The test format decides what counts as one test: an assert statement (assert-style and HumanEval,
code_formats_asserts.py), a test function or method (pytest-style and unittest modules, code_formats_modules.py), or
a call (call-based cases, code_formats_calls.py). A candidate's exception reaches the test code with its builtin type
(`pytest.raises(ValueError)` works); a sandbox that dies raises CandidateGone, which no test code can catch
(code_formats_units.py).

Test code that cannot run is the reference's fault, not the candidate's, and gives an `unusable` verdict: it does not
parse, it imports a module this interpreter lacks, it uses a standard module it never imported, or it raises before
anything from the candidate reached it. Each child runs under its own limits (address space, CPU seconds, and an
alarm at the deadline), and Python's limit on int-to-str conversions stays on: a candidate's huge integer cannot make
the judge spend minutes printing it.
"""

import ast
import builtins
import importlib
import os
import resource
import signal
import socket
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from formats_asserts import AssertRecorder, Tally  # noqa: E402
from formats_calls import judge_cases  # noqa: E402
from formats_modules import (  # noqa: E402
    JUDGE_MODULE,
    ImportRewriter,
    count_tests,
    is_test_module,
    process_tool,
    run_test_module,
)  # noqa: E402
from formats_pytest import make_stand_in  # noqa: E402
from formats_units import (  # noqa: E402
    CandidateFailure,
    CandidateGone,
    ReferenceFault,
    UnitTally,
    UnsupportedTest,
    candidate_raised,
    describe,
)
from protocol import (  # noqa: E402
    MAX_MESSAGE_BYTES,  # noqa: E402
    LineReader,
    ProtocolError,
    Unrepresentable,
    decode,
    encode,
    write_message,
)

TEST_FILE = "<test>"
# Importing these has side effects a test never needs; a candidate could name them as its "module" globals.
UNIMPORTABLE = {"antigravity", "this", "idlelib", "tkinter", "turtle", "turtledemo"}


def reference_fault(exc: BaseException, session: "Session") -> str | None:
    """Why `exc`, raised by the test code, is the test's fault rather than the candidate's; None if it may not be.

    A NameError for any other name is the candidate's: it did not define the function the test calls.
    """
    if isinstance(exc, UnsupportedTest):
        return str(exc)
    if isinstance(exc, CandidateFailure):
        return None
    if isinstance(exc, ImportError):
        hint = ""
        if isinstance(exc, ModuleNotFoundError) and exc.name and exc.name not in sys.stdlib_module_names:
            hint = f" (if {exc.name!r} is the solution's module, pass solution_module={exc.name!r})"
        return f"the test code cannot import what it needs: {describe(exc)}{hint}"
    if isinstance(exc, NameError):
        name = getattr(exc, "name", None)
        if name in sys.stdlib_module_names:
            return f"the test code uses the module {name!r} without importing it"
        return None
    if not session.touched:  # nothing from the candidate has reached the test code yet
        return f"the test code raised {describe(exc)} before using the candidate"
    return None


class Session:
    """Request/reply conversation with one candidate sandbox."""

    def __init__(self, request_fd: int, reply_fd: int):
        self.request_fd = request_fd
        self.replies = LineReader(reply_fd, MAX_MESSAGE_BYTES)
        self.next_id = 0
        self.gone = None
        self.touched = False  # something the candidate provided reached the test code (see `reference_fault`)

    def read_message(self):
        try:
            message = self.replies.read_message()
        except (ProtocolError, OSError, MemoryError, RecursionError) as exc:  # a reply too big for the judge
            message, self.gone = None, f"unreadable reply: {describe(exc)}"
        if message is None:
            self.gone = self.gone or "the candidate sandbox ended"
            raise CandidateGone(self.gone)
        return message

    def request(self, op: str, target: dict, **fields):
        self.touched = True
        if self.gone:
            raise CandidateGone(self.gone)
        self.next_id += 1
        try:
            write_message(self.request_fd, {"id": self.next_id, "op": op, "target": target, **fields})
        except OSError as exc:
            self.gone = f"the candidate sandbox stopped reading ({exc})"
            raise CandidateGone(self.gone) from None
        reply = self.read_message()
        if reply.get("id") != self.next_id or type(reply.get("ok")) is not bool:
            self.gone = "reply out of sequence"
            raise CandidateGone(self.gone)
        if not reply["ok"]:
            raise candidate_raised(str(reply.get("error"))[:300])
        try:
            return reply, decode(reply.get("value"), self.make_handle)
        except (ProtocolError, MemoryError, RecursionError) as exc:
            raise CandidateFailure(f"reply is not plain data: {describe(exc)}") from None

    def make_handle(self, number: int, type_name: str):
        return RemoteObject(self, {"h": number}, type_name)

    def call(self, target: dict, args: tuple, kwargs: dict):
        encoded_args = [encode(a, remote_reference) for a in args]
        encoded_kwargs = {str(k): encode(v, remote_reference) for k, v in kwargs.items()}
        reply, value = self.request("call", target, args=encoded_args, kwargs=encoded_kwargs)
        apply_mutations(args, reply.get("args_after"), self.make_handle)
        return value


def remote_reference(obj):
    if isinstance(obj, RemoteObject) and "h" in obj._target:
        return dict(obj._target)
    raise UnsupportedTest(f"the test passes a {type(obj).__name__} to the candidate; only plain data can be sent")


def apply_mutations(args: tuple, after, make_handle) -> None:
    """Mirror in-place changes the candidate made to list, dict and set arguments (e.g. an in-place sort)."""
    if type(after) is not list or len(after) != len(args):
        return
    for arg, new in zip(args, after):
        if new is None or type(arg) not in (list, dict, set):
            continue
        try:
            value = decode(new, make_handle)
        except ProtocolError:
            continue
        if type(value) is type(arg):
            arg.clear()
            arg.update(value) if type(arg) is not list else arg.extend(value)


class RemoteObject:
    """A candidate function, class or object. It can be called, its attributes read, and iterated; it cannot be
    compared, hashed or tested for truth, so it can never stand in for an expected value."""

    def __init__(self, session: Session, target: dict, type_name: str = "function"):
        self._session = session
        self._target = target
        self._type_name = type_name

    def __call__(self, *args, **kwargs):
        return self._session.call(self._target, args, kwargs)

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return self._session.request("getattr", self._target, attr=attr)[1]

    def __iter__(self):
        return iter(self._session.request("iter", self._target)[1])

    def _refuse(self, *_):
        self._session.touched = True
        raise TypeError(f"a {self._type_name} from the candidate is not plain data and cannot be compared")

    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = __bool__ = __hash__ = __len__ = _refuse

    def __repr__(self):
        return f"<candidate {self._type_name}>"


def _stdlib_module(name: str):
    top = name.partition(".")[0]
    if top not in sys.stdlib_module_names or top in UNIMPORTABLE:
        return None
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


_UNBOUND = object()
RESERVED = {"pytest"}  # the test's own tools: a candidate name never replaces them


def bind_candidate(session: Session, kinds: dict, referenced: set) -> dict:
    """The test's namespace: candidate callables as proxies, its stdlib imports re-imported here, values fetched.

    Names of builtins are never bound, and a name of a standard-library module is always the real module: a candidate
    defining `sorted`, or a `math` whose `isclose` always agrees, must not rewrite the test's own tools.
    """
    namespace = {"__name__": JUDGE_MODULE, "__builtins__": builtins}
    for name, kind in kinds.items():
        if not isinstance(name, str) or not name.isidentifier() or hasattr(builtins, name) or name not in referenced:
            continue
        value = bind_name(session, name, kind) if name not in RESERVED else _UNBOUND
        if value is not _UNBOUND:
            namespace[name] = value
    return namespace


def bind_name(session: Session, name: str, kind):
    """What the test sees for one of the candidate's names (`_UNBOUND` for a module it must not import)."""
    if name in sys.stdlib_module_names:
        kind = f"module:{name}"
    if kind == "callable":
        return RemoteObject(session, {"name": name})
    if isinstance(kind, str) and kind.startswith("module:"):
        module = _stdlib_module(kind.split(":", 1)[1])
        if module is not None and name not in sys.stdlib_module_names:
            session.touched = True  # the candidate chose what this name is: `import math as add`
        return _UNBOUND if module is None else module
    if kind == "value":
        return session.request("get", {"name": name})[1]
    return _UNBOUND


class CandidateModule:
    """The solution's module in a test module: `import solution` binds it, `from solution import f` reads `f` from it.
    Reading a name the completion does not define raises ImportError, as importing it would."""

    def __init__(self, session: Session, kinds: dict, module: str):
        self._session, self._kinds, self._module = session, kinds, module

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        value = bind_name(self._session, name, self._kinds[name]) if name in self._kinds else _UNBOUND
        if value is _UNBOUND:
            raise candidate_raised(f"ImportError: cannot import name {name!r} from {self._module!r}")
        return value

    def star(self, names: dict, referenced: set) -> None:
        """`from solution import *`: the public names the test uses, except test names (`test_*`, `Test*`): a
        candidate's own `test_add` never replaces the test's."""
        bound = bind_candidate(self._session, self._kinds, referenced)
        names.update({k: v for k, v in bound.items() if not k.startswith(("_", "test", "Test"))})

    @staticmethod
    def unsupported(path: str):
        raise UnsupportedTest(f"the test imports {path!r}: only the solution's module itself comes from the candidate")


def candidate_class_name(obj) -> str | None:
    """The name of a candidate class given to pytest.raises (its exceptions are matched by that name)."""
    if isinstance(obj, RemoteObject) and "name" in obj._target:
        return obj._target["name"]
    return None


def judge(job: dict, session: Session) -> dict:
    """Run the test of `job` against the candidate, in the format its reference has; the verdict as plain data."""
    recorder = None
    if job.get("format") == "calls":
        kind, tree, total = "calls", None, len(job.get("cases") or ())
    else:
        try:
            tree = ast.parse(job["test"])
        except SyntaxError as exc:
            return {"unusable": f"the test code does not parse: {exc}"}
        if tool := process_tool(tree):
            return {"unusable": f"the test uses {tool}, which acts on the process running the test: the candidate "
                    "runs in another one, so its output, logs and warnings, or the patches, never cross"}  # fmt: skip
        check_name = job.get("check_name") or "check"
        defines_check = any(isinstance(n, ast.FunctionDef) and n.name == check_name for n in tree.body)
        if is_test_module(tree) and not (job.get("entry_point") and defines_check):  # BigCodeBench rows name one
            kind, total = "tests", count_tests(tree)
        else:
            recorder = AssertRecorder()
            kind, tree = "asserts", ast.fix_missing_locations(recorder.visit(tree))
            if not recorder.lines:
                return {"unusable": "the test code has no assert statement"}
            total = len(recorder.lines)
    started = start_candidate(session)
    if "globals" not in started:
        return {"total": total, **started}
    if kind == "calls":
        return judge_calls(job, session, started["globals"])
    if kind == "tests":
        return judge_test_module(job, session, tree, started["globals"])
    return judge_asserts(job, session, tree, recorder, started["globals"])


def start_candidate(session: Session) -> dict:
    """{"globals": the candidate's names and kinds} once its sandbox is set up and its code loaded; else a verdict."""
    try:
        setup = session.read_message()  # written by the harness before the candidate runs
    except CandidateGone as exc:
        return {"internal": f"the sandbox ended before running the candidate ({exc})"}
    if setup.get("setup") != "ok":
        return {"internal": f"the sandbox could not set up the candidate's limits: {str(setup.get('error'))[:300]}"}
    ready = session.read_message()
    if ready.get("ready") is not True or type(ready.get("globals")) is not dict:
        return {"passed": 0, "error": f"candidate_error: {ready.get('error')}"}
    return {"globals": ready["globals"]}


def judge_asserts(job: dict, session: Session, tree: ast.Module, recorder: AssertRecorder, kinds: dict) -> dict:
    """Assert-style test code, or HumanEval's `check(candidate)`: each assert statement counts."""
    tally = Tally(recorder.lines, lambda exc: reference_fault(exc, session), lambda: session.gone)
    referenced = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    entry_point = job.get("entry_point")
    error = None
    try:
        namespace = bind_candidate(session, kinds, referenced)
        namespace["__judge_assert__"] = tally
        exec(compile(tree, TEST_FILE, "exec"), namespace)
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
    except (Exception, SystemExit) as exc:
        fault = reference_fault(exc, session)
        if fault:
            return {"unusable": fault}
        error = f"candidate_error: {describe(exc)}" if isinstance(exc, CandidateFailure) else describe(exc)
    return {"total": len(recorder.lines), "passed": tally.passed(), "failures": tally.failures, "error": error}


def judge_test_module(job: dict, session: Session, tree: ast.Module, kinds: dict) -> dict:
    """pytest-style and unittest test modules (code_formats_modules.py): each test function or method counts.

    The solution's module (`solution` unless the job says otherwise) is the candidate: `from solution import f` binds
    a proxy of its `f`, as `import solution` binds one of the module; `import pytest` binds the stand-in."""
    module = job.get("module") or "solution"
    tree = ast.fix_missing_locations(ImportRewriter(module).visit(tree))
    referenced = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    tally = UnitTally(lambda exc: reference_fault(exc, session), lambda: session.gone)
    try:
        namespace = bind_candidate(session, kinds, referenced)
        solution = CandidateModule(session, kinds, module)
        namespace.update(
            __judge_import__=solution.__getattr__, __judge_module__=lambda: solution,
            __judge_star__=lambda names: solution.star(names, referenced),
            __judge_unsupported__=CandidateModule.unsupported, __judge_pytest__=make_stand_in(candidate_class_name),
        )  # fmt: skip
        exec(compile(tree, TEST_FILE, "exec"), namespace)
    except UnsupportedTest as exc:
        return {"unusable": str(exc)}
    except (Exception, CandidateGone, SystemExit) as exc:  # pytest fails every test of a module that does not load
        fault = None if isinstance(exc, CandidateGone) else reference_fault(exc, session)
        if fault:
            return {"unusable": fault}
        return {"total": count_tests(tree), "passed": 0, "error": f"candidate_error: {describe(exc)}"}
    try:
        run_test_module(namespace, tally, TEST_FILE)
    except UnsupportedTest as exc:
        return {"unusable": str(exc)}
    return tally.verdict()


def judge_calls(job: dict, session: Session, kinds: dict) -> dict:
    """Call-based cases (code_formats_calls.py); each case counts."""
    tally = UnitTally(lambda exc: reference_fault(exc, session), lambda: session.gone)
    return judge_cases(job, kinds, lambda name: RemoteObject(session, {"name": name}), tally)


def apply_limits(job: dict) -> None:
    """The child's own limits, as sent by the verifier: address space, and CPU seconds (SIGXCPU ends the child)."""
    memory, cpu = int(job.get("memory_mb", 4096)) << 20, int(job.get("cpu_s", 60))
    for limit, soft, hard in ((resource.RLIMIT_AS, memory, memory), (resource.RLIMIT_CPU, cpu, cpu + 1)):
        current = resource.getrlimit(limit)[1]
        if current != resource.RLIM_INFINITY:
            soft, hard = min(soft, current), min(hard, current)
        resource.setrlimit(limit, (soft, hard))


def run_job(job_fd: int, request_fd: int, reply_fd: int) -> None:
    job = LineReader(job_fd, MAX_MESSAGE_BYTES).read_message()
    if job is None:
        return
    signal.alarm(max(1, int(job.get("deadline_s", 60))))  # a backstop: the verifier also enforces its deadline
    apply_limits(job)
    session = Session(request_fd, reply_fd)
    try:
        verdict = judge(job, session)
    except (CandidateFailure, CandidateGone) as exc:
        verdict = {"total": None, "passed": 0, "error": f"candidate_error: {exc}"}
    os.close(request_fd)  # end of file tells the candidate harness to exit
    write_message(job_fd, verdict)


def main() -> None:
    control = socket.socket(fileno=int(sys.argv[1]))
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel
    while True:
        message, fds, _, _ = socket.recv_fds(control, 16, 3)
        if not message:
            return
        if len(fds) == 3 and os.fork() == 0:
            control.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            try:
                run_job(*fds)
            finally:
                os._exit(0)
        for fd in fds:
            os.close(fd)


if __name__ == "__main__":
    main()


__all__ = ["Unrepresentable", "judge"]
