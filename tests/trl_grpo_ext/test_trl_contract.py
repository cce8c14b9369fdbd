"""What GRPOExtTrainer relies on in the installed TRL and transformers, checked against them: every private name and
signature its hooks use (docs/trl_hooks.md), the tuple stock `_generate` returns, the forward keys, the loss
normalisers re-implemented in `_aggregate_like_loss_type` against stock's own loss, `_load_callback_state`; and the
supported version range, which fails construction outside it.

A TRL or transformers upgrade that breaks one of these fails here, by name, before it can corrupt a run.

The list of what is checked is read from the package's source (tests/support/package_uses.py): every name imported
from TRL, transformers or latex2sympy2_extended, and every attribute our subclasses of their classes use without
defining it, so that a new use is tested as soon as it is written. The explicit checks below stay: they check
signatures, return values and behaviour that a name alone does not.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import importlib
import inspect
import logging
import re
import tomllib
from pathlib import Path

import pytest
import torch
import transformers
import trl
import trl.models.utils
import trl.trainer.grpo_trainer as stock_module
from package_uses import Use, inherited, names
from stock_trl import build_stock_trainer, loss_inputs, stock_loss
from transformers import Trainer
from transformers.trainer_callback import ExportableState, TrainerState
from trl import GRPOTrainer

from trl_grpo_ext.trainer import compat
from trl_grpo_ext.trainer.kl import kl_divergence
from trl_grpo_ext.trainer.trainer import FORWARD_KEYS, GRPOExtTrainer

REPO = Path(__file__).resolve().parents[2]


def parameters_of(function) -> list[tuple[str, object]]:
    """(name, default) of each parameter."""
    return [(p.name, p.default) for p in inspect.signature(function).parameters.values()]


def parameters(method) -> list[tuple[str, object]]:
    """(name, default) of each parameter after `self`."""
    return parameters_of(method)[1:]


# --- versions ---


def test_supported_ranges_are_the_dependencies_of_pyproject():
    dependencies = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    for package, specifier in compat.SUPPORTED_VERSIONS.items():
        assert f"{package}{specifier}" in dependencies, package


def test_the_installed_versions_are_the_supported_ones():
    """This suite is what makes a range supported: it runs against the installed versions."""
    assert compat.unsupported_versions(compat.installed_versions()) == []
    assert compat.installed_versions() == {"trl": trl.__version__, "transformers": transformers.__version__}


@pytest.mark.parametrize(
    ("versions", "named"),
    [
        ({"trl": "1.17.0", "transformers": "5.24.0"}, "trl 1.17.0"),
        ({"trl": "1.15.2", "transformers": "5.24.0"}, "trl 1.15.2"),
        ({"trl": "1.16.0", "transformers": "5.26.0"}, "transformers 5.26.0"),
        ({"trl": "1.16.0", "transformers": "4.57.0"}, "transformers 4.57.0"),
    ],
)
def test_an_untested_version_fails_naming_the_supported_range(monkeypatch, versions, named):
    monkeypatch.delenv(compat.ALLOW_UNTESTED_VARIABLE, raising=False)
    with pytest.raises(RuntimeError) as error:
        compat.check_supported_versions(versions)
    message = str(error.value)
    assert named in message
    assert "trl>=1.16.0,<1.17" in message and "transformers>=5.23,<5.26" in message
    assert compat.ALLOW_UNTESTED_VARIABLE in message


def test_pre_releases_and_patches_of_a_supported_version_pass():
    assert compat.unsupported_versions({"trl": "1.16.3", "transformers": "5.24.0rc1"}) == []


def test_the_override_variable_builds_anyway_with_a_warning(monkeypatch, caplog):
    monkeypatch.setenv(compat.ALLOW_UNTESTED_VARIABLE, "1")
    with caplog.at_level(logging.WARNING, logger=compat.__name__):
        compat.check_supported_versions({"trl": "1.17.0", "transformers": "5.24.0"})
    assert "trl 1.17.0" in caplog.text and "trl>=1.16.0,<1.17" in caplog.text


def test_constructing_the_trainer_checks_the_versions(monkeypatch, tiny_model_dir, tmp_path):
    monkeypatch.delenv(compat.ALLOW_UNTESTED_VARIABLE, raising=False)
    monkeypatch.setattr(compat, "installed_versions", lambda: {"trl": "1.18.0", "transformers": "5.24.0"})
    with pytest.raises(RuntimeError, match=r"trl 1\.18\.0 is installed, the supported range is trl>=1\.16\.0,<1\.17"):
        GRPOExtTrainer(model=tiny_model_dir, reward_funcs=[])


# --- every use, read from the source ---


def resolve(qualified: str) -> object:
    """The module or object a dotted name stands for (`trl.GRPOTrainer`, `trl.trainer.grpo_trainer`)."""
    parts = qualified.split(".")
    for split in range(len(parts), 0, -1):
        try:
            found = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        for part in parts[split:]:
            found = getattr(found, part)
        return found
    raise ImportError(qualified)


@functools.cache
def assigned_on_self(cls: type) -> frozenset[str]:
    """Every `self.<name>` the classes of `cls`'s method resolution order assign in their source."""
    assigned = set()
    for klass in cls.__mro__:
        try:
            tree = ast.parse(inspect.getsource(klass))
        except (OSError, TypeError):  # builtins, classes without source
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                if isinstance(node.value, ast.Name) and node.value.id == "self":
                    assigned.add(node.attr)
    return frozenset(assigned)


