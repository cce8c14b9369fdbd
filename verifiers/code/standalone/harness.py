"""Runs untrusted candidate code inside the sandbox and answers requests with plain data.

Started before the candidate is known (a warm sandbox): as `python -I -S harness.py REQUEST_FD REPLY_FD LIMITS`,
or, under bubblewrap as root, by `serve` in a child that the sandbox's fork server (zygote.py) forks per
candidate. It says `{"started": true}` on REPLY_FD, waits for one init message on REQUEST_FD, then applies its resource
limits, drops to an unprivileged uid, puts the allowed site-packages (if any) on `sys.path`, says `{"setup": "ok"}` (or
why not) and only then runs the candidate:

    {"mode": "functions", "code": str}  exec the code, report its global names, then serve one request per line:
        {"id": n, "op": "call" | "getattr" | "iter" | "next" | "get", "target": {"name": str} | {"h": n}, ...}
    {"mode": "script", "code": str, "stdin": str}  run the code as __main__; its stdout is the answer
    {"mode": "compile", "source": str, "compiler": [argv...], "headers": {name: str}}  compile a C++ source, the
        headers beside it, with the system's compiler (code/native.py); stdout is b"OK\n" and the program, or b"CE\n"
        and the compiler's first lines
    {"mode": "native", "program": base64, "stdin": str, "rlimits": {...}, "files": {name: str}, "argv": [...]}
        exec the compiled program (a candidate's, or a dataset's checker) in place of this process, stdin from the
        case, the named files written to /tmp first; its stdout is the answer

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


# seccomp: an allowlist, as container runtimes' default profiles are. A candidate may make the system calls that a
# Python program with the standard library makes (threads, fork, subprocess, signals, files, mmap, select/poll/epoll,
# sockets, time, locale, System V IPC in its own namespace), named in ALLOWED_SYSCALLS; six more with some arguments
# only (FILTERED_SYSCALLS); clone3, whose flags are behind a pointer a filter cannot read, fails with ENOSYS, and the C
# library then falls back to clone, as under container runtimes; file locks fail with ENOLCK (FCNTL_LOCKS). Every
# other call fails with EPERM: kernel objects that are not namespaced or outlive the candidate (keys), that watch
# files the judge shares (inotify, fanotify, dnotify through fcntl), that are kernel attack surface an ordinary
# program never needs (io_uring, userfaultfd, BPF, perf events, ptrace and other processes' memory, file handles,
# mounts, namespaces, modules, clocks, sync of the host's disks). Numbers past the newest call named here fail with
# ENOSYS, as the kernel answers for calls it lacks (so a newer C library falls back). Every entry point is covered:
# the filter first checks the audit architecture (i386 calls through int 0x80 from a 64-bit process are
# AUDIT_ARCH_I386: denied) and denies x32 numbers (bit 30).
ALLOWED_SYSCALLS = {
    "memory": "brk mmap munmap mremap mprotect madvise msync mincore membarrier mseal map_shadow_stack",
    "files": "read write pread64 pwrite64 readv writev preadv pwritev preadv2 pwritev2 lseek open openat openat2 creat "
    "close close_range dup dup2 dup3 pipe pipe2 stat fstat lstat newfstatat statx statfs fstatfs access faccessat "
    "faccessat2 getdents getdents64 getcwd chdir fchdir mkdir mkdirat rmdir rename renameat renameat2 link linkat "
    "unlink unlinkat symlink symlinkat readlink readlinkat mknod mknodat chmod fchmod fchmodat fchmodat2 chown fchown "
    "lchown fchownat umask utime utimes futimesat utimensat truncate ftruncate fallocate fadvise64 fsync fdatasync "
    "sendfile copy_file_range splice tee getxattr lgetxattr fgetxattr listxattr llistxattr flistxattr setxattr "
    "lsetxattr fsetxattr removexattr lremovexattr fremovexattr memfd_create eventfd eventfd2 timerfd_create "
    "timerfd_settime timerfd_gettime signalfd signalfd4",
    "waiting": "select pselect6 poll ppoll epoll_create epoll_create1 epoll_ctl epoll_wait epoll_pwait epoll_pwait2 "
    "futex futex_waitv futex_wake futex_wait futex_requeue set_robust_list rseq sched_yield nanosleep clock_nanosleep "
    "pause",
    "time": "clock_gettime clock_getres gettimeofday time times alarm getitimer setitimer timer_create timer_settime "
    "timer_gettime timer_getoverrun timer_delete",
    "processes": "fork vfork execve execveat exit exit_group wait4 waitid set_tid_address arch_prctl prctl getpid "
    "getppid gettid getpgrp getpgid setpgid getsid setsid getuid geteuid getgid getegid getresuid getresgid getgroups "
    "setuid setgid setreuid setregid setresuid setresgid setgroups setfsuid setfsgid capget getrlimit setrlimit "
    "prlimit64 getrusage sysinfo uname getcpu getpriority setpriority sched_getaffinity sched_setaffinity "
    "sched_getparam sched_setparam sched_getscheduler sched_setscheduler sched_get_priority_max sched_get_priority_min "
    "sched_rr_get_interval pidfd_open pidfd_send_signal getrandom",
    "signals": "rt_sigaction rt_sigprocmask rt_sigreturn rt_sigpending rt_sigtimedwait rt_sigsuspend rt_sigqueueinfo "
    "rt_tgsigqueueinfo sigaltstack kill tkill tgkill restart_syscall",
    "sockets": "bind listen accept accept4 connect getsockname getpeername sendto recvfrom sendmsg recvmsg sendmmsg "
    "recvmmsg shutdown setsockopt getsockopt",
    "ipc": "shmget shmat shmdt shmctl semget semop semtimedop semctl msgget msgsnd msgrcv msgctl",
}
FILTERED_SYSCALLS = ("fcntl", "ioctl", "clone", "unshare", "socket", "socketpair")
# The number of each call named here: (x86-64, aarch64; None where the architecture lacks it), from the kernel's
# tables (arch/x86/entry/syscalls/syscall_64.tbl, include/uapi/asm-generic/unistd.h).
SYSCALL_NUMBERS = {
    "read": (0, 63), "write": (1, 64), "open": (2, None), "close": (3, 57), "stat": (4, None), "fstat": (5, 80),
    "lstat": (6, None), "poll": (7, None), "lseek": (8, 62), "mmap": (9, 222), "mprotect": (10, 226),
    "munmap": (11, 215), "brk": (12, 214), "rt_sigaction": (13, 134), "rt_sigprocmask": (14, 135),
    "rt_sigreturn": (15, 139), "ioctl": (16, 29), "pread64": (17, 67), "pwrite64": (18, 68), "readv": (19, 65),
    "writev": (20, 66), "access": (21, None), "pipe": (22, None), "select": (23, None), "sched_yield": (24, 124),
    "mremap": (25, 216), "msync": (26, 227), "mincore": (27, 232), "madvise": (28, 233), "shmget": (29, 194),
    "shmat": (30, 196), "shmctl": (31, 195), "dup": (32, 23), "dup2": (33, None), "pause": (34, None),
    "nanosleep": (35, 101), "getitimer": (36, 102), "alarm": (37, None), "setitimer": (38, 103), "getpid": (39, 172),
    "sendfile": (40, 71), "socket": (41, 198), "connect": (42, 203), "accept": (43, 202), "sendto": (44, 206),
    "recvfrom": (45, 207), "sendmsg": (46, 211), "recvmsg": (47, 212), "shutdown": (48, 210), "bind": (49, 200),
    "listen": (50, 201), "getsockname": (51, 204), "getpeername": (52, 205), "socketpair": (53, 199),
    "setsockopt": (54, 208), "getsockopt": (55, 209), "clone": (56, 220), "fork": (57, None), "vfork": (58, None),
    "execve": (59, 221), "exit": (60, 93), "wait4": (61, 260), "kill": (62, 129), "uname": (63, 160),
    "semget": (64, 190), "semop": (65, 193), "semctl": (66, 191), "shmdt": (67, 197), "msgget": (68, 186),
    "msgsnd": (69, 189), "msgrcv": (70, 188), "msgctl": (71, 187), "fcntl": (72, 25), "flock": (73, 32),
    "fsync": (74, 82), "fdatasync": (75, 83), "truncate": (76, 45), "ftruncate": (77, 46), "getdents": (78, None),
    "getcwd": (79, 17), "chdir": (80, 49), "fchdir": (81, 50), "rename": (82, None), "mkdir": (83, None),
    "rmdir": (84, None), "creat": (85, None), "link": (86, None), "unlink": (87, None), "symlink": (88, None),
    "readlink": (89, None), "chmod": (90, None), "fchmod": (91, 52), "chown": (92, None), "fchown": (93, 55),
    "lchown": (94, None), "umask": (95, 166), "gettimeofday": (96, 169), "getrlimit": (97, 163),
    "getrusage": (98, 165), "sysinfo": (99, 179), "times": (100, 153), "getuid": (102, 174), "getgid": (104, 176),
    "setuid": (105, 146), "setgid": (106, 144), "geteuid": (107, 175), "getegid": (108, 177), "setpgid": (109, 154),
    "getppid": (110, 173), "getpgrp": (111, None), "setsid": (112, 157), "setreuid": (113, 145),
    "setregid": (114, 143), "getgroups": (115, 158), "setgroups": (116, 159), "setresuid": (117, 147),
    "getresuid": (118, 148), "setresgid": (119, 149), "getresgid": (120, 150), "getpgid": (121, 155),
    "setfsuid": (122, 151), "setfsgid": (123, 152), "getsid": (124, 156), "capget": (125, 90),
    "rt_sigpending": (127, 136), "rt_sigtimedwait": (128, 137), "rt_sigqueueinfo": (129, 138),
    "rt_sigsuspend": (130, 133), "sigaltstack": (131, 132), "utime": (132, None), "mknod": (133, None),
    "statfs": (137, 43), "fstatfs": (138, 44), "getpriority": (140, 141), "setpriority": (141, 140),
    "sched_setparam": (142, 118), "sched_getparam": (143, 121), "sched_setscheduler": (144, 119),
    "sched_getscheduler": (145, 120), "sched_get_priority_max": (146, 125), "sched_get_priority_min": (147, 126),
    "sched_rr_get_interval": (148, 127), "prctl": (157, 167), "arch_prctl": (158, None), "setrlimit": (160, 164),
    "gettid": (186, 178), "setxattr": (188, 5), "lsetxattr": (189, 6), "fsetxattr": (190, 7), "getxattr": (191, 8),
    "lgetxattr": (192, 9), "fgetxattr": (193, 10), "listxattr": (194, 11), "llistxattr": (195, 12),
    "flistxattr": (196, 13), "removexattr": (197, 14), "lremovexattr": (198, 15), "fremovexattr": (199, 16),
    "tkill": (200, 130), "time": (201, None), "futex": (202, 98), "sched_setaffinity": (203, 122),
    "sched_getaffinity": (204, 123), "epoll_create": (213, None), "getdents64": (217, 61),
    "set_tid_address": (218, 96), "restart_syscall": (219, 128), "semtimedop": (220, 192), "fadvise64": (221, 223),
    "timer_create": (222, 107), "timer_settime": (223, 110), "timer_gettime": (224, 108),
    "timer_getoverrun": (225, 109), "timer_delete": (226, 111), "clock_gettime": (228, 113),
    "clock_getres": (229, 114), "clock_nanosleep": (230, 115), "exit_group": (231, 94), "epoll_wait": (232, None),
    "epoll_ctl": (233, 21), "tgkill": (234, 131), "utimes": (235, None), "waitid": (247, 95), "openat": (257, 56),
    "mkdirat": (258, 34), "mknodat": (259, 33), "fchownat": (260, 54), "futimesat": (261, None),
    "newfstatat": (262, 79), "unlinkat": (263, 35), "renameat": (264, 38), "linkat": (265, 37),
    "symlinkat": (266, 36), "readlinkat": (267, 78), "fchmodat": (268, 53), "faccessat": (269, 48),
    "pselect6": (270, 72), "ppoll": (271, 73), "unshare": (272, 97), "set_robust_list": (273, 99),
    "splice": (275, 76), "tee": (276, 77), "utimensat": (280, 88), "epoll_pwait": (281, 22), "signalfd": (282, None),
    "timerfd_create": (283, 85), "eventfd": (284, None), "fallocate": (285, 47), "timerfd_settime": (286, 86),
    "timerfd_gettime": (287, 87), "accept4": (288, 242), "signalfd4": (289, 74), "eventfd2": (290, 19),
    "epoll_create1": (291, 20), "dup3": (292, 24), "pipe2": (293, 59), "preadv": (295, 69), "pwritev": (296, 70),
    "rt_tgsigqueueinfo": (297, 240), "recvmmsg": (299, 243), "prlimit64": (302, 261), "sendmmsg": (307, 269),
    "getcpu": (309, 168), "renameat2": (316, 276), "getrandom": (318, 278), "memfd_create": (319, 279),
    "execveat": (322, 281), "membarrier": (324, 283), "copy_file_range": (326, 285), "preadv2": (327, 286),
    "pwritev2": (328, 287), "statx": (332, 291), "rseq": (334, 293), "pidfd_send_signal": (424, 424),
    "pidfd_open": (434, 434), "clone3": (435, 435), "close_range": (436, 436), "openat2": (437, 437),
    "faccessat2": (439, 439), "epoll_pwait2": (441, 441), "futex_waitv": (449, 449), "fchmodat2": (452, 452),
    "map_shadow_stack": (453, 453), "futex_wake": (454, 454), "futex_wait": (455, 455), "futex_requeue": (456, 456),
    "mseal": (462, 462),

}  # fmt: skip
# The machines with a table: their audit architecture, their column in SYSCALL_NUMBERS, and their native keyctl (to
# join a session keyring before the filter). On any other machine the sandbox refuses to start: it fails closed.
MACHINES = {"x86_64": (0xC000003E, 0, 250), "aarch64": (0xC00000B7, 1, 219)}
FIRST_UNKNOWN_SYSCALL = 470  # past file_setattr (469, Linux 6.17): calls newer than this table, ENOSYS
X32_SYSCALL_BIT, KEYCTL_JOIN_SESSION_KEYRING = 0x40000000, 1
# fcntl: descriptors, status flags, pipe sizes, memfd seals. Not: F_NOTIFY (dnotify: a watch on a folder shared with
# the judge), F_SETLEASE, F_SETOWN, F_SETOWN_EX, F_SETSIG (signals on another's file access or to other processes),
# nor anything newer.
FCNTL_ALLOWED = (
    0, 1, 2, 3, 4,  # F_DUPFD, F_GETFD, F_SETFD, F_GETFL, F_SETFL
    9, 11, 16,  # F_GETOWN, F_GETSIG, F_GETOWN_EX
    1025, 1030, 1031, 1032, 1033, 1034,  # F_GETLEASE, F_DUPFD_CLOEXEC, F_{SET,GET}PIPE_SZ, F_ADD_SEALS, F_GET_SEALS
)  # fmt: skip
# File locks fail with ENOLCK, as on a file system without lock support: `flock`, and fcntl's record locks, classic and
# per open file description. Every file a candidate can open outside its own /tmp and /dev/shm is an inode it shares
# with the candidates beside it and with the host (the read-only binds of /usr, /etc and the sandbox's modules, the
# device nodes of /dev), and a lock on one, taken on a read-only descriptor and probed by a neighbour, carries a bit.
# A filter cannot tell a shared file from the candidate's own (the descriptor is all it sees), so locks go entirely.
FCNTL_LOCKS = (5, 6, 7, 36, 37, 38)  # F_GETLK, F_SETLK, F_SETLKW, F_OFD_GETLK, F_OFD_SETLK, F_OFD_SETLKW
# ioctl: the terminal and FIO* commands (type 'T' below number 0x80: isatty, termios, the window size, pty, FIONBIO,
# FIOCLEX, FIONREAD; TUN's commands are 'T' from 0xC8) and the socket ones (type 0x89: SIOC*), compared on bits 7-15,
# else ENOTTY, as for a descriptor that has no such command (no device driver's commands, should a device be
# reachable). Denied among them: TIOCSTI and TIOCLINUX (type input into a terminal), TIOCCONS (redirect the console),
# TIOCSETD (line disciplines: kernel code no program here needs), and FIOSETOWN and SIOCSPGRP (F_SETOWN by another
# name).
IOCTL_MASK, IOCTL_TYPES = 0xFF80, (0x5400, 0x8900, 0x8980)
IOCTL_DENIED = (0x5412, 0x541C, 0x541D, 0x5423, 0x8901, 0x8902)
# clone and unshare: no new namespace of any kind (mount, cgroup, UTS, IPC, user, PID, network; time for unshare).
CLONE_NEW_NAMESPACES, CLONE_NEWTIME = 0x7E020000, 0x00000080
# socket and socketpair: AF_UNIX, AF_INET, AF_INET6 and route netlink (getaddrinfo, if_nameindex); not the families
# that leave the network namespace (AF_VSOCK reaches the hypervisor) or are kernel attack surface (AF_ALG, AF_PACKET,
# AF_KEY, ...): those fail with EAFNOSUPPORT, as where the kernel lacks them.
SOCKET_FAMILIES, AF_NETLINK, NETLINK_ROUTE = (1, 2, 10), 16, 0
RET_ALLOW = 0x7FFF0000
EPERM, ENOTTY, ENOLCK, ENOSYS, EAFNOSUPPORT = 1, 25, 37, 38, 97
# Calls denied whole with an errno of their own: clone3 (its flags are behind a pointer a filter cannot read; the C
# library falls back to clone on ENOSYS) and flock (see FCNTL_LOCKS).
DENIED_CALLS = {"clone3": ENOSYS, "flock": ENOLCK}


def errno_return(number: int) -> int:
    return 0x00050000 | number  # SECCOMP_RET_ERRNO


LD, JA, JEQ, JGE, JSET, RET, AND = 0x20, 0x05, 0x15, 0x35, 0x45, 0x06, 0x54  # BPF_LD|W|ABS, BPF_JMP|*|K, BPF_ALU|AND|K
NR, ARCH = 0, 4  # offsets in struct seccomp_data; the low 32 bits of argument i are at 16 + 8 * i (little endian)


def _argument(index: int) -> int:
    return 16 + 8 * index


def _handlers() -> dict:
    """The blocks of the calls filtered by argument, each ending in its own returns (jumps stay short). Each
    argument is compared on its low 32 bits, which is all the kernel reads of it (an int or unsigned int)."""
    allow, eperm, enolck = (RET, 0, 0, RET_ALLOW), (RET, 0, 0, errno_return(EPERM)), (RET, 0, 0, errno_return(ENOLCK))
    m, k = len(FCNTL_ALLOWED), len(FCNTL_LOCKS)
    fcntl = [(LD, 0, 0, _argument(1))] + [(JEQ, m + k + 1 - i, 0, cmd) for i, cmd in enumerate(FCNTL_ALLOWED)]
    fcntl += [(JEQ, k - i, 0, cmd) for i, cmd in enumerate(FCNTL_LOCKS)] + [eperm, enolck, allow]
    d = len(IOCTL_DENIED)
    t = len(IOCTL_TYPES)
    ioctl = [(LD, 0, 0, _argument(1))] + [(JEQ, d + t + 1 - i, 0, cmd) for i, cmd in enumerate(IOCTL_DENIED)]
    ioctl += [(AND, 0, 0, IOCTL_MASK)] + [(JEQ, t + 1 - i, 0, kind) for i, kind in enumerate(IOCTL_TYPES)]
    ioctl += [(RET, 0, 0, errno_return(ENOTTY)), eperm, allow]
    clone = [(LD, 0, 0, _argument(0)), (JSET, 1, 0, CLONE_NEW_NAMESPACES), allow, eperm]
    unshare = [(LD, 0, 0, _argument(0)), (JSET, 1, 0, CLONE_NEW_NAMESPACES | CLONE_NEWTIME), allow, eperm]
    socket = [(LD, 0, 0, _argument(0))] + [(JEQ, 6 - i, 0, family) for i, family in enumerate(SOCKET_FAMILIES)]
    socket += [(JEQ, 0, 2, AF_NETLINK), (LD, 0, 0, _argument(2)), (JEQ, 1, 0, NETLINK_ROUTE)]
    socket += [(RET, 0, 0, errno_return(EAFNOSUPPORT)), allow]
    return {"fcntl": fcntl, "ioctl": ioctl, "clone": clone, "unshare": unshare, "socket": socket, "socketpair": socket}


def syscall_actions(machine: str) -> list[tuple[int, object]]:
    """The system call numbers as intervals: (first number, action) in order, each action holding up to the next
    first number (the last one up to 2**32): a return value, or the name of a call filtered by argument."""
    _, column, _ = MACHINES[machine]
    actions = {}
    for name, row in SYSCALL_NUMBERS.items():
        if row[column] is not None:
            actions[row[column]] = name if name in FILTERED_SYSCALLS else RET_ALLOW
    for name, number in DENIED_CALLS.items():
        actions[SYSCALL_NUMBERS[name][column]] = errno_return(number)
    intervals = [(0, errno_return(EPERM))]
    for number in sorted(actions):
        intervals += [(number, actions[number]), (number + 1, errno_return(EPERM))]
    intervals += [(FIRST_UNKNOWN_SYSCALL, errno_return(ENOSYS)), (X32_SYSCALL_BIT, errno_return(EPERM))]
    merged = []
    for start, action in sorted(dict(intervals).items()):
        if not merged or merged[-1][1] != action:
            merged.append((start, action))
    return merged


def _decide(intervals: list) -> list:
    """A binary search over the intervals on the number already loaded: `JGE first, 0, 1` then `JA` to the upper
    half, so that no conditional jump is long. A leaf returns, or jumps (by name) to a filtered call's block."""
    if len(intervals) == 1:
        action = intervals[0][1]
        return [(JA, 0, 0, action)] if isinstance(action, str) else [(RET, 0, 0, action)]
    middle = len(intervals) // 2
    lower, upper = _decide(intervals[:middle]), _decide(intervals[middle:])
    return [(JGE, 0, 1, intervals[middle][0]), (JA, 0, 0, len(lower))] + lower + upper


