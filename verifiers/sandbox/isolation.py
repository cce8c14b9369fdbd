"""Which isolation this machine gives untrusted candidate code, decided once per process by starting a real sandbox.

- "bwrap": bubblewrap namespaces (PID, network, IPC, UTS, mount): a read-only view of /usr and the Python install
  only (no /home, /root, /work, and an /etc of four made-up files, none of the host's), a private size-limited /tmp
  and /dev/shm, no network device but loopback, an empty
  environment; when the PID namespace's first process ends, the kernel kills every process left in it. As root,
  each candidate gets these namespaces and its /tmp afresh inside one long-lived sandbox (sandbox/fork.py).
- "rlimits": a plain process group with resource limits and an empty environment. It does NOT hide the file system,
  block the network or catch processes that leave the process group. It is used only when asked for by name, and
  then a warning lists what the candidate can do.

`isolation="auto"` (the default) means bubblewrap or nothing: without it, the verifier refuses to start and says how
to install it, or how to accept the weak level knowingly. A fork bomb must stop at a process limit at either level:
as root, the harness drops to a uid of its own (sandbox/uids.py) after setting RLIMIT_NPROC; as another user,
bubblewrap's own user namespace gives each sandbox its own RLIMIT_NPROC count (Linux 5.14 and later), which the probe
checks. Where neither holds, bubblewrap is refused too.

The candidate imports the standard library only, unless `site_packages=True` adds the interpreter's site-packages
directories (mounted read-only under bubblewrap, on `sys.path` at either level; their .pth files are not followed).
"""

from __future__ import annotations

import functools
import json
import logging
import os
import pwd
import resource
import shutil
import subprocess
import sys
import threading
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from ..code.standalone import STANDALONE_DIR
from .process import SAID_CHARS
from .uids import FIRST_SANDBOX_UID, SANDBOX_UID_COUNT, UIDS

logger = logging.getLogger("trl_grpo_ext.verifiers")

SANDBOX_FILES = ("harness.py", "protocol.py", "zygote.py")
# The candidate's /etc under bubblewrap: made up here, nothing of the host's. What a plain interpreter finds there and
# the standard library reads: the user and group of a uid (`getpass.getuser()`, `pwd`, `grp`), `localhost`
# (`socket.gethostbyname`, a server bound to ("localhost", port)), and where to look them up (files only: no DNS).
ETC_FILES = ("passwd", "group", "hosts", "nsswitch.conf")
# The folders of third-party packages under a mounted tree, hidden from the candidate (see hidden_package_folders).
PACKAGE_FOLDERS = (
    "lib/python3*/site-packages", "lib/python3*/dist-packages", "lib/python3/dist-packages",
    "lib64/python3*/site-packages", "local/lib/python3*/site-packages", "local/lib/python3*/dist-packages",
)  # fmt: skip
INSIDE_DIR = "/opt/trl_grpo_ext_sandbox"
# Where bubblewrap mounts the site-packages (`site_packages=True`): outside /tmp, since the fresh /tmp of each
# candidate would hide a virtualenv that lives under /tmp.
SITE_PACKAGES_DIR = "/opt/trl_grpo_ext_site_packages"
ISOLATION_CHOICES = ("auto", "bwrap", "rlimits")
INSTALL_HINT = "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora/RHEL: dnf install bubblewrap)"
PER_UID_LIMIT = "RLIMIT_NPROC on a dedicated uid"
PER_NAMESPACE_LIMIT = "RLIMIT_NPROC in the sandbox's own user namespace"
PROBE_FORKS = 8  # the probe sets RLIMIT_NPROC to 4 and tries this many forks


@dataclass(frozen=True)
class Isolation:
    level: str  # "bwrap" or "rlimits"
    dedicated_uid: bool  # processes run as an unprivileged uid of their own: RLIMIT_NPROC holds, kill-all by uid
    python: str
    process_limit: str | None = None  # what bounds the candidate's process count; None: nothing
    warning: str | None = None
    site_packages: tuple[str, ...] = ()  # importable read-only by the candidate (`site_packages=True`); else stdlib
    cgroup: str | None = None  # "v1" or "v2": a cgroup per candidate bounds memory, processes and CPU; None: rlimits

    def describe(self) -> dict:
        """The fields as a dict, a new one per call (every verdict's details carry one): copied from the one made
        first, as `asdict` costs a tenth of a millisecond per verdict and the fields never change (frozen, and their
        values are strings, booleans and a tuple of strings)."""
        return dict(_fields_of(self))


