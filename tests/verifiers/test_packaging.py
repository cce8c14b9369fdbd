"""The `verifiers/` folder ships as `trl_grpo_ext.verifiers`, never as a top-level `verifiers` (a popular PyPI name)."""

import subprocess
import sys
import zipfile
from pathlib import Path

from wheel_build import build_wheel

REPO_ROOT = Path(__file__).resolve().parents[2]


def _run_python(code: str, cwd: Path) -> str:
    done = subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_editable_install_exposes_only_the_namespaced_package(tmp_path):
    code = (
        "import importlib.util, trl_grpo_ext.verifiers as v\n"
        "print(v.__file__)\n"
        "spec = importlib.util.find_spec('verifiers')\n"
        "print(spec.origin if spec else None)\n"
    )
    package_file, top_level = _run_python(code, tmp_path).splitlines()
    assert Path(package_file).parent == REPO_ROOT / "verifiers"
    # either no top-level `verifiers` at all, or somebody else's (the PyPI package), never our folder
    assert top_level == "None" or not Path(top_level).resolve().is_relative_to(REPO_ROOT)


def test_importing_the_verifiers_loads_neither_torch_nor_trl_nor_sympy(tmp_path):
    code = (
        "import sys\n"
        "from trl_grpo_ext.verifiers import as_reward_function, get_verifier, list_verifiers, register_verifier\n"
        "get_verifier('math').verify(r'\\boxed{12}', '12')\n"
        "print(sorted(m for m in ('torch', 'trl', 'sympy', 'transformers') if m in sys.modules))\n"
    )
    assert _run_python(code, tmp_path) == "[]"


def sources(folder: Path) -> list[Path]:
    """The modules and stubs under `folder` (not the bytecode caches a test run leaves there)."""
    return [p for p in folder.rglob("*") if p.suffix in (".py", ".pyi") and "__pycache__" not in p.parts]


def test_wheel_contains_trl_grpo_ext_verifiers_and_no_top_level_verifiers(tmp_path):
    wheel = build_wheel(tmp_path)
    names = zipfile.ZipFile(wheel).namelist()
    shipped = {n for n in names if n.startswith("trl_grpo_ext/verifiers/") and n.endswith((".py", ".pyi"))}
    folder = REPO_ROOT / "verifiers"
    # .pyi: the stubs the lazy packages read their public names from at run time
    expected = {f"trl_grpo_ext/verifiers/{p.relative_to(folder).as_posix()}" for p in sources(folder)}
    assert expected and expected <= shipped
    assert {"trl_grpo_ext/verifiers/math/verifier.py", "trl_grpo_ext/verifiers/__init__.pyi"} <= shipped
    # The trainer side too: every module of trl_grpo_ext/ (compare/ was once left out of the package list).
    trainer_side = {
        f"trl_grpo_ext/{p.relative_to(REPO_ROOT / 'trl_grpo_ext').as_posix()}"
        for p in sources(REPO_ROOT / "trl_grpo_ext")
    }
    assert {"trl_grpo_ext/compare/report.py", "trl_grpo_ext/__init__.pyi"} <= trainer_side
    assert trainer_side <= set(names), sorted(trainer_side - set(names))
    assert "trl_grpo_ext/verifiers/code/standalone/judge.py" in shipped
    assert not [n for n in names if n.startswith("verifiers/")]
    top_level = [n for n in names if n.endswith("top_level.txt")]
    if top_level:
        assert zipfile.ZipFile(wheel).read(top_level[0]).decode().split() == ["trl_grpo_ext"]
