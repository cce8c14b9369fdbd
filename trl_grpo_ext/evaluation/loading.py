"""The model `trl-grpo-ext evaluate` samples from: a model folder or a Hub id, or a LoRA output folder.

A LoRA output folder (what `save_model` writes with `use_peft=True`: PEFT's `adapter_config.json` and the adapter's
weights, without `config.json`) is loaded on the base model its `adapter_config.json` names
(`base_model_name_or_path`) and merged into it, so that sampling runs at the speed of a plain model. The tokenizer
comes from the folder when it holds one (TRL saves it next to the adapter), else from the base model.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from trl_grpo_ext.usage import UsageError

ADAPTER_CONFIG = "adapter_config.json"


def adapter_base(name: str | None, field: str = "--model") -> str | None:
    """The base model of a PEFT adapter folder (its `base_model_name_or_path`); None for anything else."""
    if name is None:
        return None
    config = Path(name).expanduser() / ADAPTER_CONFIG
    if not config.is_file():
        return None
    try:
        base = json.loads(config.read_text()).get("base_model_name_or_path")
    except (OSError, ValueError) as exc:
        raise UsageError(f"{field}={name!r}: {config} cannot be read as JSON ({exc}).") from None
    if not base:
        raise UsageError(
            f"{field}={name!r} is a LoRA adapter folder whose {ADAPTER_CONFIG} names no base_model_name_or_path; "
            "add the base model's folder or Hub id there."
        )
    return str(base)


def load_model_and_tokenizer(name: str, init_kwargs: dict[str, Any]) -> tuple[Any, Any]:
    """(model, tokenizer) of a model folder or Hub id, or of a LoRA adapter folder merged into its base model."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    base = adapter_base(name)
    model = AutoModelForCausalLM.from_pretrained(base or name, **init_kwargs)
    if base is None:
        return model, AutoTokenizer.from_pretrained(name)
    from peft import PeftModel

    model = PeftModel.from_pretrained(model, name).merge_and_unload()
    has_tokenizer = (Path(name).expanduser() / "tokenizer_config.json").is_file()
    return model, AutoTokenizer.from_pretrained(name if has_tokenizer else base)
