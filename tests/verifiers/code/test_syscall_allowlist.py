"""The candidate's system calls are an allowlist (code/standalone/harness.py), on every entry point.

Two halves. The seccomp program itself, run by a small classic-BPF interpreter here for every system call number of
every entry point (x86-64 and aarch64 numbers 0-1023, x32 numbers with bit 30 set, the i386 and arm audit
architectures, the extremes) and for the arguments the filtered calls look at (fcntl commands, ioctl commands, clone
and unshare flags, socket families): only what the allowlist names is allowed, and the allowed calls decide on the
number and architecture alone (so the kernel's seccomp cache skips the program for them). Then the same from inside
the sandbox, where the kernel applies it: a candidate calls every number outside the allowlist with harmless
arguments, on the x86-64 entry point, with the x32 bit, and through `int 0x80` (the i386 entry point), and each fails
with the errno the filter promises (EPERM; ENOSYS for clone3 and numbers newer than the table), never succeeds, and
never takes the sandbox down; and the filtered calls do what the standard library needs of them.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from code_verifier_helpers import make_code_verifier

from trl_grpo_ext.verifiers.code.standalone import STANDALONE_DIR

AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7, "i386": 0x40000003, "arm": 0x40000028}
X32_BIT = 0x40000000
RET_ALLOW = 0x7FFF0000


def errno_return(number: int) -> int:
    return 0x00050000 | number


def _policy() -> dict:
    """The harness's tables and programs, read in a separate `python -I -S` (importing the harness here would put the
    standalone folder on this process's sys.path and install `exit` and friends)."""
    script = textwrap.dedent(
        f"""
        import json, sys
        sys.path.insert(0, {str(STANDALONE_DIR)!r})
        import harness as h
        print(json.dumps({{
            "allowed": sorted(n for group in h.ALLOWED_SYSCALLS.values() for n in group.split()),
            "filtered": list(h.FILTERED_SYSCALLS), "numbers": h.SYSCALL_NUMBERS,
            "machines": {{m: list(v) for m, v in h.MACHINES.items()}}, "first_unknown": h.FIRST_UNKNOWN_SYSCALL,
            "fcntl": list(h.FCNTL_ALLOWED), "fcntl_locks": list(h.FCNTL_LOCKS), "ioctl_denied": list(h.IOCTL_DENIED),
            "denied_calls": h.DENIED_CALLS,
            "programs": {{m: h.syscall_filter(m).hex() for m in h.MACHINES}},
        }}))
        """
    )
    return json.loads(
        subprocess.run([sys.executable, "-I", "-S", "-c", script], capture_output=True, check=True).stdout
    )


POLICY = _policy()
MACHINES = sorted(POLICY["machines"])


def numbers(machine: str) -> dict[str, int]:
    column = POLICY["machines"][machine][1]
    return {name: row[column] for name, row in POLICY["numbers"].items() if row[column] is not None}


def allowed_numbers(machine: str) -> set[int]:
    table = numbers(machine)
    return {table[name] for name in POLICY["allowed"] if name in table}


def program(machine: str) -> list[tuple[int, int, int, int]]:
    raw = bytes.fromhex(POLICY["programs"][machine])
    return [struct.unpack("HBBI", raw[i : i + 8]) for i in range(0, len(raw), 8)]


