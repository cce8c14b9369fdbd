"""Runs untrusted candidate code inside the sandbox and answers requests with plain data.

Started before the candidate is known (a warm sandbox): as `python -I -S harness.py REQUEST_FD REPLY_FD LIMITS`,
or, under bubblewrap as root, by `serve` in a child that the sandbox's fork server (zygote.py) forks per
candidate. It says `{"started": true}` on REPLY_FD, waits for one init message on REQUEST_FD, then applies its resource
limits, drops to an unprivileged uid, puts the allowed site-packages (if any) on `sys.path`, says `{"setup": "ok"}` (or
why not) and only then runs the candidate:

    {"mode": "functions", "code": str}  exec the code, report its global names, then serve one request per line:
        {"id": n, "op": "call" | "getattr" | "iter" | "next" | "get", "target": {"name": str} | {"h": n}, ...}
    {"mode": "script", "code": str, "stdin": str}  run the code as __main__; its stdout is the answer

Nothing this process sends is trusted: the candidate shares the interpreter and may rewrite any of it. That is why
only the inputs of the tests ever come in here, and why whatever goes out is decoded as plain data by the judge,
which alone holds the expected values and does the comparisons.
"""

import builtins
import ctypes
import json
import os
import resource
import struct
import sys
import time
import traceback
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from protocol import (  # noqa: E402
    ITERATOR,
    MAX_REQUEST_BYTES,
    LineReader,
    decode,
    dumps,
    encode,
    roomy,
    write_message,
)

MAX_NEXT_ITEMS = 1 << 12  # items of an iterator per request: the judge asks for 1, 2, 4, ... as it consumes them
DATA_TYPES = (list, dict, set)


def install_site_builtins() -> None:
    """What `site` puts in builtins, which the sandbox's `python -S` lacks: `exit()` and `quit()` (they raise
    SystemExit with their code, as in plain Python), `help`, `copyright`, `credits` and `license`. Only `site`'s
    functions that set these builtins run (`-S` keeps its `main()` from running on import): `sys.path` stays as it is.
    Run once when this module is imported (in the fork server, before any candidate)."""
    import site

    site.setquit()
    site.setcopyright()
    site.sethelper()


install_site_builtins()


def describe(exc: BaseException) -> str:
    try:
        return f"{type(exc).__name__}: {str(exc)[:300]}"
    except BaseException:  # a candidate's exception may break __str__ on purpose
        return type(exc).__name__


# seccomp, per architecture: (unshare, clone, clone3), then the calls denied outright: add_key, request_key, keyctl (the
# kernel's keyrings are not namespaced: a key would outlive the candidate and reach the next one of its uid), bpf, and
# inotify_init(1) and fanotify_init (the read-only interpreter folder shares its inodes with the judge's: a watch would
# see which modules the hidden test imports, and other candidates at work).
SYSCALLS = {
    0xC000003E: ((272, 56, 435), (248, 249, 250, 321, 253, 294, 300)),  # x86_64
    0x40000003: ((310, 120, 435), (286, 287, 288, 357, 291, 332, 338)),  # i386
    0xC00000B7: ((97, 220, 435), (217, 218, 219, 280, 26, 262)),  # aarch64 (no inotify_init)
}
KEYCTL = {"x86_64": 250, "i686": 288, "aarch64": 219}  # the native keyctl, to join a session keyring before the filter
CLONE_NEWUSER, X32_SYSCALL_BIT, KEYCTL_JOIN_SESSION_KEYRING = 0x10000000, 0x40000000, 1
RET_ALLOW, RET_EPERM, RET_ENOSYS = 0x7FFF0000, 0x00050000 | 1, 0x00050000 | 38


