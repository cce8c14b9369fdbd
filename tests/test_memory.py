"""The memory estimate: formulas against byte counts worked out by hand, then against the bytes real tensors hold
after one training step of the trainer on tiny local models."""

from __future__ import annotations

import json

import pytest
import torch
from transformers import LlamaConfig, TrainerCallback

from trl_grpo_ext.cli import main
from trl_grpo_ext.memory import (
    PRESETS,
    ModelDims,
    TrainingSetup,
    activation_bytes,
    count_parameters,
    dims_from_config,
    estimate,
    estimate_all,
    kv_cache_bytes,
    load_model_dims,
    lora_parameter_tensors,
    optimizer_state_bytes,
    trained_model,
)
from trl_grpo_ext.memory.estimate import layer_activation_bytes

# hidden 8, 2 layers, 2 heads of 4, 1 KV head (kv_dim 4), MLP 12, vocab 10, untied. Per layer by hand:
# q 8*8 + k 8*4 + v 8*4 + o 8*8 + gate/up/down 3 * 8*12 + two norms 2*8 = 64+32+32+64+288+16 = 496.
SMALL = ModelDims(8, 2, 2, 1, 4, 12, 10, tie_embeddings=False)
SMALL_PARAMS = 2 * 496 + 10 * 8 + 10 * 8 + 8  # layers, embedding, lm_head, final norm = 1160
SMALL_SCORE_PARAMS = 2 * 496 + 10 * 8 + 8 + 8  # no lm_head, a bias-free 8 x 1 score head = 1088


def small_setup(**overrides) -> TrainingSetup:
    values = dict(batch_size=3, group_size=2, prompt_length=5, completion_length=7, gradient_checkpointing=False)
    return TrainingSetup(**{**values, **overrides})


# --- parameter inventory ---------------------------------------------------------------------------------------


def test_parameter_counts_by_hand():
    assert count_parameters(SMALL) == SMALL_PARAMS == 1160
    assert count_parameters(SMALL, head="score") == SMALL_SCORE_PARAMS == 1088
    qwen_bias = ModelDims(8, 2, 2, 1, 4, 12, 10, False, attention_bias=(True, True, True, False))
    assert count_parameters(qwen_bias) == 1160 + 2 * (8 + 4 + 4)


def test_lora_parameters_by_hand():
    # rank 2 on q (8 -> 8) and v (8 -> 4): 2*(8+8) + 2*(8+4) = 56 per layer.
    assert sum(lora_parameter_tensors(SMALL, 2, ["q_proj", "v_proj"])) == 2 * 56
    # all-linear adds k (24), o (32), gate/up (2*40) and down (40): 56 + 24 + 32 + 120 = 232 per layer.
    assert sum(lora_parameter_tensors(SMALL, 2, "all-linear")) == 2 * 232


@pytest.mark.parametrize(
    "builder",
    ["llama", "qwen2", "qwen3", "mistral", "llama_seq_cls"],
)
def test_parameter_counts_match_transformers_models(builder):
    import transformers

    kwargs = dict(
        vocab_size=50, hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, tie_word_embeddings=False,
    )  # fmt: skip
    names = {
        "llama": ("LlamaConfig", "LlamaForCausalLM"),
        "qwen2": ("Qwen2Config", "Qwen2ForCausalLM"),
        "qwen3": ("Qwen3Config", "Qwen3ForCausalLM"),
        "mistral": ("MistralConfig", "MistralForCausalLM"),
        "llama_seq_cls": ("LlamaConfig", "LlamaForSequenceClassification"),
    }
    config_cls, model_cls = (getattr(transformers, name) for name in names[builder])
    config = config_cls(**kwargs, num_labels=1)
    model = model_cls(config)
    head = "score" if builder.endswith("seq_cls") else "lm"
    assert count_parameters(dims_from_config(config), head) == sum(p.numel() for p in model.parameters())


def test_presets_match_published_parameter_counts():
    # Model cards: Qwen2.5-0.5B 0.49B (0.36B non-embedding), 7B 7.61B, 32B "32.5B" (its config's tensors sum to
    # 32.76B: 64 x 487.6M per layer + 2 x 152064 x 5120 untied embeddings).
    assert round(count_parameters(PRESETS["qwen2.5-0.5b"]) / 1e9, 2) == 0.49
    assert round(count_parameters(PRESETS["qwen2.5-7b"]) / 1e9, 2) == 7.62
    assert 32.5e9 < count_parameters(PRESETS["qwen2.5-32b"]) < 32.8e9