def run(machine: str, nr: int, arch: int | None = None, args=(0, 0, 0, 0, 0, 0)) -> tuple[int, set[int]]:
    """Classic BPF as the kernel runs a seccomp filter: (the return value, the seccomp_data offsets it loaded)."""
    arch = AUDIT_ARCH[machine] if arch is None else arch
    data = struct.pack("<IIQ6Q", nr & 0xFFFFFFFF, arch, 0x400000, *(a & (2**64 - 1) for a in args))
    instructions, accumulator, pc, loaded = program(machine), 0, 0, set()
    for _ in range(len(instructions)):  # jumps only go forward: no program runs longer than itself
        code, jt, jf, k = instructions[pc]
        if code == 0x20:  # BPF_LD | BPF_W | BPF_ABS
            assert k % 4 == 0 and k + 4 <= len(data), k
            accumulator, _ = struct.unpack_from("<I", data, k)[0], loaded.add(k)
        elif code == 0x54:  # BPF_ALU | BPF_AND | BPF_K
            accumulator &= k
        elif code == 0x05:  # BPF_JMP | BPF_JA
            pc += k
        elif code in (0x15, 0x35, 0x45):  # JEQ, JGE, JSET with K
            taken = {0x15: accumulator == k, 0x35: accumulator >= k, 0x45: bool(accumulator & k)}[code]
            pc += jt if taken else jf
        elif code == 0x06:  # BPF_RET | BPF_K
            return k, loaded
        else:
            raise AssertionError(f"instruction {code:#x} at {pc}: not one the filter should use")
        pc += 1
        assert pc < len(instructions), "the program runs past its end"
    raise AssertionError("no return")


def expected(machine: str, nr: int) -> int:
    """What the allowlist promises for a number on the native entry point, arguments aside."""
    table = numbers(machine)
    if nr in allowed_numbers(machine):
        return RET_ALLOW
    denied_calls = {table[name]: number for name, number in POLICY["denied_calls"].items()}
    if nr in denied_calls:
        return errno_return(denied_calls[nr])
    if POLICY["first_unknown"] <= nr < X32_BIT:
        return errno_return(errno.ENOSYS)
    return errno_return(errno.EPERM)


@pytest.mark.parametrize("machine", MACHINES)
def test_every_number_on_every_entry_point_is_decided_by_the_allowlist(machine):
    assert len(program(machine)) < 4096  # BPF_MAXINSNS
    filtered = {numbers(machine)[name] for name in POLICY["filtered"]}
    for nr in range(1024):
        if nr not in filtered:
            assert run(machine, nr)[0] == expected(machine, nr), nr
    for nr in [*range(X32_BIT, X32_BIT + 1024), 0x7FFFFFFF, 0x80000000, 0xFFFFFFFE, 0xFFFFFFFF]:  # x32, negative
        assert run(machine, nr)[0] == errno_return(errno.EPERM), hex(nr)
    foreign = [arch for name, arch in AUDIT_ARCH.items() if name != machine] + [0, 0xFFFFFFFF]
    for arch in foreign:  # i386 through int 0x80, arm's compat entry, and anything else: denied whatever the number
        for nr in [*range(1024), X32_BIT | 39, 0xFFFFFFFF]:
            assert run(machine, nr, arch)[0] == errno_return(errno.EPERM), (hex(arch), nr)


@pytest.mark.parametrize("machine", MACHINES)
def test_allowed_calls_decide_on_number_and_architecture_alone(machine):
    # What lets the kernel's seccomp cache (Linux 5.11+) allow them without running the program at all.
    for nr in allowed_numbers(machine):
        verdict, loaded = run(machine, nr)
        assert verdict == RET_ALLOW and loaded == {0, 4}, (nr, loaded)


def _verdict(machine: str, name: str, *args: int) -> int:
    return run(machine, numbers(machine)[name], args=args + (0,) * (6 - len(args)))[0]


ALLOW, EPERM, ENOLCK = RET_ALLOW, errno_return(errno.EPERM), errno_return(errno.ENOLCK)


@pytest.mark.parametrize("machine", MACHINES)
def test_fcntl_is_filtered_by_command(machine):
    named = {"F_NOTIFY": 1026, "F_SETLEASE": 1024, "F_SETOWN": 8, "F_SETSIG": 10, "F_SETOWN_EX": 15,
             "F_GETOWNER_UIDS": 17, "F_DUPFD_QUERY": 1027, "F_CANCELLK": 1029, "F_SET_RW_HINT": 1036}  # fmt: skip
    for cmd in named.values():
        assert _verdict(machine, "fcntl", 3, cmd) == EPERM, cmd
        assert _verdict(machine, "fcntl", 3, cmd | 1 << 32) == EPERM, cmd  # the kernel reads the low 32 bits only
    for cmd in range(2048):
        wanted = ALLOW if cmd in POLICY["fcntl"] else ENOLCK if cmd in POLICY["fcntl_locks"] else EPERM
        assert _verdict(machine, "fcntl", 3, cmd) == wanted, cmd
    for cmd in (0, 1, 2, 3, 4, 1030):  # F_DUPFD .. F_SETFL, F_DUPFD_CLOEXEC
        assert _verdict(machine, "fcntl", 3, cmd) == ALLOW, cmd
    for cmd in (5, 6, 7, 36, 37, 38):  # F_GETLK, F_SETLK, F_SETLKW, F_OFD_*: a lock on a shared file is a channel
        assert _verdict(machine, "fcntl", 3, cmd) == ENOLCK, cmd
        assert _verdict(machine, "fcntl", 3, cmd | 1 << 32) == ENOLCK, cmd