def _syscall_filter() -> bytes:
    """A classic BPF program: unshare and clone with CLONE_NEWUSER fail with EPERM, as do the denied calls and x32
    system calls; clone3, whose flags a filter cannot read, fails with ENOSYS (the C library then falls back to
    clone, as under container runtimes). Everything else is allowed."""
    load, jeq, jge, jset, ret = 0x20, 0x15, 0x35, 0x45, 0x06
    program = [(load, 0, 0, 4)]  # seccomp_data.arch
    offset = len(SYSCALLS) + 1  # the first block follows the dispatch and its final ALLOW
    for index, (arch, (_, denied)) in enumerate(SYSCALLS.items()):
        program.append((jeq, offset - index - 1, 0, arch))
        offset += 10 + len(denied)
    program.append((ret, 0, 0, RET_ALLOW))
    for (unshare, clone, clone3), denied in SYSCALLS.values():
        k = len(denied)  # the block's last three instructions are at 7 + k (ALLOW), 8 + k (EPERM), 9 + k (ENOSYS)
        program += [(load, 0, 0, 0), (jge, 6 + k, 0, X32_SYSCALL_BIT), (jeq, 6 + k, 0, clone3)]  # nr; 1; 2
        program += [(jeq, 8 + k - (3 + i) - 1, 0, nr) for i, nr in enumerate(denied)]  # 3 .. 2 + k
        program += [
            (jeq, 1, 0, unshare),  # 3 + k: to 5 + k
            (jeq, 0, 2, clone),  # 4 + k: to 5 + k, else to 7 + k
            (load, 0, 0, 16),  # 5 + k: the low 32 bits of the first argument, the flags of unshare and clone
            (jset, 1, 0, CLONE_NEWUSER),  # 6 + k: to 8 + k
            (ret, 0, 0, RET_ALLOW),
            (ret, 0, 0, RET_EPERM),
            (ret, 0, 0, RET_ENOSYS),
        ]
    return b"".join(struct.pack("HBBI", *instruction) for instruction in program)