@functools.lru_cache(maxsize=8)
def _fields_of(isolation: Isolation) -> dict:
    return asdict(isolation)


def sandbox_python() -> str:
    """The base interpreter (not the virtualenv's): the sandbox runs it with -I -S, standard library only."""
    return os.path.realpath(getattr(sys, "_base_executable", None) or sys.executable)


def sandbox_env(home: str) -> dict:
    # Two malloc arenas: glibc reserves 64 MiB of address space per thread arena, which RLIMIT_AS would count; and
    # numerical libraries (with `site_packages=True`) on one thread, for the same reason (OpenBLAS sizes its buffers
    # to the node's cores).
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": home, "LANG": "C.UTF-8", "MALLOC_ARENA_MAX": "2"}
    return {**env, **{name: "1" for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}}


def candidate_site_packages(level: str, site_packages: tuple[str, ...]) -> list[str]:
    """The site-packages folders as the candidate sees them: under bubblewrap, mounted at SITE_PACKAGES_DIR/<i>; at
    the rlimits level, where they are."""
    if level != "bwrap":
        return list(site_packages)
    return [f"{SITE_PACKAGES_DIR}/{i}" for i in range(len(site_packages))]


def find_site_packages(python: str | None) -> tuple[str, ...]:
    """The site-packages directories of `python` (None: the trainer's interpreter), as real paths.

    Only the directories themselves: the sandbox runs with -S, so their .pth files (editable installs, path hooks
    that point elsewhere, such as this project's own checkout) are not followed.
    """
    query = "import json, site; print(json.dumps(site.getsitepackages()))"
    if python is None:
        import site

        found = site.getsitepackages()
    else:
        try:
            run = subprocess.run([python, "-E", "-c", query], capture_output=True, timeout=60, check=True)
            found = json.loads(run.stdout)
        except (OSError, ValueError, subprocess.SubprocessError) as exc:
            raise RuntimeError(f"code verifier: cannot ask python={python!r} for its site-packages: {exc}") from exc
    paths = tuple(dict.fromkeys(os.path.realpath(p) for p in found if os.path.isdir(p)))
    if not paths:
        raise RuntimeError(
            f"code verifier: site_packages=True, but the interpreter {python or sys.executable} has no site-packages "
            "directory; pass site_packages=False (standard library only) or another python="
        )
    return paths


def open_sandbox_files() -> list[int]:
    """Descriptors of SANDBOX_FILES, then of ETC_FILES (memory files holding `etc_files()`), for
    `bwrap_command(files=...)`: pass them to bubblewrap, then close them."""
    fds = []
    try:
        for name in SANDBOX_FILES:
            fds.append(os.open(STANDALONE_DIR / name, os.O_RDONLY | os.O_CLOEXEC))
        for name, data in etc_files().items():
            fds.append(os.memfd_create(name, os.MFD_CLOEXEC))
            os.write(fds[-1], data)
            os.lseek(fds[-1], 0, os.SEEK_SET)
    except OSError:
        for fd in fds:
            os.close(fd)
        raise
    return fds


@functools.lru_cache(maxsize=1)
def etc_files() -> dict[str, bytes]:
    """The contents of ETC_FILES: root, nobody, every sandbox uid (a user "sandbox" and a group of that uid, home /tmp)
    and this process's own uid (which bubblewrap keeps in a user namespace of its own, not root); localhost, on IPv4
    and IPv6."""
    uids = {
        0: "root",
        65534: "nobody",
        **dict.fromkeys(range(FIRST_SANDBOX_UID, FIRST_SANDBOX_UID + SANDBOX_UID_COUNT), "sandbox"),
    }
    uids.setdefault(os.geteuid(), "sandbox")
    homes = {0: "/root", 65534: "/nonexistent"}
    passwd = "".join(f"{name}:x:{uid}:{uid}:{name}:{homes.get(uid, '/tmp')}:/bin/sh\n" for uid, name in uids.items())
    group = "".join(f"{name}:x:{uid}:\n" for uid, name in uids.items())
    hosts = "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"
    nsswitch = "".join(
        f"{db}: files\n" for db in ("passwd", "group", "shadow", "hosts", "networks", "protocols", "services")
    )
    return {name: text.encode() for name, text in zip(ETC_FILES, (passwd, group, hosts, nsswitch))}