@pytest.mark.parametrize("machine", MACHINES)
def test_flock_fails_as_on_a_file_system_without_locks(machine):
    assert run(machine, numbers(machine)["flock"])[0] == ENOLCK


@pytest.mark.parametrize("machine", MACHINES)
def test_ioctl_allows_terminal_and_socket_commands_only(machine):
    enotty = errno_return(errno.ENOTTY)
    allowed = {"TCGETS": 0x5401, "TCSETS": 0x5402, "TIOCGWINSZ": 0x5413, "FIONREAD": 0x541B, "FIONBIO": 0x5421,
               "FIOCLEX": 0x5451, "FIONCLEX": 0x5450, "TIOCGPTN": 0x80045430, "TIOCSPTLCK": 0x40045431,
               "TCGETS2": 0x802C542A, "SIOCGIFCONF": 0x8912, "SIOCGIFINDEX": 0x8933}  # fmt: skip
    denied = {"TIOCSTI": 0x5412, "TIOCLINUX": 0x541C, "TIOCCONS": 0x541D, "TIOCSETD": 0x5423, "FIOSETOWN": 0x8901,
              "SIOCSPGRP": 0x8902}  # fmt: skip
    other = {"FS_IOC_GETFLAGS": 0x80086601, "KVM_CREATE_VM": 0xAE01, "NVIDIA": 0xC020462A, "BLKGETSIZE64": 0x80081272,
             "PERF_EVENT_IOC_ENABLE": 0x2400, "FICLONE": 0x40049409, "TUNSETIFF": 0x400454CA}  # fmt: skip
    for name, cmd in allowed.items():
        assert _verdict(machine, "ioctl", 0, cmd) == ALLOW, name
    for name, cmd in denied.items():
        assert _verdict(machine, "ioctl", 0, cmd) == EPERM, name
        assert _verdict(machine, "ioctl", 0, cmd | 0xFFFF << 48) == EPERM, name
    for name, cmd in other.items():
        assert _verdict(machine, "ioctl", 0, cmd) == enotty, name
    assert sorted(denied.values()) == sorted(POLICY["ioctl_denied"])


@pytest.mark.parametrize("machine", MACHINES)
def test_clone_and_unshare_create_no_namespace(machine):
    namespaces = {"NEWNS": 0x20000, "NEWCGROUP": 0x02000000, "NEWUTS": 0x04000000, "NEWIPC": 0x08000000,
                  "NEWUSER": 0x10000000, "NEWPID": 0x20000000, "NEWNET": 0x40000000}  # fmt: skip
    thread = 0x3D0F00  # what the C library's pthread_create passes
    fork = 0x01200011  # CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID | SIGCHLD
    vfork = 0x4111  # CLONE_VM | CLONE_VFORK | SIGCHLD (posix_spawn, subprocess)
    for flags in (thread, fork, vfork):
        assert _verdict(machine, "clone", flags) == ALLOW, hex(flags)
    for name, flag in namespaces.items():
        assert _verdict(machine, "clone", fork | flag) == EPERM, name
        assert _verdict(machine, "unshare", flag) == EPERM, name
    assert _verdict(machine, "unshare", 0x80) == EPERM  # CLONE_NEWTIME
    assert _verdict(machine, "unshare", 0x400 | 0x200) == ALLOW  # CLONE_FILES | CLONE_FS
    assert _verdict(machine, "clone3", 0, 88) == errno_return(errno.ENOSYS)  # the C library falls back to clone


