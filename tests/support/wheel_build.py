"""Build the package's wheel from a copy of the sources, so that setuptools' build/ and egg-info folders never land in
the working tree."""

import shutil
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


def build_wheel(tmp_path: Path) -> Path:
    source = tmp_path / "src"
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "build", "dist")
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO_ROOT / name, source / name)
    for folder in ("trl_grpo_ext", "verifiers"):
        shutil.copytree(REPO_ROOT / folder, source / folder, ignore=ignore)
    out = tmp_path / "dist"
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", str(out), str(source)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    (wheel,) = out.glob("trl_grpo_ext-*.whl")
    return wheel
