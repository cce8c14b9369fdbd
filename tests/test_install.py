"""`pip install` into an environment that already holds torch and the other dependencies, then the README's quick
start run from outside the clone: pip installs the package alone, and the snippet trains."""

import os
import re
import site
import subprocess
import sys
from pathlib import Path

import pytest
from wheel_build import build_wheel

REPO_ROOT = Path(__file__).resolve().parents[1]
QUICK_START_MODEL = '"Qwen/Qwen2.5-0.5B-Instruct"'


def quick_start_code() -> str:
    readme = (REPO_ROOT / "README.md").read_text()
    section = readme.split("## Quick start", 1)[1]
    return re.search(r"```python\n(.*?)```", section, flags=re.S).group(1)


def environment_with_the_dependencies(tmp_path: Path) -> Path:
    """A fresh venv that sees this environment's installed distributions (torch, trl, ...) but not this package."""
    packages = Path(next(p for p in site.getsitepackages() if (Path(p) / "torch").is_dir()))
    view = tmp_path / "installed" / "site-packages"  # dill pickles modules by reference only from such a folder
    view.mkdir(parents=True)
    for entry in packages.iterdir():
        if entry.name.startswith(("trl_grpo_ext", "__editable__")) or entry.suffix == ".pth":
            continue
        (view / entry.name).symlink_to(entry)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    (venv_packages,) = venv.glob("lib/python*/site-packages")
    (venv_packages / "installed.pth").write_text(f"{view}\n")
    return venv / "bin" / "python"


@pytest.mark.slow
def test_wheel_installs_alone_into_an_environment_with_torch_and_the_quick_start_trains(tmp_path, tiny_model_dir):
    wheel = build_wheel(tmp_path)
    python = environment_with_the_dependencies(tmp_path)
    env = {**os.environ, "PIP_NO_INPUT": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    env.pop("PYTHONPATH", None)
    install = [str(python), "-m", "pip", "install", "--no-index", "--find-links", str(wheel.parent), "trl-grpo-ext"]
    done = subprocess.run(install, capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"^Successfully installed trl-grpo-ext-\S+$", done.stdout, flags=re.M), done.stdout
    done = subprocess.run([str(python), "-m", "pip", "check"], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr

    code = quick_start_code()
    assert QUICK_START_MODEL in code and "max_steps=100" in code
    code = code.replace(QUICK_START_MODEL, repr(tiny_model_dir)).replace("max_steps=100", "max_steps=1")
    code += "import trl_grpo_ext\nprint('installed at', trl_grpo_ext.__file__)\n"
    work = tmp_path / "elsewhere"
    work.mkdir()
    env.update(HF_HOME=str(tmp_path / "hf"), HF_HUB_OFFLINE="1", CUDA_VISIBLE_DEVICES="")
    done = subprocess.run([str(python), "-c", code], cwd=work, capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    installed_at = Path(done.stdout.split("installed at ")[-1].strip())
    assert installed_at.is_relative_to(python.parent.parent) and not installed_at.is_relative_to(REPO_ROOT)
    assert (work / "out").is_dir()
