"""The fork server inside a long-lived bubblewrap sandbox: one warm interpreter, one fresh child per candidate.

Started by sandbox/fork.py as `python -I -S zygote.py CONTROL_FD`, as root inside bubblewrap with only the
capabilities it needs (setuid/setgid for the uid drop, sys_admin and net_admin for the namespaces). Standard library
only. It never runs candidate code (its warm-up, harness.warm_up, runs a constant program of its own). For each
message on the control socket (the harness limits, with the child's request, reply, stdout, status and kill
descriptors) it makes, in a new PID namespace:

    init        PID 1 of the new namespace, made by the server's init maker (InitMaker): a clone of the maker that
                shares its memory (CLONE_VM: no page tables copied, no page of the warm interpreter copied on write)
                and only waits in `pause()`, as root, until the server kills it. The orphans of the namespace are
                reparented to it, as to any init, and reaped by the kernel as they end (its SIGCHLD is ignored); when
                it ends, the kernel kills whatever is left in the namespace.
    candidate   PID 2, forked from the warm interpreter: joins the candidate's cgroup (through the `cgroup.procs`
                descriptors the verifier sent with the job), unshares mount, IPC, network and cgroup namespaces, mounts
                a fresh tmpfs on /tmp and on /dev/shm and its own /proc, brings loopback up, then runs the harness (harness.serve):
                sets rlimits, drops to the candidate's own uid, joins a session keyring of its own, installs its
                seccomp filter, runs the code. It is not PID 1: the kernel delivers every signal it or its children
                send it as to a plain interpreter (a namespace's init would drop those it has no handler for).

The server itself supervises every namespace at once: it reaps each candidate (its child) and reports its
{"exit": status}, then kills the init; it kills the init when the verifier writes to or closes its kill pipe; and
once the kernel has emptied the namespace (the init ended), it reports {"reaped": true} on its status pipe. It is
PID 1 of its bubblewrap sandbox (`bwrap --as-pid-1`): however it ends, the kernel ends every namespace it made. A failure
before the candidate starts is reported as {"error": ...}. The candidate holds neither the status nor the kill pipe
of any candidate, nor the control socket, so it can forge none of these reports.
"""

import atexit
import ctypes
import fcntl
import gc
import json
import os
import select
import signal
import socket
import struct
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from protocol import write_message  # noqa: E402

# Modules that solutions commonly import: loaded once here, so each candidate finds them warm.
WARM_MODULES = ("bisect", "collections", "functools", "heapq", "itertools", "math", "re", "string", "typing")

CLONE_NEWNS, CLONE_NEWPID, CLONE_NEWIPC, CLONE_NEWNET = 0x00020000, 0x20000000, 0x08000000, 0x40000000
CLONE_NEWCGROUP, CLONE_VM = 0x02000000, 0x00000100
INIT_STACK_BYTES = 1 << 16  # every init runs pause() on it: each writes the same frame once, and never returns
PIPES = 5  # request, reply, stdout, status, kill; then the descriptors that join the candidate's cgroup, if any
MAX_CGROUP_FDS = 4  # cgroup v1: memory, pids, cpu, cpuacct
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REC, MS_PRIVATE = 2, 4, 8, 1 << 14, 1 << 18
SIOCSIFFLAGS, IFF_UP, IFF_LOOPBACK, IFF_RUNNING = 0x8914, 0x1, 0x8, 0x40
LIBC = ctypes.CDLL(None, use_errno=True)
LIBC.clone.argtypes = (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p)
PAUSE = ctypes.cast(LIBC.pause, ctypes.c_void_p)


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def join_cgroup(fds) -> None:
    """Enter the candidate's cgroup (each folder's `cgroup.procs`, opened by the verifier): "0" means this process."""
    for fd in fds:
        os.write(fd, b"0")
        os.close(fd)