class KernelRestriction:
    """What `restrict_kernel_objects` needs, made once: the C library's functions, the native keyctl number and the
    seccomp program. Building them costs ctypes a few new types per process (about half a millisecond); the fork
    server (zygote.py) makes them before it forks, so each candidate inherits them. They hold constants only, and
    are used before any candidate code runs."""

    def __init__(self):
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.syscall, self.prctl = self.libc.syscall, self.libc.prctl
        self.keyctl = KEYCTL.get(os.uname().machine)
        program = _syscall_filter()
        self.buffer = ctypes.create_string_buffer(program)
        self.fprog = ctypes.c_char_p(struct.pack("HP", len(program) // 8, ctypes.addressof(self.buffer)))


_RESTRICTION: list = []  # the one KernelRestriction of this process, once made


def prepare_kernel_restriction() -> KernelRestriction:
    if not _RESTRICTION:
        _RESTRICTION.append(KernelRestriction())
    return _RESTRICTION[0]


def restrict_kernel_objects() -> None:
    """A session keyring of its own (the one inherited from the trainer may hold its keys), then a seccomp filter: no
    user namespace (inside one it could mount a tmpfs and reach kernel code unprivileged users otherwise cannot:
    bubblewrap's `--disable-userns` does this for a sandbox it gives a user namespace, but as root it gives none), no
    keys, no BPF, no inotify or fanotify. What else a candidate can create ends with its namespaces (System V IPC and
    POSIX message queues with its IPC namespace, sockets with its network namespace, files with its /tmp) or with its
    processes (memfd files, timers, eventfds, locks)."""
    kernel = prepare_kernel_restriction()
    if kernel.keyctl is not None and kernel.syscall(kernel.keyctl, KEYCTL_JOIN_SESSION_KEYRING, None) < 0:
        raise OSError(ctypes.get_errno(), "cannot join a session keyring of its own")
    if kernel.prctl(38, 1, 0, 0, 0) != 0 or kernel.prctl(22, 2, kernel.fprog, 0, 0) != 0:  # NO_NEW_PRIVS, SECCOMP
        raise OSError(ctypes.get_errno(), "cannot install the seccomp filter")


def apply_limits(limits: dict) -> None:
    """rlimits first (RLIMIT_NPROC counts per uid, so it must be set while still allowed), then the uid drop."""
    for name, (soft, hard) in limits["rlimits"].items():
        resource.setrlimit(getattr(resource, name), (soft, hard))
    uid = limits.get("uid")
    if uid is not None:
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
    mark(limits, "harness_uid_dropped")
    restrict_kernel_objects()  # after the uid drop: the new session keyring belongs to the candidate's uid
    os.chdir(limits["workdir"])
    sys.path.extend(limits.get("path") or ())  # site-packages, with `site_packages=True`; read-only where mounted


class Handles:
    """Objects that are not plain data stay here; the judge refers to them by number, one number per object (an
    iterator the judge advances must be one stream however often it comes back: `iter(gen) is gen`; an exception class
    is one class however often its exceptions are raised)."""

    def __init__(self):
        self.objects = {}
        self.numbers = {}  # id(obj) -> number; the objects are kept alive, so ids are not reused

    def number(self, obj) -> int:
        number = self.numbers.get(id(obj))
        if number is None:
            number = self.numbers[id(obj)] = len(self.objects) + 1
            self.objects[number] = obj
        return number

    def add(self, obj):
        number = self.number(obj)
        # The judge proxies an iterator with next(); any other object without it (its type's name is not used).
        is_iterator = hasattr(type(obj), "__next__") and hasattr(type(obj), "__iter__")
        return {"h": number, "type": ITERATOR if is_iterator else "object"}

    def get(self, number, _type_name=None):
        return self.objects[number]


def global_kinds(namespace: dict) -> dict:
    """Name -> "module:<name>", "exception" (an exception class), "callable" or "value" for the candidate's public
    globals."""
    kinds = {}
    for name, value in namespace.items():
        if name.startswith("__"):
            continue
        if type(value) is types.ModuleType:
            kinds[name] = "module:" + str(getattr(value, "__name__", ""))
        elif isinstance(value, type) and issubclass(value, BaseException):
            kinds[name] = "exception"
        else:
            kinds[name] = "callable" if callable(value) else "value"
    return kinds


def answer(request: dict, namespace: dict, handles: Handles) -> dict:
    request_id = request.get("id")
    try:
        target = request["target"]
        obj = namespace[target["name"]] if "name" in target else handles.get(target["h"])
        op = request["op"]
        if op == "call":
            args, kwargs = roomy(decode_arguments, request, handles)
            value = obj(*args, **kwargs)
            return roomy(call_reply, request, value, args, kwargs, handles)
        if op == "next":
            return next_items(request_id, obj, request.get("count"), handles)
        if op == "class":  # a global the judge was told is an exception class (global_kinds): how it is made
            return {"id": request_id, "ok": True, "class": exception_class(obj, handles)}
        if op == "getattr":
            value = getattr(obj, request["attr"])
        elif op == "iter":
            value = iter(obj)
        elif op == "get":
            value = obj
        else:
            raise ValueError(f"unknown op {op!r}")
        return {"id": request_id, "ok": True, "value": roomy(encode, value, handles.add)}
    except BaseException as exc:  # SystemExit too: a call that exits has not returned a value
        return {"id": request_id, "ok": False, "error": describe(exc), **raised_class(exc, handles)}


def decode_arguments(request: dict, handles: Handles) -> tuple[list, dict]:
    args = [decode(a, handles.get) for a in request["args"]]
    return args, {k: decode(v, handles.get) for k, v in request["kwargs"].items()}


def call_reply(request: dict, value, args: list, kwargs: dict, handles: Handles) -> dict:
    """The value a call returned, and the list, dict and set arguments it changed (mirrored in the judge)."""
    after = [changed(a, sent, handles) for a, sent in zip(args, request["args"])]
    kwargs_after = {k: changed(v, request["kwargs"][k], handles) for k, v in kwargs.items()}
    kwargs_after = {k: v for k, v in kwargs_after.items() if v is not None}
    reply = {"id": request.get("id"), "ok": True, "value": encode(value, handles.add), "args_after": after}
    return {**reply, "kwargs_after": kwargs_after} if kwargs_after else reply


def changed(argument, sent, handles: Handles):
    """A list, dict or set argument as the call left it, or None when it is as it was sent (nothing to send back)."""
    if type(argument) not in DATA_TYPES:
        return None
    now = encode(argument, handles.add)
    return None if now == sent else now


def next_items(request_id, iterator, count, handles: Handles) -> dict:
    """Up to `count` items of `next(iterator)`; "done" once it is exhausted; an exception after some items comes
    with them, so that the judge raises it where plain iteration would (a generator that raised is over)."""
    items, reply = [], {"id": request_id, "ok": True, "done": False}
    try:
        for _ in range(max(1, min(int(count), MAX_NEXT_ITEMS))):
            items.append(next(iterator))
    except StopIteration:
        reply["done"] = True
    except BaseException as exc:
        if not items:
            raise
        reply["raised"] = {"error": describe(exc), **raised_class(exc, handles)}
    return {**reply, "value": roomy(encode, items, handles.add)}


# The builtin exception classes, as this interpreter has them before any candidate code runs (the fork server imports
# this module): a class is reported as a builtin only when it is that very object, never by its name.
BUILTIN_EXCEPTIONS = {
    name: obj for name, obj in vars(builtins).items() if isinstance(obj, type) and issubclass(obj, BaseException)
}
MAX_EXCEPTION_CLASSES = 64  # of one exception's class and its ancestors


def raised_class(exc: BaseException, handles: Handles) -> dict:
    """The class of an exception the candidate raised (`exception_class`), and a SystemExit's code."""
    try:
        found = {"class": exception_class(type(exc), handles)}
        if isinstance(exc, SystemExit):
            found["code"] = encode(exc.code)
        return found
    except BaseException:  # a class made to break this: the judge then knows nothing of it (see formats_units.py)
        return {}


def exception_class(cls, handles: Handles) -> dict | None:
    """An exception class as the judge rebuilds it, by identity, never by name: {"type": ref, "own": [[number, name,
    [ref of each base], module, qualname], ...]}, where a ref is the name of a builtin exception class that `cls` (or
    the base) is, or the number of a class that is not a builtin, listed in "own" with its real bases (those that are
    exception classes) and, for a class of a standard-library module (`json.JSONDecodeError`), where the judge finds
    its own copy of it (formats_units.CandidateClasses decides whether to). A candidate's `class
    ValueError(BaseException)` is a class of its own named ValueError, whose base is the builtin BaseException. None
    when `cls` is not an exception class."""
    if not (isinstance(cls, type) and issubclass(cls, BaseException)):
        return None

    def ref(c):
        return c.__name__ if BUILTIN_EXCEPTIONS.get(c.__name__) is c else handles.number(c)

    own = []
    for c in [c for c in cls.__mro__ if issubclass(c, BaseException)][:MAX_EXCEPTION_CLASSES]:
        if BUILTIN_EXCEPTIONS.get(c.__name__) is not c:
            bases = [ref(b) for b in c.__bases__ if issubclass(b, BaseException)]
            entry = [handles.number(c), str(c.__name__)[:100], bases[:MAX_EXCEPTION_CLASSES]]
            module = getattr(c, "__module__", None)
            if type(module) is str and module.partition(".")[0] in sys.stdlib_module_names:
                entry += [module[:200], str(c.__qualname__)[:200]]
            own.append(entry)
    return {"type": ref(cls), "own": own}


def module_namespace(name: str) -> dict:
    """The globals of a module `name` registered in `sys.modules`, as the candidate's code runs in: what the code
    defines can be found by its module's name, as plain Python finds a script's (`__main__`) or an imported module's
    (`pickle`, and so `multiprocessing.Pool.map` and `ProcessPoolExecutor`, send functions by that name)."""
    module = types.ModuleType(name)
    module.__builtins__ = builtins
    sys.modules[name] = module
    return module.__dict__


def serve_functions(code: str, requests: LineReader, reply_fd: int) -> None:
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 1)  # printing is allowed, but stdout is not a channel in this mode
    os.dup2(devnull, 2)
    namespace = module_namespace("candidate")
    try:
        exec(compile(code, "<candidate>", "exec"), namespace)
    except BaseException as exc:  # sys.exit() at import must not look like success
        write_message(reply_fd, {"ready": False, "error": describe(exc)})
        return
    write_message(reply_fd, {"ready": True, "globals": global_kinds(namespace)})
    handles = Handles()
    while (request := roomy(requests.read_message)) is not None:
        roomy(write_message, reply_fd, answer(request, namespace, handles))


# What the fork server runs once before it forks any candidate (warm_up): a constant program and calls of it.
WARM_UP_CODE = "def add(a, b):\n    return a + b\n"
WARM_UP_REQUESTS = (
    {"id": 1, "op": "call", "target": {"name": "add"}, "args": [1, 2], "kwargs": {}},
    {"id": 2, "op": "call", "target": {"name": "add"}, "args": [[1], [2]], "kwargs": {}},
    {"id": 3, "op": "call", "target": {"name": "add"}, "args": ["a"], "kwargs": {"b": "b"}},
)


def warm_up() -> list[dict]:
    """Load WARM_UP_CODE and answer WARM_UP_REQUESTS as `serve_functions` does, without limits or descriptors of any
    candidate, and return the replies. The fork server (zygote.py) runs it before it forks any child: what this
    code builds the first time it runs (Python's type-attribute cache, specialised bytecode, objects made on first
    use) is then made once, in pages every candidate shares, rather than in each candidate, where each write copies a
    page. Nothing of any candidate is in it: the program and the requests are these constants."""
    namespace = {"__name__": "candidate", "__builtins__": builtins}
    exec(compile(WARM_UP_CODE, "<candidate>", "exec"), namespace)
    replies, handles = [{"ready": True, "globals": global_kinds(namespace)}], Handles()
    request_r, request_w = os.pipe()
    try:
        for request in WARM_UP_REQUESTS:
            write_message(request_w, request)
        os.close(request_w)
        request_w = -1
        requests = LineReader(request_r, MAX_REQUEST_BYTES)
        while (request := roomy(requests.read_message)) is not None:
            replies.append(answer(request, namespace, handles))
            dumps(replies[-1])
    finally:
        for fd in (request_r, request_w):
            if fd >= 0:
                os.close(fd)
    return replies


def run_script(code: str, stdin_text: str) -> None:
    sys.argv = ["main.py"]
    namespace = module_namespace("__main__")  # `python main.py`: the script is the module `__main__`
    namespace["__file__"] = "main.py"
    try:
        exec(compile(code, "main.py", "exec"), namespace)
    except SystemExit:
        raise
    except BaseException:
        traceback.print_exc()
        sys.exit(1)


def stdin_from_text(text: str) -> None:
    """Make fd 0 a file holding `text`, so `input()`, `sys.stdin` and `open(0)` all see it."""
    fd = os.memfd_create("stdin")
    data = text.encode()
    while data:
        data = data[os.write(fd, data) :]
    os.lseek(fd, 0, os.SEEK_SET)
    os.dup2(fd, 0)
    os.close(fd)


def set_up(limits: dict, reply_fd: int) -> None:
    """Apply the limits and report on `reply_fd`, before any candidate code runs (so the candidate cannot forge it)."""
    try:
        apply_limits(limits)
    except BaseException as exc:
        write_message(reply_fd, {"setup": "failed", "error": describe(exc)})
        raise SystemExit(70) from None
    mark(limits, "harness_set_up")
    write_message(reply_fd, {"setup": "ok"} if "t" not in limits else {"setup": "ok", "t": limits["t"]})


def mark(limits: dict, name: str) -> None:
    """A reading for the benchmark's breakdown (sandbox/stages.py), only when the verifier asked for them."""
    if "t" in limits:
        limits["t"][name] = time.monotonic()


def serve(request_fd: int, reply_fd: int, limits: dict) -> None:
    """Everything after start-up: the started report, the init message, the limits, then the candidate."""
    write_message(reply_fd, {"started": True})  # the verifier waits for this before handing over a candidate
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 2)  # stderr was for start-up failures only
    os.close(devnull)
    mark(limits, "harness_started")
    requests = LineReader(request_fd, MAX_REQUEST_BYTES)
    init = requests.read_message()
    if init is None:
        return
    mark(limits, "harness_received")
    if init["mode"] == "script":
        stdin_from_text(init.get("stdin", ""))
        os.close(request_fd)
        set_up(limits, reply_fd)
        os.close(reply_fd)
        run_script(init["code"], init.get("stdin", ""))
    else:
        set_up(limits, reply_fd)
        serve_functions(init["code"], requests, reply_fd)


def main() -> None:
    serve(int(sys.argv[1]), int(sys.argv[2]), json.loads(sys.argv[3]))


if __name__ == "__main__":
    main()
