"""The README's quick start, run verbatim on a CPU without the Hub: in this environment, and (slow) after `pip install`
of the wheel into an environment that already holds torch and the other dependencies, from outside the clone."""

import os
import re
import site
import subprocess
import sys
from pathlib import Path

import pytest
from wheel_build import build_wheel

REPO_ROOT = Path(__file__).resolve().parents[1]


def quick_start_code() -> str:
    readme = (REPO_ROOT / "README.md").read_text()
    section = readme.split("## Quick start", 1)[1]
    return re.search(r"```python\n(.*?)```", section, flags=re.S).group(1)


def offline_environment(tmp_path: Path) -> dict[str, str]:
    """No Hub, no GPU, and every cache (the tiny model's included) under tmp_path."""
    env = {**os.environ, "HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "1", "CUDA_VISIBLE_DEVICES": ""}
    env["TRL_GRPO_EXT_CACHE"] = str(tmp_path / "cache")
    env.pop("PYTHONPATH", None)
    return env


def run_quick_start(python: Path | str, tmp_path: Path, env: dict[str, str], extra: str = ""):
    work = tmp_path / "elsewhere"
    work.mkdir()
    code = quick_start_code() + extra
    done = subprocess.run([str(python), "-c", code], cwd=work, capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    assert (work / "out" / "checkpoint-10" / "trainer_state.json").is_file()  # the 10 steps ran and saved
    return done


def test_the_quick_start_runs_verbatim_on_a_cpu_without_the_hub(tmp_path):
    assert "tiny_model_path()" in quick_start_code()
    run_quick_start(sys.executable, tmp_path, offline_environment(tmp_path))
    assert any((tmp_path / "cache").glob("tiny-llama-*/config.json"))  # the model was built, not downloaded


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
def test_wheel_installs_alone_into_an_environment_with_torch_and_the_quick_start_trains(tmp_path):
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

    done = run_quick_start(
        python,
        tmp_path,
        {**env, **offline_environment(tmp_path)},
        "import trl_grpo_ext\nprint('installed at', trl_grpo_ext.__file__)\n",
    )
    installed_at = Path(done.stdout.split("installed at ")[-1].strip())
    assert installed_at.is_relative_to(python.parent.parent) and not installed_at.is_relative_to(REPO_ROOT)
