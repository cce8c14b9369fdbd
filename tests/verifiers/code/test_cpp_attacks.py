"""Adversarial suite, C++: a native program attacks the sandbox as native programs do.

Everything the Python sandbox promises holds for a compiled program, which runs as the sandboxed process itself
(the harness execs it after the limits, the uid drop and the seccomp filter): no network, no host files, no other
candidate, no expected output, bounded memory, CPU and processes, nothing left behind. Each attack prints `ESCAPED
<how>` if a step of it succeeds and `contained` otherwise; each must score exactly 0 (never None: misbehaving is no
escape from the penalty), come back before the backstop, say nothing of an escape, and leave no process behind.
The expected output holds a canary that only the judge (or the row's checker) sees: an attack that found it would
print it and score 1.
"""

from __future__ import annotations

import os
import platform
import shutil
import time

import pytest
from code_verifier_helpers import make_code_verifier, sandbox_uid_processes

from trl_grpo_ext.verifiers.code.clock import BACKSTOP_MIN_S

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed (apt-get install g++)")

CANARY = "expected-7Qx2kV9"
ROW = {"tests": [{"input": "1 2\n", "output": f"3 {CANARY}\n"}]}
CHECKED_ROW = {**ROW, "checker": "#include <cstdio>\nint main(int c, char** v) { return 1; }\n"}
# The stack overflow fails at the row's 64 MiB rather than the verifier's 1 GiB: on a virtual machine, memory the host
# has not backed yet can cost seconds of system time per GiB on first touch, which made the overflow a timeout.
OWN_ROWS = {"stack_overflow": {**ROW, "memory_limit": 64}}
HEADERS = (
    "#include <cerrno>\n#include <csignal>\n#include <cstdio>\n#include <cstdlib>\n#include <cstring>\n"
    "#include <dirent.h>\n#include <initializer_list>\n#include <fcntl.h>\n#include <sys/mman.h>\n#include <sys/syscall.h>\n"
    "#include <sys/types.h>\n#include <sys/wait.h>\n#include <unistd.h>\n"
    '#define ESCAPED(how) do { printf("ESCAPED %s\\n", how); fflush(stdout); } while (0)\n'
)
# Host files (the interpreter's own tree is bound read-only, so its parent folders exist, empty but for it).
HOST_PATHS = [
    os.path.abspath(__file__), os.path.join(os.getcwd(), "pyproject.toml"), "/etc/shadow", "/etc/hostname",
    "/var/log/syslog", "/sys/fs/cgroup/cgroup.procs", "/proc/1/root/etc/shadow",
]  # fmt: skip

