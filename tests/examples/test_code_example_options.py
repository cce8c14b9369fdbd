"""The code example's verifier flags are the verifier's options: one description each (verifiers/code/options.py),
the verifier's defaults unless the script says otherwise, passed to the verifier under the option's name."""

from __future__ import annotations

import dataclasses
import inspect

import pytest
from example_scripts import import_example

from trl_grpo_ext.verifiers.code.options import OPTION_HELP
from trl_grpo_ext.verifiers.code.verifier import CodeVerifier


def test_every_option_of_the_code_verifier_has_one_description():
    assert list(OPTION_HELP) == list(inspect.signature(CodeVerifier).parameters)
    assert all(text.strip() and text.endswith(".") for text in OPTION_HELP.values())


def test_the_examples_verifier_flags_carry_the_verifiers_help_and_defaults():
    grpo_code = import_example("grpo_code")
    fields = {f.name: f for f in dataclasses.fields(grpo_code.CodeScriptArguments)}
    defaults = {name: p.default for name, p in inspect.signature(CodeVerifier).parameters.items()}
    assert len(grpo_code.VERIFIER_FLAGS) == 7  # which names reach the verifier: the test below
    script_args = grpo_code.CodeScriptArguments()
    for flag, option in grpo_code.VERIFIER_FLAGS.items():
        if flag == "verifier_timeout_s":
            continue
        assert fields[flag].metadata["help"] == OPTION_HELP[option], flag
        assert getattr(script_args, flag) == (
            list(defaults[option]) if option == "checker_headers" else defaults[option]
        )
    # The one flag whose default is the script's own: the help says so and names the verifier's.
    assert script_args.verifier_timeout_s == 5.0 and defaults["timeout_s"] == 10.0
    timeout_help = fields["verifier_timeout_s"].metadata["help"]
    assert timeout_help == OPTION_HELP["timeout_s"] + " This script's default differs from the verifier's (10.0)."
    assert "CPU time" in timeout_help and "Wall-time" not in timeout_help
    assert fields["language"].metadata["choices"] == ["auto", "python", "cpp"]
    assert fields["verifier_isolation"].metadata["choices"] == ["auto", "bwrap", "rlimits"]


def test_the_example_passes_each_flag_under_the_verifiers_option_name(tmp_path, monkeypatch):
    from trl import ModelConfig, TrlParser

    from trl_grpo_ext import GRPOExtConfig

    grpo_code = import_example("grpo_code")
    parser = TrlParser((grpo_code.CodeScriptArguments, GRPOExtConfig, ModelConfig))
    argv = ["--verifier_timeout_s", "2.5", "--verifier_isolation", "rlimits", "--float_tolerance", "1e-6"]
    script_args, config, model_args = parser.parse_args_and_config([*argv, "--output_dir", str(tmp_path)])
    made = {}

    def reward_function(name, **options):
        made.update(name=name, **options)
        raise SystemExit  # the options are all this test needs

    monkeypatch.setattr(grpo_code, "as_reward_function", reward_function)
    with pytest.raises(SystemExit):
        grpo_code.main(script_args, config, model_args)
    assert made == {
        "name": "code",
        "reference_column": "tests",
        "language": "auto",
        "checker_headers": [],
        "partial_credit": False,
        "timeout_s": 2.5,
        "isolation": "rlimits",
        "site_packages": False,
        "float_tolerance": 1e-6,
    }
