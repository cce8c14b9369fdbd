"""`trl-grpo-ext list` prints every registered advantage estimator, KL estimator and verifier, one line each."""

from __future__ import annotations

import json
import subprocess
import sys

from trl_grpo_ext.trainer.kl import list_kl_estimators


def run_cli(*args: str) -> str:
    command = [sys.executable, "-c", "import sys; from trl_grpo_ext.cli import main; sys.exit(main())", *args]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def listed_names(section_text: str) -> list[str]:
    return [line.split()[0] for line in section_text.splitlines() if line.startswith("  ") and line.strip()]


def fresh_process_registries() -> list[dict[str, str]]:
    """The registries as a fresh interpreter sees them (other tests register plug-ins in this process)."""
    code = (
        "import json\n"
        "from trl_grpo_ext.trainer.advantages import list_advantage_estimators\n"
        "from trl_grpo_ext.trainer.kl import list_kl_estimators\n"
        "from trl_grpo_ext.verifiers import list_verifiers\n"
        "print(json.dumps([list_advantage_estimators(), list_kl_estimators(), list_verifiers()]))"
    )
    return json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)


def test_list_prints_every_registered_plugin_once_with_its_description():
    out = run_cli("list")
    sections = out.split("\n\n")
    advantage = next(s for s in sections if s.startswith("Advantage estimators"))
    kl = next(s for s in sections if s.startswith("KL estimators"))
    verifier = next(s for s in sections if s.startswith("Verifiers"))
    for text, registry in zip((advantage, kl, verifier), fresh_process_registries()):
        assert listed_names(text) == list(registry)
        for name, description in registry.items():
            assert description, f"{name} has no one-line description"
            assert any(line.split(None, 1) == [name, description] for line in text.splitlines()), name
    for required in ["grpo", "dr_grpo", "rloo", "pass_at_k"]:
        assert required in listed_names(advantage)
    for required in ["k1", "k2", "k3"]:
        assert required in listed_names(kl)
    assert {"math", "code"} <= set(listed_names(verifier))


def test_list_kind_filters_one_section():
    out = run_cli("list", "--kind", "kl")
    assert out.startswith("KL estimators") and "Advantage estimators" not in out and "Verifiers" not in out
    assert listed_names(out) == list(list_kl_estimators())


def test_list_with_a_task_file_shows_the_verifiers_its_imports_register(tmp_path):
    module = tmp_path / "task_verifiers.py"
    module.write_text(
        "from trl_grpo_ext.verifiers import register_verifier\n\n\n"
        '@register_verifier("listed_from_a_task_file")\n'
        "def listed(completion, reference):\n"
        '    """Full marks for an exact match."""\n'
        "    return float(completion == reference)\n"
    )
    (tmp_path / "task.yaml").write_text(f"reward_verifiers: [listed_from_a_task_file]\nverifier_imports: [{module}]\n")
    out = run_cli("list", "--kind", "verifier", "--config", str(tmp_path / "task.yaml"))
    assert "  listed_from_a_task_file  Full marks for an exact match." in out.splitlines()
    assert {"math", "code"} <= set(listed_names(out))
    assert "listed_from_a_task_file" not in run_cli("list", "--kind", "verifier")


def test_list_with_a_task_file_whose_import_fails_says_which(tmp_path, capsys):
    from trl_grpo_ext.cli import main

    (tmp_path / "broken.py").write_text("raise RuntimeError('no such grader')\n")
    (tmp_path / "task.yaml").write_text(f"verifier_imports: [{tmp_path / 'broken.py'}]\n")
    assert main(["list", "--config", str(tmp_path / "task.yaml")]) == 2
    assert "importing failed with RuntimeError: no such grader; fix the module or the name." in capsys.readouterr().err