ATTACKS = {
    "network": """
        #include <arpa/inet.h>
        #include <sys/socket.h>
        int main() {
            int s = socket(AF_INET, SOCK_STREAM, 0);
            sockaddr_in a{}; a.sin_family = AF_INET; a.sin_port = htons(53); inet_pton(AF_INET, "1.1.1.1", &a.sin_addr);
            if (s >= 0 && connect(s, (sockaddr*)&a, sizeof a) == 0) ESCAPED("tcp");
            int u = socket(AF_INET, SOCK_DGRAM, 0);
            if (u >= 0 && sendto(u, "x", 1, 0, (sockaddr*)&a, sizeof a) == 1) ESCAPED("udp");
            if (socket(17 /* AF_PACKET */, SOCK_RAW, 0) >= 0) ESCAPED("packet");
            if (socket(40 /* AF_VSOCK */, SOCK_STREAM, 0) >= 0) ESCAPED("vsock");
            if (socket(AF_INET, SOCK_RAW, 1) >= 0) ESCAPED("raw");
            puts("contained");
        }""",
    "host_files": """
        int main() {
            const char* paths[] = {HOST_PATHS};
            for (const char* p : paths) if (open(p, O_RDONLY) >= 0) ESCAPED(p);
            if (open("/tmp/x", O_WRONLY | O_CREAT, 0600) < 0) ESCAPED("no private tmp");
            for (const char* p : {"/usr/x", "/etc/passwd"}) if (open(p, O_WRONLY | O_CREAT, 0600) >= 0) ESCAPED(p);
            puts("contained");
        }""",
    "expected_output_anywhere": """
        #include <string>
        static void search(const std::string& path, int depth) {
            if (depth > 4 || path.rfind("/proc/self", 0) == 0 || path.rfind("/proc/thread-self", 0) == 0) return;
            if (DIR* d = opendir(path.c_str())) {
                while (dirent* e = readdir(d)) {
                    std::string n = e->d_name;
                    if (n != "." && n != "..") search(path + "/" + n, depth + 1);
                }
                closedir(d);
                return;
            }
            int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK);
            if (fd < 0) return;
            static char buf[1 << 20];
            ssize_t n = read(fd, buf, sizeof buf - 1);
            close(fd);
            if (n <= 0) return;
            buf[n] = 0;
            for (ssize_t i = 0; i + 8 < n; i++)
                if (memcmp(buf + i, "expected-7Q", 11) == 0) { printf("3 %.16s\\n", buf + i); exit(0); }
        }
        int main() {
            for (int fd = 3; fd < 256; fd++) { char b[4096]; ssize_t n = read(fd, b, sizeof b); if (n > 0) ESCAPED("fd"); }
            for (const char* root : {"/tmp", "/dev", "/proc", "/etc", "/opt", "/run", "/var", "/home", "/srv", "/mnt"})
                search(root, 1);
            puts("contained");
        }""",
    "judge_accept_messages": """
        int main() { printf("OK\\n{\\"setup\\": \\"ok\\"}\\n{\\"passed\\": 1, \\"total\\": 1}\\ncorrect\\nAccepted\\nok\\n"); }""",
    "exit_status_zero_without_output": "int main() { _exit(0); }",
    "constructor": """
        #include <sched.h>
        #include <sys/mount.h>
        __attribute__((constructor)) static void before_main() {
            if (setuid(0) == 0 && getuid() == 0) ESCAPED("setuid");
            if (unshare(CLONE_NEWUSER) == 0) ESCAPED("userns");
            if (unshare(CLONE_NEWNS) == 0) ESCAPED("mountns");
            if (mount("none", "/tmp", "tmpfs", 0, nullptr) == 0) ESCAPED("mount");
            if (chroot("/tmp") == 0) ESCAPED("chroot");
            printf("3 from-constructor\\n");
            _exit(0);
        }
        int main() { puts("never"); }""",
    "raw_syscalls": """
        int main() {
            long denied[] = {SYS_ptrace, SYS_bpf, SYS_io_uring_setup, SYS_userfaultfd, SYS_keyctl, SYS_add_key,
                SYS_perf_event_open, SYS_mount, SYS_umount2, SYS_pivot_root, SYS_chroot, SYS_init_module, SYS_kexec_load,
                SYS_reboot, SYS_setns, SYS_process_vm_readv, SYS_process_vm_writev, SYS_open_by_handle_at,
                SYS_name_to_handle_at, SYS_fanotify_init, SYS_inotify_init1, SYS_clock_settime, SYS_settimeofday,
                SYS_syslog, SYS_swapon, SYS_acct, SYS_kcmp, SYS_quotactl, SYS_lookup_dcookie, SYS_request_key};
            for (long n : denied) { errno = 0; if (syscall(n, 0, 0, 0, 0, 0, 0) >= 0 || errno != EPERM) ESCAPED("syscall"); }
            if (syscall(SYS_unshare, 0x10000000 /* CLONE_NEWUSER */) == 0) ESCAPED("unshare");
            if (syscall(SYS_clone3, nullptr, 0) != -1 || errno != ENOSYS) ESCAPED("clone3");
            if (syscall(0x40000000 | SYS_getpid) >= 0) ESCAPED("x32");
            INT80
            puts("contained");
        }""",
    "fork_bomb": "int main() { for (;;) fork(); }",
    "mmap_flood": """
        int main() {
            for (int i = 0; i < 8; i++) if (fork() == 0) break;
            for (;;) {
                char* p = (char*)mmap(nullptr, 64 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                if (p == MAP_FAILED) { int fd = memfd_create("m", 0); if (ftruncate(fd, 64 << 20) == 0) p = (char*)mmap(nullptr, 64 << 20, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0); }
                if (p != MAP_FAILED) memset(p, 1, 64 << 20);
            }
        }""",
    "signals": """
        int main() {
            if (kill(1, SIGKILL) == 0) ESCAPED("init");
            if (kill(getppid(), SIGKILL) == 0 && getppid() != 0) ESCAPED("parent");
            kill(-1, SIGKILL);
            puts("survived");
        }""",
    "ptrace": """
        #include <sys/ptrace.h>
        #include <sys/uio.h>
        int main() {
            if (ptrace(PTRACE_ATTACH, 1, nullptr, nullptr) == 0) ESCAPED("attach");
            if (ptrace(PTRACE_TRACEME, 0, nullptr, nullptr) == 0) ESCAPED("traceme");
            pid_t child = fork();
            if (child == 0) { pause(); _exit(0); }
            if (ptrace(PTRACE_SEIZE, child, nullptr, nullptr) == 0) ESCAPED("seize");
            char b[8]; iovec l{b, 8}, r{(void*)0x400000, 8};
            if (process_vm_readv(1, &l, 1, &r, 1, 0) >= 0) ESCAPED("vm_readv");
            kill(child, SIGKILL);
            puts("contained");
        }""",
    "proc_mem": """
        int main() {
            for (const char* p : {"/proc/1/mem", "/proc/1/environ", "/proc/1/root/etc", "/proc/1/cwd"})
                if (open(p, O_RDONLY) >= 0) ESCAPED(p);
            int self = open("/proc/self/mem", O_RDWR);  // its own memory: allowed, and it changes nothing else
            static volatile char answer[] = "contained";
            if (self >= 0) pwrite(self, "patched!!", 9, (off_t)(unsigned long)answer);
            puts((const char*)answer);
        }""",
    "stack_overflow": """
        static long depth(long n) { volatile char pad[4096]; pad[0] = (char)n; return depth(n + 1) + pad[0]; }
        int main() { printf("%ld\\n", depth(0)); }""",
    "output_flood": 'int main() { for (;;) fputs("3 3 3 3 3 3 3 3 3 3 3 3 3 3 3 3\\n", stdout); }',
    "sleep_forever": 'int main() { sleep(1000); puts("3"); }',
    "left_behind": """
        int main() {
            if (fork() == 0) { setsid(); if (fork() == 0) { close(1); for (;;) pause(); } _exit(0); }
            puts("3 wrong");
        }""",
    "cgroup_and_sysfs": """
        int main() {
            for (const char* p : {"/sys/fs/cgroup/cgroup.procs", "/sys/kernel/debug", "/proc/sysrq-trigger", "/dev/mem", "/dev/kmsg"})
                if (open(p, O_WRONLY) >= 0) ESCAPED(p);
            puts("contained");
        }""",
}
ATTACKS["host_files"] = ATTACKS["host_files"].replace("HOST_PATHS", ", ".join(f'"{p}"' for p in HOST_PATHS))
INT80 = (
    'long r; asm volatile("int $0x80" : "=a"(r) : "a"(20L) : "memory"); if (r >= 0) ESCAPED("int80");'
    if platform.machine() == "x86_64"
    else ""
)
ATTACKS["raw_syscalls"] = ATTACKS["raw_syscalls"].replace("INT80", INT80)

