"""In CI (`CI=true`) a test that would skip fails with its reason; outside CI it skips; either way the end of the run
says how many skipped and why, and `.ci/run` collects them through TRL_GRPO_EXT_SKIP_LOG."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SUPPORT = Path(__file__).resolve().parent / "support"

TESTS = """
import pytest

def test_runs():
    assert True

def test_needs_bubblewrap():
    pytest.skip("bubblewrap is not installed")

@pytest.mark.skipif(True, reason="the public data are not in ../shared")
def test_needs_shared():
    pass

def test_cannot_run_here():
    from ci_skips import cannot_run_here
    cannot_run_here("this machine is not root")

@pytest.mark.xfail(reason="a known failure, not a skip")
def test_expected_failure():
    assert False
"""


def run_pytest(tmp_path: Path, ci: str | None) -> subprocess.CompletedProcess:
    (tmp_path / "test_sample.py").write_text(TESTS)
    (tmp_path / "skip_test_module.py").write_text("import pytest\npytest.importorskip('no_such_module_here')\n")
    (tmp_path / "pytest.ini").write_text("[pytest]\npython_files = test_*.py skip_test_*.py\n")
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "PYTEST_ADDOPTS")}
    env["PYTHONPATH"] = str(SUPPORT)
    env["TRL_GRPO_EXT_SKIP_LOG"] = str(tmp_path / "skips.tsv")
    if ci is not None:
        env["CI"] = ci
    command = [sys.executable, "-m", "pytest", "-p", "ci_skips", "-p", "no:cacheprovider", "-q", str(tmp_path)]
    return subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)


def skip_log(tmp_path: Path) -> list[str]:
    return (tmp_path / "skips.tsv").read_text().splitlines()


def test_outside_ci_a_test_skips_and_the_run_counts_it(tmp_path):
    result = run_pytest(tmp_path, ci=None)
    assert result.returncode == 0, result.stdout
    assert "4 skipped tests" in result.stdout
    for reason in ("bubblewrap is not installed", "../shared", "this machine is not root", "no_such_module_here"):
        assert reason in result.stdout, reason
    assert len(skip_log(tmp_path)) == 4


def test_in_ci_every_skip_fails_with_its_reason(tmp_path):
    result = run_pytest(tmp_path, ci="true")
    assert result.returncode == 1, result.stdout
    assert "4 skipped tests (failed: CI allows none)" in result.stdout
    assert "1 passed" in result.stdout and "1 xfailed" in result.stdout
    assert "skipped in CI, where every test must run (CI=true): bubblewrap is not installed" in result.stdout
    assert "CI must run this test, but this machine is not root" in result.stdout
    assert "1 x could not import 'no_such_module_here'" in result.stdout  # a module: skipped, and the run fails
    assert sorted(line.split("\t")[0].split("::")[-1] for line in skip_log(tmp_path)) == [
        "skip_test_module.py",
        "test_cannot_run_here",
        "test_needs_bubblewrap",
        "test_needs_shared",
    ]