# --- loading a config ----------------------------------------------------------------------------------------------


def test_load_model_dims_from_folder_file_and_preset(tmp_path):
    config = LlamaConfig(vocab_size=10, hidden_size=8, intermediate_size=12, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=1, tie_word_embeddings=False)  # fmt: skip
    config.save_pretrained(tmp_path)
    from_folder = load_model_dims(str(tmp_path))
    from_file = load_model_dims(tmp_path / "config.json")
    assert count_parameters(from_folder) == count_parameters(from_file) == SMALL_PARAMS
    assert load_model_dims("Qwen2.5-7B") is PRESETS["qwen2.5-7b"]


def test_unsupported_model_type_names_the_choices(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "mixtral"}))
    with pytest.raises(ValueError, match="model_type='mixtral'.*llama, mistral, qwen2, qwen3"):
        load_model_dims(tmp_path / "config.json")


@pytest.mark.parametrize(
    "field, value",
    [("precision", "fp16"), ("optimizer", "sgd"), ("zero_stage", 4), ("group_size", 0), ("lora_targets", "qkv")],
)
def test_bad_setup_names_field_and_value(field, value):
    with pytest.raises(ValueError, match=f"{field}=.*{value}"):
        TrainingSetup(**{field: value})


# --- bytes by hand --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "precision, weights, gradients, optimizer",
    [
        ("fp32", 1160 * 4, 1160 * 4, 1160 * 8),
        ("bf16", 1160 * 2, 1160 * 2, 1160 * 4),  # torch AdamW keeps moments in the parameter dtype
        ("mixed", 1160 * 2, 1160 * 2, 1160 * 12),  # fp32 master + two fp32 moments
    ],
)
def test_full_fine_tuning_bytes(precision, weights, gradients, optimizer):
    model = trained_model(SMALL, small_setup(precision=precision))
    assert (model.frozen_weights, model.trained_weights) == (0, weights)
    assert (model.gradients, model.optimizer_states) == (gradients, optimizer)


@pytest.mark.parametrize(
    "precision, zero_stage, adapter_bytes, optimizer_per_element",
    [("fp32", 0, 4, 8), ("bf16", 0, 4, 8), ("bf16", 3, 2, 4), ("mixed", 0, 2, 12)],
)
def test_lora_bytes(precision, zero_stage, adapter_bytes, optimizer_per_element):
    setup = small_setup(precision=precision, zero_stage=zero_stage, lora_rank=2, lora_targets=("q_proj", "v_proj"))
    model = trained_model(SMALL, setup)
    frozen_bytes = 4 if precision == "fp32" else 2
    assert model.frozen_weights == 1160 * frozen_bytes
    assert model.trained_weights == model.gradients == 112 * adapter_bytes
    assert model.optimizer_states == 112 * optimizer_per_element


def test_eight_bit_adam_by_hand():
    setup = small_setup(optimizer="adamw_8bit")
    # 8000 elements: 2 uint8 moments + 2 fp32 absmax per 256-element block (32 blocks); 100 elements: fp32 moments.
    assert optimizer_state_bytes([8000, 100], setup, param_bytes=2) == 2 * 8000 + 2 * 4 * 32 + 8 * 100
    mixed = small_setup(optimizer="adamw_8bit", precision="mixed")
    assert optimizer_state_bytes([8000], mixed, param_bytes=2) == 4 * 8000 + 2 * 8000 + 2 * 4 * 32


def test_kv_cache_by_hand():
    # 2 layers x (K, V) x kv_dim 4 x (3 prompts x G=2) sequences x (5 + 7) tokens x 2 bytes.
    assert kv_cache_bytes(SMALL, small_setup()) == 2 * 2 * 4 * 6 * 12 * 2 == 2304