def isolate(tmp_mb: int, cgroup: bool, shm_mb: int = 0) -> None:
    """Fresh mount, IPC and network namespaces for one candidate (PID 2 of its own PID namespace), a cgroup namespace
    rooted at its own cgroup, an empty tmpfs of its own on /tmp and on /dev/shm (POSIX semaphores and shared memory:
    multiprocessing's locks, pools and queues), its own /proc and /dev/pts, and loopback up. The tmpfs pages are charged to the
    cgroup of the process that writes them: the candidate's."""
    _check(LIBC.unshare(CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWNET | (CLONE_NEWCGROUP if cgroup else 0)), "unshare")
    _check(LIBC.mount(None, b"/", None, MS_REC | MS_PRIVATE, None), "making mounts private")
    options = f"size={int(tmp_mb)}m,mode=1777".encode()
    _check(LIBC.mount(b"tmpfs", b"/tmp", b"tmpfs", MS_NOSUID | MS_NODEV, options), "mounting /tmp")
    if shm_mb > 0:
        options = f"size={int(shm_mb)}m,mode=1777".encode()
        _check(LIBC.mount(b"tmpfs", b"/dev/shm", b"tmpfs", MS_NOSUID | MS_NODEV, options), "mounting /dev/shm")
    _check(LIBC.mount(b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None), "mounting /proc")
    # A devpts instance of its own (bubblewrap's /dev/ptmx points into it): the fork server's is not shared.
    options = b"newinstance,ptmxmode=0666,mode=0620"
    _check(LIBC.mount(b"devpts", b"/dev/pts", b"devpts", MS_NOSUID | MS_NOEXEC, options), "mounting /dev/pts")
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:  # a new network namespace has loopback down
        fcntl.ioctl(probe, SIOCSIFFLAGS, struct.pack("16sh22x", b"lo", IFF_UP | IFF_LOOPBACK | IFF_RUNNING))


def candidate(job: dict, request_r: int, reply_w: int, stdout_w: int, status_w: int, cgroup_fds=()) -> None:
    """PID 2 of the new namespace: its cgroup and namespaces, then the harness. The status pipe is closed before any
    candidate code runs: only the fork server reports on it."""
    events = job["limits"].get("t")  # the benchmark's readings (sandbox/stages.py), only when asked for
    mark(events, "candidate_begin")
    try:
        join_cgroup(cgroup_fds)
        mark(events, "cgroup_joined")
        isolate(job["tmp_mb"], bool(cgroup_fds), int(job.get("shm_mb", 0)))
        mark(events, "isolated")
    except OSError as exc:
        write_message(status_w, {"error": f"the sandbox could not isolate the candidate: {exc}"})
        return
    os.close(status_w)
    mark(events, "harness_begin")
    run_candidate(job, request_r, reply_w, stdout_w)


def mark(events, name: str) -> None:
    if events is not None:
        events[name] = time.monotonic()


def run_candidate(job: dict, request_r: int, reply_w: int, stdout_w: int) -> None:
    """The harness, then what an interpreter does when it exits: wait for threads, atexit, flush, exit status."""
    os.setsid()  # a session and process group of its own, as each sandbox process had (`bwrap --new-session`)
    os.dup2(stdout_w, 1)
    os.close(stdout_w)
    code = 0
    try:
        harness.serve(request_r, reply_w, job["limits"])
    except SystemExit as exc:
        code = exit_code(exc)
    except BaseException:
        traceback.print_exc()
        code = 1
    try:
        threading = sys.modules.get("threading")
        if threading is not None:
            threading._shutdown()
        atexit._run_exitfuncs()
    except SystemExit as exc:
        code = exit_code(exc)
    except BaseException:
        pass
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            code = code or 120  # as an interpreter does when it cannot flush stdout at exit
    os._exit(code & 0xFF)


def exit_code(exc: SystemExit) -> int:
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code
    try:
        print(exc.code, file=sys.stderr)
    except BaseException:
        pass
    return 1


class InitMaker:
    """A child of the server that makes each new PID namespace and its init, as a clone of itself sharing its memory
    (CLONE_VM: no page table copied, no page copied on write) that waits in pause() until it is killed.

    Its SIGCHLD is ignored, and each init inherits that: the kernel reaps the init when it ends, and the orphans
    adopted by the init (a candidate's double-forked children) when they end, so that they leave no zombie counting
    against the candidate's process limits, as under a plain interpreter, whose orphans the host's init reaps. The
    server, whose SIGCHLD is not ignored, still forks each candidate itself and reaps it for its exit status."""

    def __init__(self, closed_in_child=()):
        self.socket, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.pid = os.fork()
        if self.pid == 0:
            try:
                self.socket.close()
                close_all(closed_in_child)
                make_inits(theirs)
            finally:
                os._exit(0)
        theirs.close()

    def make(self) -> int:
        """A new init's pid (in the server's PID namespace); OSError if it could not be made."""
        self.socket.send(b"n")
        reply = self.socket.recv(256)
        if not reply:  # no namespace can be made any more: the server ends, and the verifier starts another
            raise SystemExit("the init maker ended")
        if len(reply) != 4:
            raise OSError(reply.decode(errors="replace"))
        return int.from_bytes(reply, "little")