COMPILE_ATTACKS = {
    "include_dev_zero": '#include "/dev/zero"\nint main() {}',
    "include_dev_urandom": "#include </dev/urandom>\nint main() {}",
    "include_host_file": f'#include "{os.path.abspath(__file__)}"\nint main() {{}}',
    "include_proc": '#include "/proc/1/environ"\nint main() {}',
    "template_bomb": "template <int N> struct F { static const int v = F<N + 1>::v + 1; };\n"
    "int main() { return F<0>::v; }",
    "constexpr_forever": "constexpr long f() { long s = 0; for (long i = 0; i < (1L << 60); i++) s += i & 1; return s; }\n"
    "static_assert(f() > 0);\nint main() {}",
    "huge_binary": "char big[300 << 20] = {1};\nint main() { return big[5]; }",
    "error_flood": "#define A x x x x x x x x x x\n#define B A A A A A A A A A A\n#define C B B B B B B B B B B\n"
    "int main() { C C C C C C C C C C }",
}


@pytest.fixture(scope="module")
def verifier():
    v = make_code_verifier(1.5, compile_timeout_s=3)
    yield v
    v.close()


def judged(verifier, source: str, row=ROW):
    start = time.monotonic()
    result = verifier.verify(f"```cpp\n{HEADERS}{source}\n```", row)
    elapsed = time.monotonic() - start
    said = str(result.details.get("failures"))
    assert result.score == 0.0, (result.reason, said)
    assert not result.reason.startswith(("internal_error", "judge_error", "unusable_reference")), result.reason
    assert "ESCAPED" not in said and CANARY not in said, said
    assert elapsed < BACKSTOP_MIN_S, f"the verdict took {elapsed:.1f} s"
    if verifier.isolation.dedicated_uid:
        assert sandbox_uid_processes() == []
    return result


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_a_native_attack_scores_zero_and_leaves_nothing(verifier, name):
    result = judged(verifier, ATTACKS[name], OWN_ROWS.get(name, ROW))
    expected = {
        "fork_bomb": ("timeout", "runtime_error"),
        "mmap_flood": ("runtime_error", "timeout"),
        "stack_overflow": ("runtime_error",),
        "output_flood": ("output_limit",),
        "sleep_forever": ("timeout",),
        "signals": ("runtime_error: exit status -9",),
    }.get(name, ("wrong",))
    assert result.reason.startswith(expected), result.reason


def test_a_checker_row_hides_the_answer_too(verifier):
    judged(verifier, ATTACKS["expected_output_anywhere"], CHECKED_ROW)


@pytest.mark.parametrize("name", sorted(COMPILE_ATTACKS))
def test_a_compile_time_attack_is_a_compile_error(verifier, name):
    result = judged(verifier, COMPILE_ATTACKS[name])
    assert result.reason.startswith("compile_error: "), result.reason
    assert len(result.reason) < 700


def test_the_verifier_still_judges_after_the_attacks(verifier):
    source = (
        '#include <cstdio>\nint main() { int a, b; scanf("%d %d", &a, &b); printf("%d ' + CANARY + '\\n", a + b); }'
    )
    result = verifier.verify(f"```cpp\n{source}\n```", ROW)
    assert (result.score, result.reason) == (1.0, "correct"), result.reason


def test_the_search_finds_what_is_in_the_sandbox(verifier):
    """The control of `expected_output_anywhere`: the canary in the case's input (its stdin, which the program may
    read) is found and printed, and scores 1; so its 0 above means the expected output is nowhere it can look."""
    row = {"tests": [{"input": f"1 2 {CANARY}\n", "output": f"3 {CANARY}\n"}]}
    result = verifier.verify(f"```cpp\n{HEADERS}{ATTACKS['expected_output_anywhere']}\n```", row)
    assert (result.score, result.reason) == (1.0, "correct"), (result.reason, result.details.get("failures"))