def has_attribute(cls: type, name: str) -> bool:
    """A method, class attribute, property or dataclass field of `cls`, or an attribute its code assigns on self."""
    fields = {f.name for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else set()
    return hasattr(cls, name) or name in fields or name in assigned_on_self(cls)


def check_call(function, use: Use, bound_to_instance: bool) -> None:
    """The call as written binds to the signature (positional count and keyword names; `*`/`**` leave it open)."""
    signature = inspect.signature(function)
    arguments = ([None] if bound_to_instance else []) + [None] * use.call.positional
    keywords = dict.fromkeys(use.call.keywords)
    bind = signature.bind_partial if use.call.open_ended else signature.bind
    try:
        bind(*arguments, **keywords)
    except TypeError as error:
        raise AssertionError(
            f"{use.where}: {use.owner}.{use.name}{signature} cannot take this call: {error}"
        ) from None


def by_name(uses: tuple[Use, ...]) -> dict[str, list[Use]]:
    grouped: dict[str, list[Use]] = {}
    for use in uses:
        grouped.setdefault(f"{use.owner}.{use.name}" if use.name else use.owner, []).append(use)
    return grouped


LIBRARY_NAMES = by_name(names())
INHERITED = by_name(inherited())


@pytest.mark.parametrize("qualified", sorted(LIBRARY_NAMES))
def test_each_library_name_the_package_imports_exists(qualified):
    """`from trl.x import y`, `import trl.x as m` then `m.y`: each exists in the installed versions."""
    try:
        resolve(qualified)
    except (ImportError, AttributeError) as error:
        places = ", ".join(use.where for use in LIBRARY_NAMES[qualified])
        raise AssertionError(f"{qualified} (used at {places}) is gone: {error}") from None


def check_inherited(uses: list[Use]) -> None:
    cls, name = resolve(uses[0].owner), uses[0].name
    assert has_attribute(cls, name), f"{uses[0].owner}.{name} (used at {', '.join(u.where for u in uses)}) is gone"
    for use in uses:
        if use.through_super:
            assert callable(getattr(cls, name, None)), f"{use.where}: super().{name} is not a method of {use.owner}"
        if use.call is not None and callable(getattr(cls, name, None)):
            static = isinstance(inspect.getattr_static(cls, name), (staticmethod, classmethod))
            check_call(getattr(cls, name), use, bound_to_instance=not static)


@pytest.mark.parametrize("qualified", sorted(INHERITED))
def test_each_inherited_attribute_the_package_uses_exists(qualified):
    """`self.x` (and `super().x`, `self.args.x`, `trainer.x`) that our subclasses do not define come from the
    library class: each exists there, and each call binds to its signature."""
    check_inherited(INHERITED[qualified])


def test_the_scan_finds_the_uses_it_is_for():
    """The scan sees through the mixin, `super()`, `self.args` and a `trainer` parameter, and leaves out what our
    classes define themselves."""
    trainer = {use.name for use in inherited() if use.owner == "trl.GRPOTrainer"}
    assert {"_log_completion_extra", "log", "_tokenizer", "shuffle_dataset", "_metrics", "_logs"} <= trainer
    assert {"beta", "_get_per_token_logps_and_entropies", "_load_callback_state", "_environment_pool"} <= trainer
    assert not {"_prompt_stream", "_kl_window", "_reward_overlap", "_advantages", "_overlapping_rewards"} & trainer
    config = {use.name for use in inherited() if use.owner == "trl.GRPOConfig"}
    assert {"beta", "steps_per_generation", "gradient_checkpointing_kwargs", "bf16", "__post_init__"} <= config
    assert not {"kl_estimator", "dynamic_sampling", "uses_stock_kl"} & config
    converter = {use.name for use in inherited() if use.owner.endswith("._Latex2Sympy")}
    assert {"create_parser", "parse_number", "parse"} <= converter
    assert {
        "trl.trainer.grpo_trainer.create_model_from_path",
        "trl.models.utils.disable_gradient_checkpointing",
    } <= set(LIBRARY_NAMES)
    assert "latex2sympy2_extended.latex2sympy2._Latex2Sympy" in LIBRARY_NAMES


def test_a_missing_inherited_attribute_fails_naming_where_it_is_used():
    use = Use("trl.GRPOTrainer", "_gone_in_a_later_release", "trl_grpo_ext/trainer/trainer.py:1")
    with pytest.raises(
        AssertionError, match=r"_gone_in_a_later_release \(used at trl_grpo_ext/trainer/trainer.py:1\)"
    ):
        check_inherited([use])


def test_a_call_that_no_longer_binds_fails():
    from package_uses import Call

    use = Use("trl.GRPOTrainer", "_generate", "here:1", Call(2, (), False))
    with pytest.raises(AssertionError, match="cannot take this call"):
        check_call(GRPOTrainer._generate, use, bound_to_instance=True)


# --- names and signatures ---

# Every stock method GRPOExtTrainer overrides or calls, with the parameters it passes or receives.
STOCK_SIGNATURES = {
    "_generate": [("prompts", inspect.Parameter.empty)],
    "_calculate_rewards": [(name, inspect.Parameter.empty) for name in ("inputs", "prompts", "completions")]
    + [("completion_ids_list", inspect.Parameter.empty)],
    "_generate_and_score_completions": [("inputs", inspect.Parameter.empty)],
    "_compute_loss": [("model", inspect.Parameter.empty), ("inputs", inspect.Parameter.empty)],
    "_get_per_token_logps_and_entropies": [
        (name, inspect.Parameter.empty) for name in ("model", "input_ids", "attention_mask", "logits_to_keep")
    ]
    + [("batch_size", None), ("compute_entropy", False), ("compute_aux_loss", False)]
    + [(key, None) for key in FORWARD_KEYS],
    "_load_callback_state": [],
}


@pytest.mark.parametrize("name", sorted(STOCK_SIGNATURES))
def test_stock_methods_keep_their_signatures(name):
    assert parameters(getattr(GRPOTrainer, name)) == STOCK_SIGNATURES[name]


@pytest.mark.parametrize(
    "name", ["_generate", "_calculate_rewards", "_generate_and_score_completions", "_compute_loss"]
)
def test_each_override_takes_the_arguments_of_the_method_it_overrides(name):
    assert name in vars(GRPOExtTrainer)
    assert [n for n, _ in parameters(getattr(GRPOExtTrainer, name))] == [
        n for n, _ in parameters(getattr(GRPOTrainer, name))
    ]


def test_init_takes_model_reward_funcs_and_args_first():
    assert [name for name, _ in parameters(GRPOTrainer.__init__)][:3] == ["model", "reward_funcs", "args"]


def test_forward_keys_are_the_multimodal_arguments_of_the_forward():
    """`_rollout_sequence_kl` passes the batch's forward arguments on: FORWARD_KEYS must be every one of them, and
    every key of stock's batch that is a forward argument."""
    forward = inspect.signature(GRPOTrainer._get_per_token_logps_and_entropies).parameters
    base = {"self", "model", "input_ids", "attention_mask", "logits_to_keep"}
    base |= {"batch_size", "compute_entropy", "compute_aux_loss"}
    assert set(forward) - base == set(FORWARD_KEYS)
    output_keys = set(
        re.findall(r'output\["(\w+)"\]\s*=', inspect.getsource(GRPOTrainer._generate_and_score_completions))
    )
    assert {"ref_per_token_logps", "old_per_token_logps", "tool_mask"} <= output_keys
    assert output_keys & set(forward) == set(FORWARD_KEYS)


def test_module_level_names_the_hooks_patch_or_call():
    """`reference_from_memory` patches `create_model_from_path` where stock's __init__ looks it up, and asks
    `get_config_model_id` for the policy's id; `_rollout_sequence_kl` uses `disable_gradient_checkpointing`."""
    assert [name for name, _ in parameters_of(stock_module.create_model_from_path)][:1] == ["model_id"]
    assert [name for name, _ in parameters_of(stock_module.get_config_model_id)] == ["config"]
    assert "create_model_from_path(get_config_model_id(" in "".join(inspect.getsource(GRPOTrainer.__init__).split())
    assert [name for name, _ in parameters_of(trl.models.utils.disable_gradient_checkpointing)] == [
        "model",
        "gradient_checkpointing_kwargs",
    ]


def test_callback_state_hooks_of_transformers():
    """The adaptive beta rides in `TrainerState.stateful_callbacks` and is restored by `_load_callback_state`, which
    transformers calls when it resumes from a checkpoint; `current_gradient_accumulation_steps` is set by its loop."""
    assert "stateful_callbacks" in {f.name for f in dataclasses.fields(TrainerState)}
    assert [name for name, _ in parameters(ExportableState.state)] == []
    assert "_load_callback_state" in vars(Trainer) and "_load_callback_state" not in vars(GRPOTrainer)
    assert "self._load_callback_state()" in inspect.getsource(Trainer)
    assert "self.current_gradient_accumulation_steps =" in inspect.getsource(Trainer)


def test_the_stock_attributes_the_hooks_read(tiny_model_dir, tmp_path):
    trainer = build_stock_trainer(tiny_model_dir, tmp_path, beta=0.04)
    for name in ("beta", "loss_type", "num_generations", "num_generations_eval", "multi_objective_aggregation"):
        assert hasattr(trainer, name), name
    for name in ("max_completion_length", "importance_sampling_level", "scale_rewards", "reward_funcs"):
        assert hasattr(trainer, name), name
    assert trainer.reward_weights.shape == (1,)
    assert "advantages" in trainer._logs and isinstance(trainer._metrics["train"], dict)
    for name in ("use_bias_correction_kl", "steps_per_generation", "gradient_checkpointing_kwargs"):
        assert hasattr(trainer.args, name), name


# --- what stock returns ---


def test_generate_returns_the_eight_parts_the_overlap_reads(tiny_model_dir, tmp_path):
    """`GRPOExtTrainer._generate` reads completion_ids (1), completions (3) and extra_fields (5) of stock's tuple."""
    trainer = build_stock_trainer(tiny_model_dir, tmp_path)
    prompts = ["What is 1 + 2?", "What is 2 + 2?"]
    generated = trainer._generate(prompts)
    assert isinstance(generated, tuple) and len(generated) == 8
    _, completion_ids, _, completions, _, extra_fields, _, _ = generated
    assert len(completion_ids) == len(completions) == len(prompts)
    assert all(isinstance(ids, list) and all(isinstance(t, int) for t in ids) for ids in completion_ids)
    decode = trainer.processing_class.decode
    assert completions == [decode(ids, skip_special_tokens=True) for ids in completion_ids]
    assert extra_fields == {}
    source = inspect.getsource(GRPOTrainer._generate_and_score_completions)
    assert re.search(r"\(\s*" + r",\s*".join([r"\w+"] * 8) + r",?\s*\)\s*=\s*self\._generate\(prompts\)", source)


def test_generate_and_score_returns_the_keys_the_hooks_read(tiny_model_dir, tmp_path):
    trainer = build_stock_trainer(tiny_model_dir, tmp_path, beta=0.04)
    trainer.model.train()
    output = trainer._generate_and_score_completions([{"prompt": "What is 1 + 2?"}] * 4)
    for key in ("prompt_ids", "prompt_mask", "completion_ids", "completion_mask", "ref_per_token_logps"):
        assert key in output, key
    assert output["advantages"].shape == (4,)
    assert output["num_items_in_batch"].numel() == 1


# --- the loss normalisers ---


def stock_loss_types() -> list[str]:
    """Every loss type stock's `_compute_loss` branches on."""
    lines = [line for line in inspect.getsource(GRPOTrainer._compute_loss).splitlines() if "self.loss_type" in line]
    return sorted({name for line in lines for name in re.findall(r'"(\w+)"', line)})


def test_stock_loss_types_are_the_known_ones():
    assert stock_loss_types() == ["bnpo", "cispo", "dapo", "dr_grpo", "grpo", "luspo", "sapo", "vespo"]


def kl_batch(seed: int):
    generator = torch.Generator().manual_seed(seed)
    logps = -torch.rand(3, 5, generator=generator) * 4
    ref_logps = -torch.rand(3, 5, generator=generator) * 4
    old_logps = logps - torch.rand(3, 5, generator=generator) * 0.2
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 0, 0, 0], [1, 1, 1, 0, 0]], dtype=torch.float32)
    return logps, ref_logps, old_logps, mask