@pytest.mark.parametrize("machine", MACHINES)
@pytest.mark.parametrize("call", ["socket", "socketpair"])
def test_sockets_of_the_families_a_program_uses_only(machine, call):
    eafnosupport = errno_return(errno.EAFNOSUPPORT)
    for family in range(64):
        for protocol in (0, 9, 16):
            ok = family in (1, 2, 10) or (family == 16 and protocol == 0)  # unix, inet, inet6, route netlink
            assert _verdict(machine, call, family, 1, protocol) == (ALLOW if ok else eafnosupport), (family, protocol)
    assert _verdict(machine, call, 40 | 1 << 32, 1, 0) == eafnosupport  # AF_VSOCK, high bits set: still denied
    assert _verdict(machine, call, 2 | 1 << 32, 1, 0) == ALLOW  # the kernel reads an int


# Calls an ordinary program never makes, each a kernel object outside the candidate's
# namespaces or kernel attack surface. All must stay outside the allowlist on every machine.
NEVER = """
    io_uring_setup io_uring_enter io_uring_register userfaultfd perf_event_open bpf add_key request_key keyctl ptrace
    process_vm_readv process_vm_writev pidfd_getfd kcmp inotify_init inotify_init1 inotify_add_watch fanotify_init
    fanotify_mark name_to_handle_at open_by_handle_at mount umount2 pivot_root chroot setns fsopen fsconfig fsmount
    fspick open_tree move_mount mount_setattr kexec_load kexec_file_load init_module finit_module delete_module reboot
    swapon swapoff acct settimeofday clock_settime adjtimex clock_adjtime sethostname setdomainname iopl ioperm
    modify_ldt sync syncfs syslog vhangup personality quotactl memfd_secret process_madvise lookup_dcookie
    io_setup io_submit mq_open mbind set_mempolicy move_pages migrate_pages seccomp vmsplice cachestat statmount
    listmount
""".split()


def _kernel_table(machine: str) -> dict[str, int]:
    """Names and numbers from this machine's kernel headers (empty where they are missing)."""
    header = {
        "x86_64": "/usr/include/x86_64-linux-gnu/asm/unistd_64.h",
        "aarch64": "/usr/include/asm-generic/unistd.h",
    }
    path = Path(header[machine])
    if not path.exists():
        return {}
    text = path.read_text()
    table = {name: int(nr) for name, nr in re.findall(r"#define __NR_(\w+) (\d+)\b", text)}
    wide = {name: int(nr) for name, nr in re.findall(r"#define __NR3264_(\w+) (\d+)\b", text)}
    for name, alias in re.findall(r"#define __NR_(\w+) __NR3264_(\w+)", text):
        if alias in wide:
            table.setdefault(name, wide[alias])
    return table


@pytest.mark.parametrize("machine", MACHINES)
def test_the_table_agrees_with_the_kernel_headers_and_denies_the_class(machine):
    kernel = _kernel_table(machine)
    if not kernel:
        pytest.skip(f"no kernel headers for {machine} here")
    table = numbers(machine)
    newest = max(kernel.values())
    for name, nr in table.items():  # calls newer than the headers (Linux 6.1 here) are checked by number elsewhere
        if nr <= newest:
            assert kernel.get(name) == nr, (name, nr, kernel.get(name))
    assert set(POLICY["numbers"]) == set(POLICY["allowed"]) | set(POLICY["filtered"]) | set(POLICY["denied_calls"])
    extra = {"statmount": 457, "listmount": 458, "cachestat": 451}  # past Linux 6.1's headers
    extra |= {"name_to_handle_at": 264, "open_by_handle_at": 265} if machine == "aarch64" else {}
    reachable = [name for name in NEVER if name in {**kernel, **extra} and run(machine, {**kernel, **extra}[name])[0]
                 != errno_return(errno.EPERM)]  # fmt: skip
    assert reachable == []
    assert not set(NEVER) & set(POLICY["allowed"])


# --- inside the sandbox, where the kernel applies it ---

