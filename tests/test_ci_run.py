""".ci/run, with `make`, `apt-get`, `bwrap` and `g++` replaced by stand-ins on a PATH of its own: it fails when
bubblewrap or g++ cannot be installed, ends with the number of skipped tests and their reasons, and fails if there is any."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

CI_RUN = Path(__file__).resolve().parents[1] / ".ci" / "run"
TOOLS = ["bash", "cat", "chmod", "cut", "dirname", "id", "mktemp", "rm", "sort", "tail", "uniq", "wc"]

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason=".ci/run requires root")  # CI runs as root


def ci_layout(tmp_path: Path, programs: dict[str, str]) -> tuple[Path, dict[str, str]]:
    """A clone with .ci/run and ../shared next to it, and a PATH holding only basic tools and `programs`."""
    clone = tmp_path / "clone"
    (clone / ".ci").mkdir(parents=True)
    shutil.copy(CI_RUN, clone / ".ci" / "run")
    (tmp_path / "shared" / "data" / "math_equivalence").mkdir(parents=True)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in TOOLS:
        (bin_dir / tool).symlink_to(shutil.which(tool))
    for name, body in programs.items():
        (bin_dir / name).write_text(f"#!{shutil.which('bash')}\n{body}\n")
        (bin_dir / name).chmod(0o755)
    return clone, {"PATH": str(bin_dir), "HOME": str(tmp_path)}


def run_ci(clone: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [shutil.which("bash"), str(clone / ".ci" / "run")], env=env, capture_output=True, text=True, timeout=60
    )


SANDBOX_TOOLS = {"bwrap": "exit 0", "g++": "exit 0"}  # installed: bubblewrap, and g++ for the C++ path


# Two sessions, as `make test` and `make test-slow`, each appending its skips to the log .ci/run gives them.
MAKE_WITH_SKIPS = """
[ "$CI" = true ] || exit 3
[ "$2" = real-model ] && { echo /cache/SmolLM2-135M-Instruct; exit 0; }
printf 'tests/a.py::test_x\\tbubblewrap is missing\\n' >> "$TRL_GRPO_EXT_SKIP_LOG"
[ "$1" = test-slow ] && printf 'tests/b.py::test_y\\tno ../shared\\n' >> "$TRL_GRPO_EXT_SKIP_LOG"
exit 0
"""


def test_the_run_ends_with_the_number_of_skipped_tests_and_why_and_fails(tmp_path):
    """In CI pytest fails each skip itself; the run fails on a skip that got through regardless."""
    clone, env = ci_layout(tmp_path, {"make": MAKE_WITH_SKIPS, **SANDBOX_TOOLS})
    result = run_ci(clone, env)
    assert result.returncode == 1, result.stderr
    # one skip from each of make test, test-slow and test-oldest, and one more from test-slow
    assert "skipped tests: 4 (CI allows none)" in result.stdout
    assert "3 bubblewrap is missing" in result.stdout and "1 no ../shared" in result.stdout


def test_no_skip_prints_zero(tmp_path):
    clone, env = ci_layout(tmp_path, {"make": "exit 0", **SANDBOX_TOOLS})
    result = run_ci(clone, env)
    assert result.returncode == 0 and "skipped tests: 0" in result.stdout


def test_fails_when_bubblewrap_cannot_be_installed(tmp_path):
    clone, env = ci_layout(tmp_path, {"make": "exit 0", "apt-get": "exit 100"})
    result = run_ci(clone, env)
    assert result.returncode == 1
    assert "bubblewrap (bwrap) is not installed and could not be installed" in result.stderr


def test_fails_when_gxx_cannot_be_installed(tmp_path):
    clone, env = ci_layout(tmp_path, {"make": "exit 0", "bwrap": "exit 0", "apt-get": "exit 100"})
    result = run_ci(clone, env)
    assert result.returncode == 1
    assert "g++ is not installed and could not be installed" in result.stderr


def test_installs_bubblewrap_and_gxx_when_missing(tmp_path):
    installer = 'if [ "$1" = install ]; then for tool in bwrap g++; do '
    installer += 'printf "#!%s\\nexit 0\\n" "$(command -v bash)" > "$(dirname "$0")/$tool"; '
    installer += 'chmod +x "$(dirname "$0")/$tool"; done; fi; exit 0'
    clone, env = ci_layout(tmp_path, {"make": "exit 0", "apt-get": installer})
    result = run_ci(clone, env)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "bin" / "bwrap").exists() and (tmp_path / "bin" / "g++").exists()


def test_fails_without_shared_next_to_the_clone(tmp_path):
    clone, env = ci_layout(tmp_path, {"make": "exit 0", **SANDBOX_TOOLS})
    shutil.rmtree(tmp_path / "shared")
    result = run_ci(clone, env)
    assert result.returncode == 1 and "../shared/data/math_equivalence is missing" in result.stderr