def make_inits(requests: socket.socket) -> None:
    """The init maker's loop: one init per request, its pid or why not as the reply; ends with the server."""
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # inherited by every init: ended children are reaped at once
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # no handler of this interpreter in an init
    own_pid_namespace = os.open("/proc/self/ns/pid", os.O_RDONLY)
    stack = ctypes.create_string_buffer(INIT_STACK_BYTES)
    top = (ctypes.addressof(stack) + INIT_STACK_BYTES) & ~15
    while requests.recv(1):
        try:
            _check(LIBC.unshare(CLONE_NEWPID), "unshare")  # its next child is PID 1 of a new namespace
            init = LIBC.clone(PAUSE, top, CLONE_VM | signal.SIGCHLD, None)
            reply = init.to_bytes(4, "little") if init > 0 else f"clone: {os.strerror(ctypes.get_errno())}".encode()
        except OSError as exc:
            reply = str(exc).encode()
        if LIBC.setns(own_pid_namespace, CLONE_NEWPID) != 0:
            return  # its next child would share a namespace: the server's next request fails instead
        requests.send(reply)


class Namespace:
    """One candidate's PID namespace, as the server sees it: its init, its candidate, and the pipes to the verifier."""

    def __init__(self, init_fd: int, status_w: int, kill_r: int, events):
        self.init_fd = init_fd  # the init is the init maker's child: signalled through its pidfd, never by pid
        self.status_w, self.kill_r = status_w, kill_r
        self.candidate = -1  # its pid, until reaped
        self.killed = False
        self.events = events  # the benchmark's readings of its kill and reap, only when asked for