PASSTHROUGH = {335: "uretprobe", 336: "uprobe"}  # x86-64: the kernel runs these without consulting seccomp

ENUMERATE = """
import ctypes, errno, json, os, signal

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long

def call(nr):
    ctypes.set_errno(0)
    result = libc.syscall(ctypes.c_long(nr), *([ctypes.c_long(0)] * 6))
    return result, ctypes.get_errno()

def in_child(nr):
    # uretprobe outside a trampoline is a SIGILL; whatever happens, the candidate goes on
    pid = os.fork()
    if pid == 0:
        result, number = call(nr)
        os._exit(0 if result >= 0 else 1)
    return os.waitpid(pid, 0)[1]

unexpected = []
for nr, wanted in EXPECTED:
    result, number = call(nr)
    if result != -1 or number != wanted:
        unexpected.append([nr, result, errno.errorcode.get(number, number)])
for nr in PASSTHROUGH:
    status = in_child(nr)
    if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0:
        unexpected.append([nr, "succeeded"])
print(json.dumps(unexpected))
"""


@pytest.fixture(scope="module", params=["bwrap", "rlimits"])
def verifier(request):
    options = {"isolation": "rlimits"} if request.param == "rlimits" else {}
    v = make_code_verifier(30, workers=1, **options)
    if v.isolation.level != request.param:
        v.close()
        pytest.skip(f"isolation {request.param} is not available here")
    yield v
    v.close()


def _needs_x86_64():
    if os.uname().machine != "x86_64":
        pytest.skip("the live enumeration knows the x86-64 entry points (int 0x80, x32)")


def test_nothing_outside_the_allowlist_is_reachable_from_the_sandbox(verifier):
    _needs_x86_64()
    allowed = allowed_numbers("x86_64") | {numbers("x86_64")[name] for name in POLICY["filtered"]}
    code_of = {errno_return(number): number for number in (errno.EPERM, errno.ENOSYS, errno.ENOLCK)}
    probes = [nr for nr in range(520) if nr not in allowed and nr not in PASSTHROUGH]
    probes += [X32_BIT | nr for nr in range(600)] + [0x7FFFFFFF, -1]  # x32 (disabled or not), and numbers past all
    wanted = [[nr, code_of[expected("x86_64", nr & 0xFFFFFFFF)]] for nr in probes]
    assert len(probes) > 800 and all(w for _, w in wanted)
    code = f"EXPECTED = {wanted!r}\nPASSTHROUGH = {sorted(PASSTHROUGH)!r}\n" + ENUMERATE
    result = verifier.verify(code, [{"input": "", "output": "[]\n"}])
    assert (result.score, result.reason) == (1.0, "correct"), (result.reason, result.details.get("failures"))
    # and the sandbox is still there for the next candidate
    assert verifier.verify("def f(): return 1", "assert f() == 1").score == 1.0


# x86-64 machine code: int 0x80 with the number in edi (the first C argument) and every other register zero, i.e. the
# i386 system call of that number, from a 64-bit process (audit architecture AUDIT_ARCH_I386).
INT80 = """
import ctypes, json, mmap, os, select

CODE = bytes.fromhex("53 55 89 f8 31 db 31 c9 31 d2 31 f6 31 ff 31 ed cd 80 5d 5b c3")

def int80():
    page = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    page.write(CODE)
    address = ctypes.addressof(ctypes.c_char.from_buffer(page))
    return page, ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int)(address)

def results(numbers):
    # in a child: should a call get through after all (exit, fork, pause ...), only the child is lost
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        page, call = int80()
        os.write(w, json.dumps([[nr, call(nr)] for nr in numbers]).encode() + b"\\n")
        os._exit(0)
    os.close(w)
    data = b""
    while select.select([r], [], [], 20)[0]:
        chunk = os.read(r, 1 << 16)
        if not chunk:
            break
        data += chunk
    os.waitpid(pid, 0)
    return json.loads(data) if data.endswith(b"\\n") else "no answer"
"""


