"""The tiny model's tokenizer with the chat template's fixed strings as whole tokens, and without them as before."""

from __future__ import annotations

from trl_grpo_ext.models.tiny_model import CHARACTERS, CHAT_TOKENS, SPECIAL_TOKENS, build_tiny_model, build_tokenizer

CONVERSATION = [
    {"role": "user", "content": 'say "code": "x"'},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"type": "function", "function": {"name": "python", "arguments": {"code": "1+2"}}}],
    },
    {"role": "tool", "name": "python", "content": "3"},
]


def test_without_chat_tokens_every_character_is_a_token():
    tokenizer = build_tokenizer()
    assert len(tokenizer) == len(SPECIAL_TOKENS) + len(CHARACTERS)
    text = tokenizer.apply_chat_template(CONVERSATION, tokenize=False, add_generation_prompt=True)
    ids = tokenizer(text, add_special_tokens=False).input_ids
    pieces = [tokenizer.decode([i]) for i in ids]
    assert all(len(p) == 1 or p in SPECIAL_TOKENS for p in pieces)
    assert "".join(pieces) == text


def test_chat_tokens_are_whole_tokens_and_decode_back():
    tokenizer = build_tokenizer(CHAT_TOKENS + ("python",))
    assert len(tokenizer) == len(SPECIAL_TOKENS) + len(CHARACTERS) + len(CHAT_TOKENS) + 1
    for text in CHAT_TOKENS:
        assert len(tokenizer(text, add_special_tokens=False).input_ids) == 1
    text = tokenizer.apply_chat_template(CONVERSATION, tokenize=False, add_generation_prompt=True)
    ids = tokenizer(text, add_special_tokens=False).input_ids
    assert tokenizer.decode(ids) == text
    plain_ids = build_tokenizer()(text, add_special_tokens=False).input_ids
    assert len(ids) < len(plain_ids) / 3
    pieces = [tokenizer.decode([i]) for i in ids]
    # Each fixed string of the call is one token; the user's own text stays characters, even where it spells one.
    assert pieces.count('<tool_call>\n{"name": "') == 1 and pieces.count('"}}\n</tool_call>') == 1
    assert pieces.count("python") == 1  # in the call (the tool message's name is not rendered)
    assert (
        pieces.count('": "') == 2
    )  # the user's `"code": "x"` matches it too: whole strings match wherever they occur
    assert pieces[-1] == "<|im_start|>assistant\n" and "<|im_end|>" in pieces


def test_the_model_is_sized_to_the_vocabulary():
    model, tokenizer = build_tiny_model(chat_tokens=CHAT_TOKENS)
    assert model.config.vocab_size == len(tokenizer) == len(SPECIAL_TOKENS) + len(CHARACTERS) + len(CHAT_TOKENS)
    assert model.get_input_embeddings().weight.shape[0] == len(tokenizer)