def syscall_filter(machine: str) -> bytes:
    """The classic BPF program of the allowlist for `machine` (a key of MACHINES). Built here, in the standard library
    the sandbox's interpreter has, rather than by libseccomp (docs/code_verifier_sandbox.md says why)."""
    arch = MACHINES[machine][0]
    program = [(LD, 0, 0, ARCH), (JEQ, 1, 0, arch), (RET, 0, 0, errno_return(EPERM)), (LD, 0, 0, NR)]
    program += _decide(syscall_actions(machine))
    starts, handlers = {}, _handlers()
    for block in handlers.values():
        if id(block) not in starts:
            starts[id(block)] = len(program)
            program += block
    for pc, (code, _, _, k) in enumerate(program):
        if code == JA and isinstance(k, str):
            program[pc] = (JA, 0, 0, starts[id(handlers[k])] - pc - 1)
    return b"".join(struct.pack("HBBI", *instruction) for instruction in program)


class KernelRestriction:
    """What `restrict_kernel_objects` needs, made once: the C library's functions, the native keyctl number and the
    seccomp program. Building them costs ctypes a few new types per process (about half a millisecond) and the
    program about a millisecond; the fork server (zygote.py) makes them before it forks, so each candidate inherits
    them. They hold constants only, and are used before any candidate code runs."""

    def __init__(self):
        machine = os.uname().machine
        if machine not in MACHINES:
            raise OSError(
                ENOSYS, f"no system call allowlist for this machine ({machine}): the sandbox refuses to start"
            )
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.syscall, self.prctl = self.libc.syscall, self.libc.prctl
        self.keyctl = MACHINES[machine][2]
        program = syscall_filter(machine)
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
    bubblewrap's `--disable-userns` does this for a sandbox it gives a user namespace, but as root it gives none), and
    only the system calls of the allowlist (ALLOWED_SYSCALLS, FILTERED_SYSCALLS): no keys, no BPF, no inotify,
    fanotify or dnotify, no io_uring, no userfaultfd, no perf events, no ptrace. What a candidate can create ends with
    its namespaces (System V IPC with its IPC namespace, sockets with its network namespace, files with its /tmp) or
    with its processes (memfd files, timers, eventfds); file locks, which would outlive neither but reach a neighbour
    through a shared file, fail with ENOLCK."""
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
    """The class of an exception the candidate raised (`exception_class`), a SystemExit's code, and the exception's
    attributes that are plain data (`raised_attributes`)."""
    try:
        found = {"class": exception_class(type(exc), handles)}
        if isinstance(exc, SystemExit):
            found["code"] = encode(exc.code)
    except BaseException:  # a class made to break this: the judge then knows nothing of it (see formats_units.py)
        return {}
    attributes = raised_attributes(exc)
    return {**found, "attrs": attributes} if attributes else found


# The attributes of the builtin exceptions that are not in their instance's __dict__ (C-level members), by class.
BUILTIN_ATTRIBUTES = (
    (OSError, ("errno", "strerror", "filename", "filename2")), (ImportError, ("name", "path")),
    (NameError, ("name",)), (AttributeError, ("name",)), (StopIteration, ("value",)),
    (SyntaxError, ("msg", "filename", "lineno", "offset", "text", "end_lineno", "end_offset")),
    (UnicodeError, ("encoding", "object", "start", "end", "reason")),
)  # fmt: skip
MAX_ATTRIBUTES, MAX_ATTRIBUTE_BYTES = 16, 1 << 12


def raised_attributes(exc: BaseException) -> dict:
    """An exception's `args` and attributes (an OSError's `errno` and `filename`, a CalledProcessError's `returncode`,
    what the candidate's own class set in `__init__`), as plain data: at most MAX_ATTRIBUTES, each at most
    MAX_ATTRIBUTE_BYTES once encoded; an attribute that is not plain data, or that raises when read, stays here."""
    names = ["args"]
    for cls, members in BUILTIN_ATTRIBUTES:
        if isinstance(exc, cls):
            names += members
    try:
        own = vars(exc)
        names += [name for name in list(own)[: 4 * MAX_ATTRIBUTES] if type(name) is str and not name.startswith("_")]
    except BaseException:
        pass
    found = {}
    for name in dict.fromkeys(names):
        try:
            encoded = roomy(encode, getattr(exc, name), _not_data)
            if len(dumps(encoded)) <= MAX_ATTRIBUTE_BYTES:
                found[name] = encoded
        except BaseException:  # not plain data, too deep, or a property made to raise
            continue
        if len(found) >= MAX_ATTRIBUTES:
            break
    return found


def _not_data(obj):
    raise TypeError("not plain data")


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


def run_script(code: str) -> None:
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


COMPILE_ERROR_BYTES = 4096  # what a compile error reports of the compiler's messages: their first lines


def compile_source(source: str, compiler: list, headers: dict) -> None:
    """Compile `source` (written to main.cpp in the candidate's own /tmp, `headers` beside it) with `compiler`, the
    argv the verifier sends (the system's g++, its fixed flags): stdout gets b"OK\n" and the program, or b"CE\n" and
    the compiler's first messages. The candidate's source runs nothing here: a compiler only reads it (and what it
    includes)."""
    import subprocess

    for name, text in {**headers, "main.cpp": source}.items():
        if os.path.basename(name) != name or name in ("", ".", ".."):
            raise ValueError(f"not a file name: {name!r}")
        with open(name, "w", encoding="utf-8") as file:
            file.write(text)
    try:
        done = subprocess.run(
            compiler, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=False
        )
        said, status = done.stdout, done.returncode
    except OSError as exc:
        said, status = f"cannot run the compiler: {exc}".encode(), -1
    if status == 0 and os.path.exists("prog"):
        with open("prog", "rb") as file:
            program = file.read()
        write_all(1, b"OK\n" + program)
        return
    write_all(1, b"CE\n" + (said.strip() or f"the compiler ended with status {status}".encode())[:COMPILE_ERROR_BYTES])


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def prepare_native(init: dict, limits: dict) -> int:
    """Before the limits: the program in a memory file of its own (closed on exec), the named files in /tmp, and the
    rlimits this run asks for (a test's CPU time and memory, no stack limit but the memory's, as judges give it),
    each at most the hard limit this process has (RLIM_INFINITY, -1: that hard limit). Returns the program's
    descriptor."""
    import base64

    for name, text in (init.get("files") or {}).items():
        with open(os.path.join(limits["workdir"], os.path.basename(name)), "w", encoding="utf-8") as file:
            file.write(text)
    fd = os.memfd_create("program", os.MFD_CLOEXEC)
    write_all(fd, base64.b64decode(init["program"]))
    wanted = {}
    for name, (soft, hard) in (init.get("rlimits") or {}).items():
        ceiling = resource.getrlimit(getattr(resource, name))[1]
        if ceiling != resource.RLIM_INFINITY:
            soft, hard = (ceiling if v == resource.RLIM_INFINITY else min(v, ceiling) for v in (soft, hard))
        wanted[name] = (soft, hard)
    limits["rlimits"] = {**limits["rlimits"], **wanted}
    return fd


def exec_native(fd: int, init: dict) -> None:
    """Become the program: same process, same cgroup, rlimits, uid and seccomp filter (both kept across exec)."""
    argv = [str(a) for a in init.get("argv") or ["main"]]
    env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": "/tmp"}
    try:
        os.execve(fd, argv, env)
    except OSError as exc:
        os.write(2, f"cannot run the program: {exc}\n".encode())
        os._exit(126)


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
        run_script(init["code"])  # its stdin is fd 0 already (stdin_from_text)
    elif init["mode"] == "native":
        stdin_from_text(init.get("stdin", ""))
        program = prepare_native(init, limits)
        os.close(request_fd)
        set_up(limits, reply_fd)
        os.close(reply_fd)
        exec_native(program, init)
    elif init["mode"] == "compile":
        stdin_from_text("")
        os.close(request_fd)
        set_up(limits, reply_fd)
        os.close(reply_fd)
        compile_source(init["source"], init["compiler"], init.get("headers") or {})
    else:
        set_up(limits, reply_fd)
        serve_functions(init["code"], requests, reply_fd)


def main() -> None:
    prepare_kernel_restriction()  # the seccomp program (0.2 ms) while warm, before any candidate is known, as zygote.py
    serve(int(sys.argv[1]), int(sys.argv[2]), json.loads(sys.argv[3]))


if __name__ == "__main__":
    main()