@pytest.fixture(scope="module")
def loss_trainer(tiny_model_dir, tmp_path_factory):
    # steps_per_generation differs from the accumulation steps so that dapo's rescaling is seen.
    return build_stock_trainer(
        tiny_model_dir,
        tmp_path_factory.mktemp("loss"),
        beta=0.5,
        gradient_accumulation_steps=2,
        steps_per_generation=4,
    )


@pytest.mark.parametrize("loss_type", stock_loss_types())
@pytest.mark.parametrize("mode", ["train", "eval"])
@pytest.mark.parametrize(("level", "off_policy", "bias_correction"), [
    ("token", False, True), ("token", True, True), ("sequence", True, True), ("token", True, False),
])  # fmt: skip
def test_aggregate_like_loss_type_is_stock_normaliser(
    loss_trainer, loss_type, mode, level, off_policy, bias_correction
):
    """With zero advantages stock's loss is its KL term alone, `beta * normaliser(k3 * ratio)`: the extension's
    ratio and normaliser, run on stock's own state, must give it bit for bit (beta is a power of two)."""
    trainer = loss_trainer
    trainer.loss_type, trainer.importance_sampling_level = loss_type, level
    trainer.args.use_bias_correction_kl = bias_correction
    trainer.current_gradient_accumulation_steps = 2
    trainer.model.train(mode == "train")
    logps, ref_logps, old_logps, mask = kl_batch(seed=len(loss_type))
    inputs = loss_inputs(ref_logps, mask, old_logps if off_policy else None)
    expected = stock_loss(trainer, logps, inputs)

    ratio = GRPOExtTrainer._importance_ratio(trainer, logps, inputs.get("old_per_token_logps"), mask)
    kl = kl_divergence(logps, ref_logps, "k3") * ratio
    got = trainer.beta * GRPOExtTrainer._aggregate_like_loss_type(trainer, kl, mask, inputs, mode)
    assert expected.item() > 0
    assert torch.equal(got, expected), (got.item(), expected.item())