def test_activations_by_hand():
    tokens = 6 * 12
    # Per token and layer at 2 bytes: norms 2*(4+2)*8 = 96, attention 2*(3*8 + 2*4) = 64, MLP 2*(8 + 4*12) = 112.
    assert layer_activation_bytes(SMALL, tokens, 2) == tokens * 272
    # final norm (4+2)*8 per token; head 2*(8 + 10) for each of 6 x 7 completion tokens.
    head = tokens * 48 + 6 * 7 * 36
    assert activation_bytes(SMALL, small_setup()) == 2 * tokens * 272 + head
    checkpointed = small_setup(gradient_checkpointing=True)  # layer inputs 2*8 per token and layer, one layer redone
    assert activation_bytes(SMALL, checkpointed) == 2 * tokens * 16 + tokens * 272 + head


def test_setups_hold_what_they_should():
    setup = small_setup(precision="bf16")
    ppo, grpo_rm, grpo_v, grpo_0 = (estimate(name, SMALL, setup).components for name in
                                   ("ppo", "grpo_reward_model", "grpo_verifiers", "grpo_verifiers_beta0"))  # fmt: skip
    assert ppo["critic"] == 1088 * (2 + 2 + 4) and grpo_rm["critic"] == 0
    assert ppo["reward_model"] == grpo_rm["reward_model"] == 1088 * 2 and grpo_v["reward_model"] == 0
    assert ppo["reference_model"] == grpo_v["reference_model"] == 1160 * 2 and grpo_0["reference_model"] == 0
    critic_activations = activation_bytes(SMALL, setup, logits=False)
    assert ppo["activations"] == grpo_0["activations"] + critic_activations
    separate = estimate("ppo", SMALL, small_setup(precision="bf16", ppo_joint_update=False)).components
    assert separate["activations"] == grpo_0["activations"]  # the policy's (with logits) outweighs the critic's
    lora = estimate("grpo_verifiers", SMALL, small_setup(lora_rank=2))
    assert lora.components["reference_model"] == 0  # the adapter is disabled instead


def test_zero_sharding_per_stage():
    def parts(stage):
        c = estimate("grpo_verifiers", SMALL, small_setup(precision="mixed", zero_stage=stage, num_gpus=4)).components
        return c["weights"], c["gradients"], c["optimizer_states"], c["reference_model"]

    assert parts(0) == (2320, 2320, 13920, 2320)
    assert parts(1) == (2320, 2320, 13920 / 4, 2320)
    assert parts(2) == (2320, 2320 / 4, 13920 / 4, 2320)
    assert parts(3) == (2320 / 4, 2320 / 4, 13920 / 4, 2320 / 4)


def test_phases_and_peak():
    setup = small_setup(precision="fp32", zero_stage=3, num_gpus=2)
    e = estimate("grpo_verifiers_beta0", SMALL, setup)
    c = e.components
    assert c["zero3_generation_gather"] == 1160 * 4 / 2  # the other GPU's half of the weights
    assert e.training_phase == c["weights"] + c["optimizer_states"] + c["gradients"] + c["activations"]
    assert e.generation_phase == c["weights"] + c["optimizer_states"] + c["kv_cache"] + c["zero3_generation_gather"]
    assert e.peak == max(e.training_phase, e.generation_phase)