def hidden_package_folders(trees: tuple[str, ...]) -> list[str]:
    """The site-packages and dist-packages folders of every Python under `trees` (the folders mounted for the
    candidate): hidden behind an empty read-only tmpfs, so that the candidate imports the standard library only."""
    found = []
    for tree in trees:
        for pattern in PACKAGE_FOLDERS:
            found += [
                str(path) for path in sorted(Path(tree).glob(pattern)) if path.is_dir() and not path.is_symlink()
            ]
    return list(dict.fromkeys(found))


def bwrap_command(
    python: str, tmp_mb: int, site_packages: tuple[str, ...] = (), die_with_parent: bool = True,
    cgroup_namespace: bool = True, files: list[int] | None = None, shm_mb: int = 0,
) -> list:  # fmt: skip
    """The bubblewrap command line, up to the interpreter to run inside. `die_with_parent=False` for a sandbox that
    outlives the thread that starts it (the fork server, which ends when its control socket closes);
    `cgroup_namespace=False` for a fork server whose children join cgroups of their own (each then unshares one);
    `files`: descriptors of SANDBOX_FILES (`open_sandbox_files`), copied in by bubblewrap rather than bound, so that
    no host path of this package shows in the candidate's /proc/self/mountinfo, then of ETC_FILES (the candidate's
    /etc); `shm_mb`: a private tmpfs of that size
    on /dev/shm (POSIX semaphores and shared memory, for `multiprocessing`; the fork server's candidates each mount
    their own)."""
    prefix = str(Path(python).resolve().parent.parent)
    cmd = ["bwrap", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts"]
    cmd += ["--unshare-cgroup-try"] if cgroup_namespace else []
    cmd += ["--die-with-parent"] if die_with_parent else []
    # The private /tmp first: an interpreter or packages that live under the host's /tmp (a virtualenv made there)
    # are bound on top of it below, instead of being hidden by it.
    cmd += ["--new-session", "--proc", "/proc", "--dev", "/dev"]
    cmd += ["--size", str(tmp_mb << 20), "--tmpfs", "/tmp", "--chmod", "1777", "/tmp"]
    if shm_mb > 0:
        cmd += ["--size", str(shm_mb << 20), "--tmpfs", "/dev/shm", "--chmod", "1777", "/dev/shm"]
    cmd += ["--ro-bind", "/usr", "/usr"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            cmd += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            cmd += ["--ro-bind", top, top]
    # A virtualenv's python is a link to the base interpreter: the link's own tree is bound too, where it runs from.
    trees = [tree for tree in dict.fromkeys([prefix, str(Path(python).absolute().parent.parent)]) if tree != "/usr"]
    trees = [tree for tree in trees if not tree.startswith("/usr/")]
    for tree in trees:
        cmd += _open_parents(tree) + ["--ro-bind", tree, tree]
    for folder in hidden_package_folders(("/usr", *trees)):
        cmd += ["--size", "4096", "--tmpfs", folder, "--remount-ro", folder]
    for path, inside in zip(site_packages, candidate_site_packages("bwrap", site_packages)):
        cmd += _open_parents(inside) + ["--ro-bind", path, inside]
    cmd += _open_parents(f"{INSIDE_DIR}/x")
    inside = [f"{INSIDE_DIR}/{name}" for name in SANDBOX_FILES] + [f"/etc/{name}" for name in ETC_FILES]
    cmd += ["--perms", "0755", "--dir", "/etc"] if len(files or ()) > len(SANDBOX_FILES) else []
    for path, fd in zip(inside, files or ()):
        cmd += ["--perms", "0644", "--ro-bind-data", str(fd), path]
    cmd += ["--clearenv", "--chdir", "/tmp"]
    for key, value in sandbox_env("/tmp").items():
        cmd += ["--setenv", key, value]
    if os.geteuid() == 0:  # keep only what the uid drop needs
        cmd += ["--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    else:  # a user namespace of its own: RLIMIT_NPROC then counts this sandbox's processes only; none nested in it
        cmd += ["--unshare-user", "--disable-userns"]
    return cmd


def _open_parents(path: str) -> list[str]:
    """bwrap creates missing parents of a mount point with mode 0700; the uid the candidate runs as needs 0755."""
    cmd = []
    for parent in reversed(Path(path).parents[:-1]):
        cmd += ["--perms", "0755", "--dir", str(parent)]
    return cmd


_DETECTED: dict[tuple[str, str], Isolation] = {}
_DETECT_LOCK = threading.Lock()


def detect_isolation(requested: str = "auto", python: str | None = None, site_packages: bool = False) -> Isolation:
    """The isolation `requested` ("auto" or "bwrap": bubblewrap; "rlimits": limits only), checked once per process
    by starting a real sandbox. Raises RuntimeError, saying what to do, when it cannot be had safely.

    `site_packages=True` adds the site-packages of `python` (None: the trainer's interpreter) to what the candidate
    may import, read-only; the default is the standard library only."""
    if requested not in ISOLATION_CHOICES:
        raise ValueError(f"isolation={requested!r} is not supported. Valid choices: {', '.join(ISOLATION_CHOICES)}.")
    option, python = python, python or sandbox_python()
    with _DETECT_LOCK:
        if (requested, python) not in _DETECTED:
            _DETECTED[(requested, python)] = _detect(requested, python)
    isolation = _DETECTED[(requested, python)]
    if not site_packages:
        return isolation
    paths = find_site_packages(option)
    if isolation.dedicated_uid and not all(_readable_by_others(Path(p)) for p in paths):
        raise RuntimeError(
            f"code verifier: site_packages=True, but the candidate runs as an unprivileged uid that cannot read "
            f"{', '.join(paths)} (each parent needs o+x, the directory o+rx); make them readable or pass "
            "site_packages=False"
        )
    return replace(isolation, site_packages=paths)


def _detect(requested: str, python: str) -> Isolation:
    root = os.geteuid() == 0
    if requested == "rlimits":
        return _rlimits_isolation(python, root)
    if shutil.which("bwrap") is None:
        problem = "bubblewrap (bwrap) is not installed"
    else:
        problem, forks = _probe_bwrap(python, root)
        if problem is None and (root or 0 < forks < PROBE_FORKS):
            limit = PER_UID_LIMIT if root else PER_NAMESPACE_LIMIT
            logger.info("code verifier: bubblewrap isolation; process limit: %s", limit)
            return Isolation("bwrap", dedicated_uid=root, python=python, process_limit=limit)
        if problem is None:
            raise RuntimeError(
                f"code verifier: bubblewrap runs here as uid {os.geteuid()}, but no process limit holds inside it "
                f"(RLIMIT_NPROC=4 let the probe start {forks} of {PROBE_FORKS} processes; a per-sandbox count needs "
                "a user namespace of its own, Linux 5.14 or later), so a fork bomb could exhaust the machine. Run the "
                "training as root (the sandbox then drops to a uid of its own), or use a newer kernel."
            )
    raise RuntimeError(
        f"code verifier: isolation={requested!r} needs bubblewrap, but {problem}. Either {INSTALL_HINT} and make sure "
        "it can start (unprivileged user namespaces allowed when not root), or pass isolation='rlimits' to accept "
        "weak isolation knowingly: candidate code could then read the file system, use the network and write "
        "world-writable folders (see docs/code_verifier_sandbox.md, Isolation levels)."
    )


def _probe_bwrap(python: str, root: bool) -> tuple[str | None, int]:
    """(None, forks) if a sandbox starts and does what the real ones do: as root, drop to a sandbox uid; otherwise
    count the processes it may start under RLIMIT_NPROC=4. (problem, 0) when it cannot start."""
    uid = UIDS.acquire() if root else None
    probe = (
        f"import os; os.setgroups([]); os.setgid({uid}); os.setuid({uid}); print(0)"
        if root
        else "import os, resource\n"
        "resource.setrlimit(resource.RLIMIT_NPROC, (4, 4)); r, w = os.pipe(); n = 0\n"
        f"for _ in range({PROBE_FORKS}):\n"
        "    try: pid = os.fork()\n"
        "    except OSError: break\n"
        "    if pid == 0: os.close(w); os.read(r, 1); os._exit(0)\n"
        "    n += 1\n"
        "print(n)\n"
    )
    try:
        run = subprocess.run(
            [*bwrap_command(python, 1), python, "-I", "-S", "-c", probe], capture_output=True, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap cannot start a sandbox here: {exc}", 0
    finally:
        if uid is not None and UIDS.kill(uid):
            UIDS.release(uid)
        elif uid is not None:
            UIDS.discard(uid)
    if run.returncode != 0:
        return f"bwrap cannot start a sandbox here: {run.stderr.decode(errors='replace').strip()[:SAID_CHARS]}", 0
    return None, int(run.stdout.strip() or 0)


def _rlimits_isolation(python: str, root: bool) -> Isolation:
    if root:  # never run untrusted code as root: the harness must be able to drop to a dedicated uid
        python = _python_for_others(python)
        if python is None:
            raise RuntimeError(
                "code verifier: refusing to run candidate code as root with isolation='rlimits' without an "
                "interpreter and harness that an unprivileged uid can read: "
                f"{INSTALL_HINT} and use isolation='auto', or pass python= a world-readable interpreter."
            )
    warning = rlimits_warning(root)
    logger.warning(warning)
    return Isolation(
        "rlimits", dedicated_uid=root, python=python, process_limit=PER_UID_LIMIT if root else None, warning=warning
    )


def rlimits_warning(root: bool) -> str:
    """Everything a candidate can do under isolation='rlimits' (resource limits, an empty environment, no namespace)."""
    common = (
        "read every file that {who} may read (datasets, code, configuration, {secrets}); use the network (download, "
        "upload, reach services listening on this host such as torch.distributed's TCPStore, Jupyter or Ray); write "
        "and fill world-writable folders (/tmp, /var/tmp, /dev/shm) and leave files there; list the machine's "
        "processes and read their command lines"
    )
    if root:
        can = common.format(who="any user", secrets="anything readable by all")
        held = (
            "It cannot signal the trainer or write its files (it runs as an unprivileged uid of its own, whose "
            "processes are all killed after each verification), and RLIMIT_NPROC on that uid bounds its processes."
        )
    else:
        user = _user_name()
        nproc = resource.getrlimit(resource.RLIMIT_NPROC)[0]
        can = common.format(who=f"your user ({user})", secrets="keys in ~/.ssh, tokens in ~/.cache/huggingface")
        can += (
            "; and, running as you: kill, trace or signal the trainer and every process of yours, read, change or "
            "delete its checkpoints, outputs and logs, and start processes that leave its process group and outlive "
            "the verification. No process limit holds: a fork bomb stops only at your user's limit "
            f"(ulimit -u = {'unlimited' if nproc == resource.RLIM_INFINITY else nproc}), which the trainer shares."
        )
        held = "Only CPU time, memory, file size, open files and the wall-clock deadline are limited."
    return (
        "code verifier: isolation='rlimits' gives weak isolation (no bubblewrap): the candidate code of every "
        f"completion can {can}. {held} For real isolation, {INSTALL_HINT} and use isolation='auto'."
    )


def _user_name() -> str:
    try:
        return pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        return f"uid {os.geteuid()}"


def _readable_by_others(path: Path) -> bool:
    """Can an unprivileged uid reach `path` (execute bit for others on every parent, read on the file)?"""
    for parent in [*reversed(path.parents)][1:] + [path]:
        mode = parent.stat().st_mode
        if not mode & (0o001 if parent != path else 0o004):
            return False
    return True


def _python_for_others(python: str) -> str | None:
    """`python`, or else a system interpreter of the same version, if an unprivileged uid can run it and the harness."""
    if not all(_readable_by_others(STANDALONE_DIR / name) for name in SANDBOX_FILES):
        return None
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for candidate in (python, shutil.which(version, path="/usr/local/bin:/usr/bin:/bin")):
        if candidate and _readable_by_others(Path(os.path.realpath(candidate))):
            return os.path.realpath(candidate)
    return None
