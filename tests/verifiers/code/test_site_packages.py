"""`site_packages=True`: the candidate may import the sandbox interpreter's third-party packages, read-only.

The default stays the standard library only. numpy is installed with the trainer, so it stands for any package.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy
import pytest
from code_verifier_helpers import make_code_verifier

from trl_grpo_ext.verifiers import get_verifier
from trl_grpo_ext.verifiers.sandbox.isolation import SITE_PACKAGES_DIR

NUMPY_DIR = os.path.dirname(os.path.realpath(numpy.__file__))
SITE_PACKAGES = os.path.dirname(NUMPY_DIR)
ADD_TESTS = "assert add(1, 2) == 3\nassert add(5, 7) == 12\n"
NUMPY_ADD = "import numpy as np\ndef add(a, b):\n    return int(np.add(np.int64(a), np.int64(b)))\n"
# Tries to change the package it imports, and to import this project through its editable-install .pth file.
PROBES = f"""
import os, numpy
def package_is_read_only():
    for path in ({os.path.join(NUMPY_DIR, "planted.py")!r}, os.path.join(os.path.dirname(numpy.__file__), "x")):
        try:
            open(path, "w").close()
            return False
        except OSError:
            pass
    return True
def mounted_read_only():
    mounts = [line.split() for line in open("/proc/self/mountinfo")]
    packages = [fields for fields in mounts if fields[4].startswith({SITE_PACKAGES_DIR!r})]
    return bool(packages) and all("ro" in fields[5].split(",") for fields in packages)
def project_is_hidden():
    try:
        import trl_grpo_ext
    except ImportError:
        return True
    return False
"""
PROBE_TESTS = "assert package_is_read_only() is True\nassert project_is_hidden() is True\n"
MOUNT_TESTS = "assert mounted_read_only() is True\n"


@pytest.fixture(scope="module")
def with_packages():
    v = make_code_verifier(20, site_packages=True)
    yield v
    v.close()


def test_the_default_is_the_standard_library_only():
    v = make_code_verifier(20)
    try:
        result = v.verify(NUMPY_ADD, ADD_TESTS)
        assert result.score == 0.0 and "ModuleNotFoundError" in result.reason, result.reason
        assert v.isolation.site_packages == ()
    finally:
        v.close()


def test_numpy_imports_with_site_packages(with_packages):
    result = with_packages.verify(NUMPY_ADD, ADD_TESTS)
    assert result.score == 1.0, (result.reason, result.details)
    assert SITE_PACKAGES in result.details["isolation"]["site_packages"]
    stdio = "import numpy as np, sys\nprint(int(np.array(sys.stdin.read().split(), dtype=np.int64).sum()))"
    assert with_packages.verify(stdio, [{"input": "1 2 3\n", "output": "6\n"}]).score == 1.0


def test_site_packages_are_read_only_and_do_not_open_the_project(with_packages):
    result = with_packages.verify(PROBES, PROBE_TESTS)
    assert result.score == 1.0, (result.reason, result.details["failures"])
    assert not os.path.exists(os.path.join(NUMPY_DIR, "planted.py"))
    if with_packages.isolation.level == "bwrap":  # not just unwritable by the candidate's uid: a read-only mount
        mounted = with_packages.verify(PROBES, MOUNT_TESTS)
        assert mounted.score == 1.0, (mounted.reason, mounted.details["failures"])


def test_site_packages_at_the_rlimits_level():
    try:
        v = get_verifier("code", timeout_s=20, workers=1, isolation="rlimits", site_packages=True)
    except RuntimeError as exc:
        pytest.skip(str(exc))
    try:
        result = v.verify(NUMPY_ADD, ADD_TESTS)
        assert result.score == 1.0, (result.reason, result.details)
    finally:
        v.close()


@pytest.mark.parametrize("value", ["yes", 1, None])
def test_site_packages_must_be_a_bool(value):
    with pytest.raises(ValueError, match="site_packages"):
        get_verifier("code", site_packages=value)


def test_site_packages_of_an_environment_under_tmp_stay_importable():
    """Each candidate gets a fresh /tmp: the packages are mounted elsewhere, or a virtualenv under /tmp would vanish."""
    root = tempfile.mkdtemp()
    try:
        os.chmod(root, 0o755)  # the candidate's uid must be able to read the environment, as any user's venv
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", f"{root}/venv"], check=True)
        (site,) = Path(root, "venv", "lib").glob("python*/site-packages")
        (site / "planted_package.py").write_text("VALUE = 42\n")
        v = make_code_verifier(20, site_packages=True, python=f"{root}/venv/bin/python")
        try:
            result = v.verify(
                "import planted_package\ndef f():\n    return planted_package.VALUE\n", "assert f() == 42"
            )
            assert result.score == 1.0, (result.reason, result.details)
        finally:
            v.close()
    finally:
        shutil.rmtree(root)