def test_cli_table_and_json(capsys):
    assert main(["memory", "--preset", "qwen2.5-0.5b", "--json", "--precision", "mixed"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["grpo_verifiers_beta0"]["weights"] == count_parameters(PRESETS["qwen2.5-0.5b"]) * 2
    assert payload["ppo"]["critic"] > 0 and payload["grpo_verifiers_beta0"]["reference_model"] == 0
    assert main(["memory", "--preset", "qwen2.5-7b", "--lora-rank", "16", "--zero-stage", "3", "--num-gpus", "8"]) == 0
    table = capsys.readouterr().out
    assert "LoRA r=16" in table and "ZeRO-3 on 8 GPU(s)" in table and "peak per GPU" in table


def test_cli_bad_input_is_a_message_not_a_traceback(capsys):
    assert main(["memory", "--preset", "qwen2.5-7b", "--group-size", "0"]) == 2
    assert "group_size=0" in capsys.readouterr().err


def test_estimate_all_orders_setups():
    peaks = [e.peak for e in estimate_all(PRESETS["qwen2.5-7b"], TrainingSetup()).values()]
    assert peaks == sorted(peaks, reverse=True)  # each setup drops a model the previous one holds


# --- measurement: the bytes tensors really hold after one training step -------------------------------------------


def tensor_bytes(tensors) -> int:
    """Bytes of distinct tensors (tied weights once)."""
    seen = {id(t): t for t in tensors if torch.is_tensor(t)}
    return sum(t.numel() * t.element_size() for t in seen.values())


def optimizer_tensors(optimizer):
    inner = getattr(optimizer, "optimizer", optimizer)  # accelerate wraps the torch optimizer
    return [value for state in inner.state.values() for value in state.values()]


class HeldBytes(TrainerCallback):
    """Counts parameter, gradient and optimizer-state bytes right after the optimizer step, before the gradients
    are freed (`Trainer` calls `model.zero_grad()` after `on_optimizer_step`)."""

    def on_optimizer_step(self, args, state, control, model=None, optimizer=None, **kwargs):
        params = list(model.parameters())
        self.weights = tensor_bytes(params)
        self.gradients = tensor_bytes([p.grad for p in params if p.grad is not None])
        self.optimizer_states = tensor_bytes(optimizer_tensors(optimizer))


def within(measured: float, estimated: float, tolerance: float = 0.05) -> bool:
    return abs(measured - estimated) <= tolerance * measured


def verifier_reward(completions, **kwargs):
    return [float(len(str(c))) for c in completions]


def train_one_step(tmp_path, *, beta, dtype=torch.float32, lora_rank=0, reward_model=None):
    """One GRPO step of the extended trainer on the tiny local model; returns (trainer, HeldBytes)."""
    from datasets import Dataset
    from transformers import AutoModelForCausalLM

    from trl_grpo_ext import GRPOExtConfig, GRPOExtTrainer
    from trl_grpo_ext.models.tiny_model import build_tokenizer, tiny_model_path

    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(tiny_model_path(), dtype=dtype)
    peft_config = None
    if lora_rank:
        from peft import LoraConfig

        peft_config = LoraConfig(r=lora_rank, lora_alpha=2 * lora_rank, target_modules=["q_proj", "v_proj"])
    args = GRPOExtConfig(
        output_dir=str(tmp_path), per_device_train_batch_size=4, num_generations=2, max_completion_length=4,
        max_steps=1, beta=beta, bf16=False, use_cpu=True, report_to="none", save_strategy="no", seed=0,
    )  # fmt: skip
    held = HeldBytes()
    trainer = GRPOExtTrainer(
        model=model,
        reward_funcs=reward_model if reward_model is not None else verifier_reward,
        args=args,
        train_dataset=Dataset.from_dict({"prompt": ["1+1=", "2+2=", "3+3=", "4+4="]}),
        processing_class=build_tokenizer(),
        peft_config=peft_config,
        callbacks=[held],
    )
    trainer.train()
    return trainer, held


def tiny_dims_and_setup(precision, lora_rank=0):
    from transformers import AutoConfig

    from trl_grpo_ext.models.tiny_model import tiny_model_path

    dims = dims_from_config(AutoConfig.from_pretrained(tiny_model_path()))
    setup = TrainingSetup(precision=precision, lora_rank=lora_rank, lora_targets=("q_proj", "v_proj"))
    return dims, setup


def assert_policy_matches(held, components):
    assert within(held.weights, components["weights"]), (held.weights, components["weights"])
    assert within(held.gradients, components["gradients"]), (held.gradients, components["gradients"])
    assert within(held.optimizer_states, components["optimizer_states"]), (
        held.optimizer_states,
        components["optimizer_states"],
    )


@pytest.mark.parametrize(
    "setup_name, beta, precision",
    [("grpo_verifiers", 0.1, "fp32"), ("grpo_verifiers_beta0", 0.0, "fp32"), ("grpo_verifiers", 0.1, "bf16")],
)
def test_full_fine_tuning_step_matches_estimate(tmp_path, setup_name, beta, precision):
    dtype = torch.float32 if precision == "fp32" else torch.bfloat16
    trainer, held = train_one_step(tmp_path, beta=beta, dtype=dtype)
    dims, setup = tiny_dims_and_setup(precision)
    components = estimate(setup_name, dims, setup).components
    assert_policy_matches(held, components)
    reference = tensor_bytes(trainer.ref_model.parameters()) if trainer.ref_model is not None else 0
    assert within(reference, components["reference_model"]) if reference else components["reference_model"] == 0


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_lora_step_matches_estimate(tmp_path, precision):
    dtype = torch.float32 if precision == "fp32" else torch.bfloat16
    trainer, held = train_one_step(tmp_path, beta=0.1, dtype=dtype, lora_rank=4)
    dims, setup = tiny_dims_and_setup(precision, lora_rank=4)
    components = estimate("grpo_verifiers", dims, setup).components
    assert_policy_matches(held, components)
    assert trainer.ref_model is None and components["reference_model"] == 0


def test_reward_model_step_matches_estimate(tmp_path):
    from transformers import AutoConfig, AutoModelForSequenceClassification

    from trl_grpo_ext.models.tiny_model import tiny_model_path

    torch.manual_seed(0)
    reward_model = AutoModelForSequenceClassification.from_config(
        AutoConfig.from_pretrained(tiny_model_path(), num_labels=1)
    )
    trainer, held = train_one_step(tmp_path, beta=0.1, reward_model=reward_model)
    dims, setup = tiny_dims_and_setup("fp32")
    components = estimate("grpo_reward_model", dims, setup).components
    assert_policy_matches(held, components)
    measured_reward = tensor_bytes(trainer.reward_funcs[0].parameters())
    assert within(measured_reward, components["reward_model"]), (measured_reward, components["reward_model"])


@pytest.mark.parametrize("lora_rank", [0, 4])
def test_critic_step_matches_estimate(lora_rank):
    """TRL 1.16 has no PPO trainer, so the critic (a one-label sequence classifier, as TRL's PPO used) is trained
    one AdamW step on its own, and its parameters, gradients and moments counted."""
    from transformers import AutoConfig, AutoModelForSequenceClassification

    from trl_grpo_ext.models.tiny_model import tiny_model_path

    torch.manual_seed(0)
    critic = AutoModelForSequenceClassification.from_config(
        AutoConfig.from_pretrained(tiny_model_path(), num_labels=1)
    )
    critic.config.pad_token_id = 0
    if lora_rank:
        from peft import LoraConfig, get_peft_model

        critic = get_peft_model(
            critic, LoraConfig(r=lora_rank, target_modules=["q_proj", "v_proj"], task_type="SEQ_CLS")
        )
    trainable = [p for p in critic.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trainable)
    critic(input_ids=torch.randint(10, 90, (2, 12))).logits.pow(2).sum().backward()
    optimizer.step()
    measured = tensor_bytes(critic.parameters()) + tensor_bytes([p.grad for p in trainable])
    measured += tensor_bytes(optimizer_tensors(optimizer))
    dims, setup = tiny_dims_and_setup("fp32", lora_rank=lora_rank)
    assert within(measured, estimate("ppo", dims, setup).components["critic"])


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("checkpointing", [False, True])
def test_activations_match_saved_tensors(dtype, checkpointing):
    """Bytes autograd saves for backward in the policy's forward plus TRL's log-softmax over completion tokens,
    counted per distinct storage. With checkpointing only the forward's share is seen here (the recomputed layer
    lives during backward), so the estimate less one layer is compared."""
    from trl.trainer.utils import selective_log_softmax

    from trl_grpo_ext.models.tiny_model import build_tiny_model

    model, _ = build_tiny_model(hidden_size=64, num_layers=2)
    model = model.to(dtype).train()
    if checkpointing:
        model.config.use_cache = False
        model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
    sequences, prompt, completion = 4, 24, 40
    input_ids = torch.randint(10, 90, (sequences, prompt + completion), generator=torch.Generator().manual_seed(0))
    storages = {}

    def pack(tensor):
        storage = tensor.untyped_storage()
        storages[storage.data_ptr()] = storage.nbytes()
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        logits = model(input_ids=input_ids, logits_to_keep=completion + 1).logits[:, :-1]
        selective_log_softmax(logits / 1.0, input_ids[:, -completion:])
    parameters = {p.untyped_storage().data_ptr() for p in model.parameters()}
    measured = sum(size for pointer, size in storages.items() if pointer not in parameters)
    dims = dims_from_config(model.config)
    setup = TrainingSetup(
        precision="fp32" if dtype == torch.float32 else "bf16", batch_size=sequences, group_size=1,
        prompt_length=prompt, completion_length=completion, gradient_checkpointing=checkpointing,
    )  # fmt: skip
    estimated = activation_bytes(dims, setup)
    if checkpointing:
        estimated -= layer_activation_bytes(dims, sequences * (prompt + completion), setup.compute_bytes)
    assert within(measured, estimated), (measured, estimated)
