"""`compat.replaced_attribute`, the plain helper the trainer swaps a TRL name with, and the rules it serves: product
code does not use test tooling (`unittest.mock`), and importing the package or building a trainer leaves stock TRL's
modules and classes as they were; the trainer's warning filter, which holds only while it runs."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
import types
import warnings

import pytest
import trl.trainer.grpo_trainer as stock_module
from package_uses import REPO, source_files
from trainer_helpers import digit_reward, make_config, prompt_dataset
from transformers import AutoModelForCausalLM
from trl import GRPOTrainer

from trl_grpo_ext import GRPOExtConfig, GRPOExtTrainer
from trl_grpo_ext.trainer.compat import KNOWN_DEPRECATIONS, replaced_attribute


def test_the_value_is_replaced_inside_and_restored_after():
    module = types.SimpleNamespace(function="stock")
    with replaced_attribute(module, "function", "ours"):
        assert module.function == "ours"
    assert module.function == "stock"


def test_the_value_is_restored_when_the_block_raises():
    module = types.SimpleNamespace(function="stock")
    with pytest.raises(KeyError), replaced_attribute(module, "function", "ours"):
        raise KeyError("inside")
    assert module.function == "stock"


def test_an_attribute_that_was_not_there_is_removed_and_an_inherited_one_shows_again():
    class Base:
        hook = "base"

    class Child(Base):
        pass

    with replaced_attribute(Child, "hook", "child"), replaced_attribute(Child, "extra", 1):
        assert (Child.hook, Child.extra, Base.hook) == ("child", 1, "base")
    assert Child.hook == "base" and "hook" not in vars(Child) and not hasattr(Child, "extra")


def imports_of(path) -> set[str]:
    modules = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            modules |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules |= {node.module} | {f"{node.module}.{alias.name}" for alias in node.names}
    return modules


def test_no_product_module_imports_unittest_mock():
    offenders = [
        str(path.relative_to(REPO))
        for path in source_files()
        if any(m == "mock" or m.startswith(("unittest.mock", "mock.")) for m in imports_of(path))
    ]
    assert offenders == []
    assert "unittest.mock" in imports_of(REPO / "tests" / "support" / "stock_trl.py")  # the scan sees imports


# --- stock TRL stays stock: nothing of it is replaced at import, nor left replaced by a trainer ---

# Every attribute of every loaded module of TRL, transformers and accelerate, and of the classes the trainer extends,
# by identity, before and after importing the package's trainer side and its verifiers.
STOCK_OBJECTS = """
import json, sys
import trl, trl.trainer.grpo_trainer, trl.models.utils, transformers, transformers.trainer, accelerate
from trl import GRPOConfig, GRPOTrainer

def objects():
    found = {}
    for name, module in list(sys.modules.items()):
        if module is not None and name.partition(".")[0] in ("trl", "transformers", "accelerate"):
            found.update({f"{name}.{k}": id(v) for k, v in list(vars(module).items())})
    for cls in (GRPOTrainer, GRPOConfig, transformers.Trainer):
        found.update({f"{cls.__qualname__}.{k}": id(v) for k, v in vars(cls).items()})
    return found

before = objects()
import trl_grpo_ext, trl_grpo_ext.trainer.trainer, trl_grpo_ext.trainer.config, trl_grpo_ext.verifiers
from trl_grpo_ext import GRPOExtConfig, GRPOExtTrainer
from trl_grpo_ext.verifiers import as_reward_function, get_verifier
after = objects()
print(json.dumps({"checked": len(before), "changed": sorted(k for k in before if after.get(k) != before[k])}))
"""


def test_importing_the_package_leaves_stock_trl_untouched():
    done = subprocess.run([sys.executable, "-c", STOCK_OBJECTS], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["checked"] > 1000  # the scan saw TRL's and transformers' modules
    assert report["changed"] == []


def test_building_a_trainer_leaves_stock_trl_untouched(tiny_model_dir, tmp_path):
    """The in-memory reference model swaps TRL's `create_model_from_path` only while stock's __init__ runs."""
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    module_before, class_before = dict(vars(stock_module)), dict(vars(GRPOTrainer))
    config = make_config(GRPOExtConfig, tmp_path / "out", beta=0.1)
    trainer = GRPOExtTrainer(model, [digit_reward], args=config, train_dataset=prompt_dataset())
    assert trainer.ref_model is not None  # the swapped function built it
    assert dict(vars(stock_module)) == module_before
    assert dict(vars(GRPOTrainer)) == class_before


# --- the trainer's warning filter: only while it trains or evaluates ---


def is_known_deprecation(warning: warnings.WarningMessage) -> bool:
    return any(re.match(pattern, str(warning.message)) for pattern in KNOWN_DEPRECATIONS)


def test_importing_the_trainer_adds_no_warning_filter():
    script = (
        "import warnings, trl.trainer.grpo_trainer, transformers, accelerate, datasets, peft\n"
        "before = list(warnings.filters)\n"
        "import trl_grpo_ext.trainer.trainer\n"
        "print(warnings.filters == before)\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600, check=True)
    assert result.stdout.strip() == "True", result.stderr


def test_training_silences_the_known_deprecations_only_while_it_runs(tiny_model_dir, tmp_path):
    config = make_config(GRPOExtConfig, tmp_path / "out", max_steps=1, gradient_checkpointing=True)
    trainer = GRPOExtTrainer(tiny_model_dir, [digit_reward], args=config, train_dataset=prompt_dataset())
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        filters = list(warnings.filters)
        trainer.train()
        assert warnings.filters == filters
        assert not [warning for warning in shown if is_known_deprecation(warning)]
        trainer.model.gradient_checkpointing_disable()  # the same call outside training warns as usual
    assert [warning for warning in shown if is_known_deprecation(warning)]
