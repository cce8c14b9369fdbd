"""Isolation levels fail closed (sandbox/isolation.py): bubblewrap or a refusal that says what to do, the weak level
only by name and with a warning that lists what the candidate can do, and a process limit wherever bubblewrap runs."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import lazy_loader
import pytest

from trl_grpo_ext.verifiers import get_verifier
from trl_grpo_ext.verifiers.sandbox import isolation as sandbox_isolation
from trl_grpo_ext.verifiers.sandbox.isolation import PER_NAMESPACE_LIMIT, PROBE_FORKS, rlimits_warning

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture
def fresh_detection(monkeypatch):
    monkeypatch.setattr(sandbox_isolation, "_DETECTED", {})


@pytest.fixture
def no_bwrap(monkeypatch, fresh_detection):
    real_which = shutil.which
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None if name == "bwrap" else real_which(name, *a, **k))


@pytest.mark.parametrize("isolation", ["auto", "bwrap"])
def test_without_bubblewrap_the_verifier_refuses_and_says_what_to_do(no_bwrap, isolation):
    with pytest.raises(RuntimeError) as refused:
        get_verifier("code", isolation=isolation)
    message = str(refused.value)
    assert "bubblewrap (bwrap) is not installed" in message
    assert "apt-get install bubblewrap" in message
    assert "isolation='rlimits'" in message


def test_rlimits_by_name_runs_with_a_warning(no_bwrap, caplog):
    try:
        verifier = get_verifier("code", isolation="rlimits", timeout_s=5, workers=1)
    except RuntimeError as exc:  # root, with no interpreter an unprivileged uid can read
        pytest.skip(str(exc))
    try:
        assert verifier.isolation.level == "rlimits"
        assert verifier.isolation.warning in caplog.text
        result = verifier.verify("def add(a, b): return a + b", "assert add(1, 2) == 3")
        assert result.score == 1.0 and result.details["isolation"]["warning"], result.reason
    finally:
        verifier.close()


def test_rlimits_warning_lists_what_the_candidate_can_do():
    for root in (True, False):
        warning = rlimits_warning(root)
        for capability in ("read every file", "use the network", "world-writable folders", "TCPStore"):
            assert capability in warning, (root, capability)
    as_user = rlimits_warning(False)
    for capability in ("kill", "the trainer", "delete its checkpoints", "No process limit holds", "ulimit -u"):
        assert capability in as_user, capability
    as_root = rlimits_warning(True)
    assert "cannot signal the trainer" in as_root and "RLIMIT_NPROC" in as_root


def test_bubblewrap_without_a_process_limit_is_refused(monkeypatch, fresh_detection):
    """As a user other than root, bubblewrap is used only where the probe finds RLIMIT_NPROC holding per sandbox."""
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: "/usr/bin/bwrap")
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    for forks, accepted in ((0, False), (2, True), (PROBE_FORKS, False)):
        monkeypatch.setattr(sandbox_isolation, "_probe_bwrap", lambda python, root, n=forks: (None, n))
        sandbox_isolation._DETECTED.clear()
        if accepted:
            assert sandbox_isolation.detect_isolation("auto").process_limit == PER_NAMESPACE_LIMIT
        else:
            with pytest.raises(RuntimeError, match="no process limit holds inside it"):
                sandbox_isolation.detect_isolation("auto")


NOBODY_PROBE = """
from trl_grpo_ext.verifiers import get_verifier
try:  # without a cgroup per candidate (none can be made as nobody here), only by name
    get_verifier("code", timeout_s=8, max_processes=16, workers=1)
except RuntimeError as exc:
    assert "cgroup=False" in str(exc), exc
else:
    raise AssertionError("a verifier without cgroups was built without cgroup=False")
verifier = get_verifier("code", timeout_s=8, max_processes=16, workers=1, cgroup=False)
program = '''
import os, time
def forks():
    started = 0
    for _ in range(40):
        try:
            pid = os.fork()
        except OSError:
            break
        if pid == 0:
            time.sleep(30)
            os._exit(0)
        started += 1
    return started
'''
# bubblewrap's init and the harness are the sandbox's first two processes in its own user namespace.
result = verifier.verify(program, "assert forks() == 14")
print(verifier.isolation.process_limit, "|", result.score, result.reason, result.details["failures"])
verifier.close()
"""


def test_bubblewrap_as_another_user_holds_a_process_limit_per_sandbox():
    """A real run as `nobody`: the fork count is the sandbox's own, although `nobody` has other processes."""
    system_python = f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}"
    if os.geteuid() != 0 or shutil.which("bwrap") is None or not os.path.exists(system_python):
        pytest.skip("needs root (to become nobody), bubblewrap and a system interpreter of this version")
    package = Path(tempfile.mkdtemp(prefix="trl_grpo_ext_nobody_"))
    sleepers = []
    try:
        package.chmod(0o755)
        (package / "trl_grpo_ext").mkdir(mode=0o755)
        for name in ("__init__.py", "__init__.pyi"):  # lazy: no more of the package is imported
            shutil.copy(REPO / "trl_grpo_ext" / name, package / "trl_grpo_ext" / name)
        (package / "trl_grpo_ext" / "verifiers").symlink_to(REPO / "verifiers")
        (package / "lazy_loader").symlink_to(Path(lazy_loader.__file__).parent)  # the one dependency on the way
        as_nobody = {"user": 65534, "group": 65534, "extra_groups": [], "cwd": "/"}
        sleepers = [subprocess.Popen(["sleep", "60"], **as_nobody) for _ in range(20)]
        run = subprocess.run(
            [system_python, "-c", NOBODY_PROBE], capture_output=True, text=True, timeout=120,
            env={"PATH": "/usr/bin:/bin", "HOME": "/", "PYTHONPATH": str(package)}, **as_nobody,
        )  # fmt: skip
    finally:
        for sleeper in sleepers:
            sleeper.kill()
            sleeper.wait()
        shutil.rmtree(package, ignore_errors=True)
    if "bwrap cannot start a sandbox here" in run.stderr:
        pytest.skip("unprivileged user namespaces are not allowed here")
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip().startswith(f"{PER_NAMESPACE_LIMIT} | 1.0 correct"), run.stdout