class Server:
    """The control socket and the namespaces it made: each one's init, candidate, kill pipe and status pipe."""

    def __init__(self, control: socket.socket):
        self.control = control
        self.own_pid_namespace = os.open("/proc/self/ns/pid", os.O_RDONLY)
        self.maker = InitMaker(closed_in_child=(control.fileno(), self.own_pid_namespace))
        self.inits = {}  # the init's pidfd -> its Namespace
        self.candidates = {}  # the candidate's pidfd -> the init's pidfd
        self.kill_pipes = {}  # kill_r -> the init's pidfd, until it is killed
        self.poller = select.poll()  # not select(): hundreds of workers may hold descriptors past FD_SETSIZE
        self.poller.register(control, select.POLLIN)

    def serve(self) -> None:
        """Until the control socket ends, and then until every namespace made has ended (each init waits to be
        killed, and the candidates started ahead are still the verifier's: their kill pipes end them). The server is
        PID 1 of its bubblewrap sandbox (`--as-pid-1`): however it ends, the kernel kills every namespace it made."""
        listening = True
        while listening or self.inits:
            ready = [fd for fd, _ in self.poller.poll()]
            # Kills first, then reaps (which close descriptors), then new namespaces (which open some): a descriptor
            # closed and reused within one round is never taken for the one that poll reported. A candidate is
            # reaped before its init: the kernel ends an init only once every process of its namespace is reaped.
            for fd in ready:
                if fd in self.kill_pipes:  # the verifier wrote to or closed it (verdict, deadline, or it ended)
                    self.poller.unregister(fd)
                    namespace = self.inits[self.kill_pipes.pop(fd)]
                    if not namespace.killed:
                        mark(namespace.events, "server_killed")
                    self.kill(namespace)
            for fd in ready:
                if fd in self.candidates:
                    self.reap_candidate(fd)
            for fd in ready:
                if fd in self.inits:
                    self.reap_init(fd)
            if listening and self.control.fileno() in ready:
                message, fds, _, _ = socket.recv_fds(self.control, 1 << 16, PIPES + MAX_CGROUP_FDS)
                if not message:
                    listening = False
                    self.poller.unregister(self.control)
                    close_all(fds)
                elif len(fds) >= PIPES:
                    self.start(json.loads(message), *fds)
                else:
                    close_all(fds)

    def start(
        self, job: dict, request_r: int, reply_w: int, stdout_w: int, status_w: int, kill_r: int, *cgroup_fds
    ) -> None:
        if job["limits"].get("stages"):
            job["limits"]["t"] = {"server_received": time.monotonic()}
        init_fd = pid = -1
        try:
            init = self.maker.make()
            init_fd = os.pidfd_open(init)
            join = os.open(f"/proc/{init}/ns/pid", os.O_RDONLY)  # not setns(pidfd): that needs Linux 5.8
            try:
                _check(LIBC.setns(join, CLONE_NEWPID), "setns")  # the next child is PID 2 of the init's namespace
            finally:
                os.close(join)
            try:
                pid = os.fork()
            finally:
                if pid != 0 and LIBC.setns(self.own_pid_namespace, CLONE_NEWPID) != 0:
                    raise SystemExit("cannot return to the server's PID namespace")  # its next child would share one
        except OSError as exc:
            if init_fd >= 0:
                signal.pidfd_send_signal(init_fd, signal.SIGKILL)
                os.close(init_fd)
            write_message(status_w, {"error": f"the sandbox could not isolate the candidate: {exc}"})
            close_all((request_r, reply_w, stdout_w, status_w, kill_r, *cgroup_fds))
            return
        if pid == 0:
            try:
                close_all([self.control.fileno(), self.own_pid_namespace, self.maker.socket.fileno(), init_fd, kill_r])
                close_all(self.candidates)
                close_all(fd for pidfd, n in self.inits.items() for fd in (pidfd, n.status_w, n.kill_r))
                candidate(job, request_r, reply_w, stdout_w, status_w, cgroup_fds)
            finally:
                os._exit(70)
        close_all((request_r, reply_w, stdout_w, *cgroup_fds))
        namespace = Namespace(init_fd, status_w, kill_r, {} if job["limits"].get("stages") else None)
        namespace.candidate = pid
        candidate_fd = os.pidfd_open(pid)
        self.inits[init_fd] = namespace
        self.candidates[candidate_fd] = init_fd
        self.kill_pipes[kill_r] = init_fd
        for fd in (init_fd, candidate_fd, kill_r):
            self.poller.register(fd, select.POLLIN)

    def kill(self, namespace: Namespace) -> None:
        """Kill the init: the kernel then kills the rest of its namespace, and reaps the init once it is empty."""
        if not namespace.killed:
            namespace.killed = True
            signal.pidfd_send_signal(namespace.init_fd, signal.SIGKILL)

    def reap_candidate(self, pidfd: int) -> None:
        """The candidate ended: its exit status (unless the server killed it), then the end of its namespace."""
        namespace = self.inits[self.candidates.pop(pidfd)]
        self.poller.unregister(pidfd)
        _, status, usage = os.wait4(namespace.candidate, 0)
        close_all((pidfd,))
        namespace.candidate = -1
        if not namespace.killed:
            report = {"exit": os.waitstatus_to_exitcode(status)}
            if namespace.events is not None:  # page faults of the candidate and of the children it reaped
                report["t"] = {"candidate_faults": usage.ru_minflt}
            try:
                write_message(namespace.status_w, report)
            except OSError:  # the verifier gave up on this one
                pass
        self.kill(namespace)

    def reap_init(self, pidfd: int) -> None:
        namespace = self.inits.pop(pidfd)
        if self.kill_pipes.pop(namespace.kill_r, None) is not None:
            self.poller.unregister(namespace.kill_r)
        self.poller.unregister(pidfd)  # an init ends only once every process of its namespace is gone
        events = namespace.events
        mark(events, "server_reaped")
        try:
            write_message(namespace.status_w, {"reaped": True} if events is None else {"reaped": True, "t": events})
        except OSError:  # the verifier gave up on this one
            pass
        close_all((pidfd, namespace.status_w, namespace.kill_r))


def close_all(fds) -> None:
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


def main() -> None:
    control = socket.socket(fileno=int(sys.argv[1]))
    for name in WARM_MODULES:
        __import__(name)
    for name in ("unshare", "setns", "mount"):
        getattr(LIBC, name)  # looked up once here, not in every child
    harness.prepare_kernel_restriction()  # ctypes types and the seccomp program, inherited by every candidate
    try:
        harness.warm_up()  # the candidate's path run once on constants: see its docstring
    except Exception:  # only ever a lost speed-up: every candidate still runs from scratch
        pass
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    control.send(b"started")
    os.dup2(devnull, 2)  # stderr was for start-up failures only
    os.close(devnull)
    server = Server(control)
    gc.freeze()  # the children share these pages until they write them
    server.serve()


if __name__ == "__main__":
    main()
