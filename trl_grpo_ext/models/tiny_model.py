"""A tiny causal LM and character-level tokenizer built locally, with no download.

Tests, the demo and the benchmarks use it so that nothing depends on the Hugging Face Hub. It is saved to a folder
and loaded back through the ordinary `from_pretrained` path, so `model.config._name_or_path` points at real files
(stock TRL reloads the reference model from there).
"""

from __future__ import annotations

import os
import string
from pathlib import Path

SPECIAL_TOKENS = ["<|pad|>", "<|bos|>", "<|eos|>", "<|im_start|>", "<|im_end|>", "<|unk|>"]
CHARACTERS = list(string.printable.replace("\x0b", "").replace("\x0c", ""))

# ChatML. With tools, a system line names them (the tiny model's context is short: no JSON schemas), an assistant's
# tool calls follow its content as `<tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>` (the Hermes/Qwen
# format), and tool results are messages of role `tool`. A conversation without tools renders exactly as before.
CHAT_TEMPLATE = (
    "{% if tools %}"
    "{{ '<|im_start|>system\nTools: ' + (tools | map(attribute='function.name') | join(', ')) + '<|im_end|>\n' }}"
    "{% endif %}"
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + (message['content'] or '') }}"
    "{% for call in message.tool_calls or [] %}"
    "{{ '<tool_call>\n' + ({'name': call.function.name, 'arguments': call.function.arguments} | tojson) }}"
    "{{ '\n</tool_call>' }}"
    "{% endfor %}"
    "{{ '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
# How `tokenizer.parse_response` (transformers >= 5.13) reads a completion back into content and tool calls.
RESPONSE_TEMPLATE = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "tool_calls": {
            "open": "<tool_call>",
            "close_pattern": r"</tool_call>\s*",
            "repeats": True,
            "content": "json",
            "transform": {"type": "function", "function": "{content}"},
        },
        "content": {"close_pattern": r"<\|im_end\|>\s*", "content": "text"},
    },
}

# The chat template's fixed strings, as whole tokens for `build_tiny_model(chat_tokens=...)`: the role headers and
# the tool call's boilerplate around its name and arguments. With one token per character, a tool-calling turn spends
# dozens of tokens on them; as whole tokens the turn is a few times shorter, and the model attends over less to copy.
CHAT_TOKENS = (
    "<|im_start|>system\nTools: ",
    "<|im_start|>user\n",
    "<|im_start|>assistant\n",
    "<|im_start|>tool\n",
    '<tool_call>\n{"name": "',
    '", "arguments": {"',
    '": "',
    '"}}\n</tool_call>',
)

DEFAULT_CACHE = Path(
    os.environ.get("TRL_GRPO_EXT_CACHE")
    or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "trl_grpo_ext"
)


def build_tokenizer(chat_tokens: tuple[str, ...] = ()):
    """A character-level `PreTrainedTokenizerFast` with pad/eos tokens and a ChatML-style chat template; each string
    of `chat_tokens` (for example `CHAT_TOKENS`) is one more token, matched before the split into characters (the
    longest first) and decoded back to itself."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {tok: i for i, tok in enumerate(SPECIAL_TOKENS + CHARACTERS)}
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<|unk|>"))
    # Split into single characters, keeping spaces and newlines as tokens of their own.
    backend.pre_tokenizer = pre_tokenizers.Split(pattern="", behavior="isolated")
    backend.decoder = decoders.Fuse()
    backend.add_special_tokens(SPECIAL_TOKENS)
    backend.add_tokens([AddedToken(text, special=False, normalized=False) for text in chat_tokens])
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        pad_token="<|pad|>",
        bos_token="<|bos|>",
        eos_token="<|im_end|>",
        unk_token="<|unk|>",
        additional_special_tokens=["<|im_start|>", "<|eos|>"],
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.padding_side = "left"
    return tokenizer


def enable_tool_calls(tokenizer):
    """Let TRL train the tiny model with tools: the tool-calling chat template and the response template that parses
    tool calls out of completions. Separate from `build_tokenizer` because TRL decodes every conversational completion
    with `parse_response` once a response template is set, which runs without tools would not want changed."""
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.response_template = RESPONSE_TEMPLATE
    return tokenizer


def build_tiny_model(
    num_layers: int = 2,
    hidden_size: int = 64,
    num_heads: int = 4,
    max_positions: int = 512,
    seed: int = 0,
    chat_tokens: tuple[str, ...] = (),
):
    """A randomly initialised Llama-architecture causal LM sized to the vocabulary (characters, plus `chat_tokens`
    as whole tokens: see `build_tokenizer`). Returns (model, tokenizer)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = build_tokenizer(tuple(chat_tokens))
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=hidden_size * 4,
        num_hidden_layers=num_layers,
        num_attention_heads=num_heads,
        num_key_value_heads=num_heads,
        max_position_embeddings=max_positions,
        tie_word_embeddings=True,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    return model, tokenizer


def _is_complete(path: Path) -> bool:
    return all((path / name).exists() for name in ("config.json", "tokenizer.json", "model.safetensors"))


def tiny_model_path(path: str | os.PathLike | None = None, wait_s: float = 300.0, **kwargs) -> str:
    """Build the tiny model once, save it with its tokenizer, and return the folder for `from_pretrained`.

    The folder name encodes the sizes, so differently sized models never share a folder. Safe to call from several
    processes at once: each saves to a private folder and renames it into place; under a torch.distributed process
    group, where `save_pretrained` writes weights from rank 0 only, the other ranks wait for rank 0's folder.
    """
    import shutil
    import time

    if path is None:
        suffix = "-".join(f"{k}{v}" for k, v in sorted(kwargs.items())) or "default"
        path = DEFAULT_CACHE / f"tiny-llama-{suffix}"
    path = Path(path)
    if _is_complete(path):
        return str(path)
    model, tokenizer = build_tiny_model(**kwargs)
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    if _is_complete(tmp):
        try:
            os.replace(tmp, path)
        except OSError:  # another process saved it first
            pass
    shutil.rmtree(tmp, ignore_errors=True)
    deadline = time.monotonic() + wait_s
    while not _is_complete(path):
        if time.monotonic() > deadline:
            raise TimeoutError(f"the tiny model was not saved to {path} within {wait_s} s")
        time.sleep(0.2)
    return str(path)