def _int80_works_here() -> bool:
    script = INT80 + "\npage, call = int80()\nprint(call(20) == os.getpid())\n"  # i386 getpid
    try:
        run_ = subprocess.run([sys.executable, "-I", "-c", script], capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired:
        return False
    return run_.stdout.strip() == "True"


def test_the_i386_entry_point_is_denied_whatever_the_number(verifier):
    _needs_x86_64()
    if not _int80_works_here():
        pytest.skip("int 0x80 does not reach the kernel's i386 table here (no IA32 emulation)")
    # i386 getpid (20) answers the pid outside the filter; inside, it and every other number answer -EPERM
    code = (
        INT80 + "\nunexpected = [row for row in results(range(480)) if row[1] != -1]\nprint(json.dumps(unexpected))\n"
    )
    result = verifier.verify(code, [{"input": "", "output": "[]\n"}])
    assert (result.score, result.reason) == (1.0, "correct"), (result.reason, result.details.get("failures"))


# What the standard library needs of the filtered calls still works in the sandbox, and the rest of each is denied.
FILTERED_CALLS = """
import ctypes, errno, fcntl, os, socket, struct, tempfile, threading

libc = ctypes.CDLL(None, use_errno=True)

def failure(function, *args):
    try:
        function(*args)
    except Exception as exc:  # OSError, termios.error: (errno, message)
        return exc.args[0]
    return 0

def fcntl_commands():
    (fd, _), (other, _) = tempfile.mkstemp(), tempfile.mkstemp()
    r, w = os.pipe()
    ok = [fcntl.fcntl(fd, fcntl.F_GETFD) >= 0, fcntl.fcntl(fd, fcntl.F_SETFD, fcntl.FD_CLOEXEC) == 0,
          fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_NONBLOCK) == 0,
          fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10) >= 10, fcntl.fcntl(fd, fcntl.F_DUPFD, 20) >= 20,
          failure(fcntl.lockf, fd, fcntl.LOCK_EX | fcntl.LOCK_NB) == errno.ENOLCK,
          failure(fcntl.fcntl, other, fcntl.F_OFD_SETLK, struct.pack("hhqqi", fcntl.F_WRLCK, 0, 0, 0, 0) + bytes(4))
          == errno.ENOLCK, failure(fcntl.flock, fd, fcntl.LOCK_EX) == errno.ENOLCK,
          fcntl.fcntl(r, fcntl.F_GETPIPE_SZ) > 0, failure(fcntl.fcntl, r, fcntl.F_GETOWN) == 0]
    denied = [failure(fcntl.fcntl, fd, cmd, arg) for cmd, arg in
              [(fcntl.F_NOTIFY, fcntl.DN_ACCESS), (fcntl.F_SETLEASE, fcntl.F_RDLCK), (fcntl.F_SETOWN, os.getpid()),
               (fcntl.F_SETSIG, 10)]]
    return ok == [True] * len(ok) and denied == [errno.EPERM] * 4

def ioctl_commands():
    import array, termios
    a, b = socket.socketpair()
    a.setblocking(False)  # FIONBIO
    os.set_inheritable(a.fileno(), True)  # FIOCLEX / FIONCLEX
    b.send(b"abc")
    waiting = array.array("i", [0])
    fcntl.ioctl(a.fileno(), termios.FIONREAD, waiting)
    not_a_tty = failure(termios.tcgetattr, a.fileno())  # TCGETS on a socket: the kernel's ENOTTY
    other = failure(fcntl.ioctl, a.fileno(), 0x80086601, bytes(8))  # FS_IOC_GETFLAGS: not for the sandbox: ENOTTY
    sti = failure(fcntl.ioctl, 0, termios.TIOCSTI, b"x")
    return [waiting[0], not_a_tty, other, sti, os.isatty(1)] == [3, errno.ENOTTY, errno.ENOTTY, errno.EPERM, False]

def processes_and_namespaces():
    done = []
    thread = threading.Thread(target=done.append, args=(1,))
    thread.start()
    thread.join()
    pid = os.fork()
    if pid == 0:
        os._exit(7)
    forked = os.waitpid(pid, 0)[1] >> 8
    files = libc.unshare(0x400)  # CLONE_FILES: allowed
    namespaces = [libc.unshare(flag) == -1 and ctypes.get_errno() == errno.EPERM
                  for flag in (0x20000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000, 0x80)]
    return done == [1] and forked == 7 and files == 0 and all(namespaces)

def socket_families():
    made = []
    for family, kind, protocol in [(socket.AF_UNIX, socket.SOCK_STREAM, 0), (socket.AF_INET, socket.SOCK_DGRAM, 0),
                                   (socket.AF_INET6, socket.SOCK_STREAM, 0), (socket.AF_NETLINK, socket.SOCK_RAW, 0)]:
        socket.socket(family, kind, protocol).close()
        made.append(family)
    refused = [failure(socket.socket, family, kind, protocol) for family, kind, protocol in
               [(40, socket.SOCK_STREAM, 0), (38, socket.SOCK_SEQPACKET, 0), (socket.AF_NETLINK, socket.SOCK_RAW, 16),
                (socket.AF_PACKET, socket.SOCK_RAW, 0), (15, socket.SOCK_RAW, 2)]]
    return len(made) == 4 and refused == [errno.EAFNOSUPPORT] * 5 and len(socket.socketpair()) == 2
"""
FILTERED_TESTS = "\n".join(
    f"assert {name}() is True"
    for name in ("fcntl_commands", "ioctl_commands", "processes_and_namespaces", "socket_families")
)


def test_the_filtered_calls_do_what_the_standard_library_needs(verifier):
    result = verifier.verify(FILTERED_CALLS, FILTERED_TESTS)
    failed = [FILTERED_TESTS.splitlines()[f["line"] - 1] for f in result.details.get("failures") or []]
    assert (result.score, result.reason) == (1.0, "correct"), (result.reason, failed, result.details.get("failures"))


# C++: the compiler and native programs run under the same allowlist, unchanged. The calls g++ 12 and its
# subprocesses (cc1plus, as, collect2, ld) make on Debian 12, recorded with `strace -f -c g++ -O2 -std=c++17 -pipe` on
# a program with iostream, threads and random_device; and what such a program makes when it runs.
COMPILER_SYSCALLS = (
    "access arch_prctl brk chmod close dup2 execve faccessat2 fcntl futex getcwd getrandom getrusage ioctl lseek mmap "
    "mprotect munmap newfstatat openat pipe2 pread64 prlimit64 read readlink rseq rt_sigaction set_robust_list "
    "set_tid_address sysinfo umask unlink vfork wait4 write"
)
NATIVE_PROGRAM = r"""
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <random>
#include <thread>
#include <vector>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
int main() {
    long long a, b; std::cin >> a >> b;
    std::vector<std::thread> threads;
    long long parts[4] = {};
    for (int i = 0; i < 4; i++) threads.emplace_back([&parts, i] { parts[i] = i; });
    for (auto& t : threads) t.join();
    std::random_device device; std::mt19937 gen(device());
    auto start = std::chrono::steady_clock::now();
    { std::ofstream("scratch.txt") << a; }
    long long back; std::ifstream("scratch.txt") >> back;
    void* block = mmap(nullptr, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    int fds[2]; pipe(fds);
    pid_t child = fork();
    if (child == 0) { write(fds[1], "x", 1); _exit(0); }
    char c; read(fds[0], &c, 1); waitpid(child, nullptr, 0);
    bool ok = block != MAP_FAILED && back == a && c == 'x' && std::chrono::steady_clock::now() >= start;
    std::cout << (ok ? a + b + parts[0] : -1) << std::endl;
}
"""


def test_the_compiler_and_native_programs_need_nothing_beyond_the_allowlist(verifier):
    if shutil.which("g++") is None:
        pytest.skip("g++ is not installed (apt-get install g++)")
    allowed = set(POLICY["allowed"]) | set(POLICY["filtered"])
    assert set(COMPILER_SYSCALLS.split()) <= allowed
    result = verifier.verify(f"```cpp\n{NATIVE_PROGRAM}```", [{"input": "1 2\n", "output": "3\n"}])
    assert (result.score, result.reason) == (1.0, "correct"), (result.reason, result.details.get("failures"))
