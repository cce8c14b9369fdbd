"""The transformers sampler: the trainer's tokenization and settings, seeded per row, greedy when asked."""

from __future__ import annotations

import pytest
import torch

from trl_grpo_ext.evaluation.sampling import TransformersSampler, generation_settings


@pytest.fixture(scope="module")
def tiny():
    from trl_grpo_ext.models.tiny_model import build_tiny_model

    model, tokenizer = build_tiny_model(seed=0)
    return model.eval(), tokenizer


def test_settings_default_to_grpo_config_and_take_the_file_values():
    settings = generation_settings({"temperature": 0.7, "max_completion_length": 5, "learning_rate": 1.0})
    assert settings["temperature"] == 0.7 and settings["max_completion_length"] == 5
    assert "learning_rate" not in settings
    from trl import GRPOConfig

    assert settings["top_p"] == GRPOConfig.top_p


def test_a_row_gets_the_same_samples_whatever_was_sampled_before(tiny):
    model, tokenizer = tiny
    sampler = TransformersSampler(model, tokenizer, generation_settings({"max_completion_length": 4}), seed=3)
    first = sampler(7, "3+4=", 6, False)
    sampler(2, "1+1=", 5, False)
    assert sampler(7, "3+4=", 6, False) == first
    assert len(first) == 6 and len(set(first)) > 1  # sampled, not greedy
    other_seed = TransformersSampler(model, tokenizer, generation_settings({"max_completion_length": 4}), seed=4)
    assert other_seed(7, "3+4=", 6, False) != first


def test_greedy_is_the_argmax_continuation_and_conversations_use_the_chat_template(tiny):
    model, tokenizer = tiny
    sampler = TransformersSampler(model, tokenizer, generation_settings({"max_completion_length": 1}))
    ids = tokenizer("3+4=", return_tensors="pt").input_ids
    with torch.no_grad():
        expected = tokenizer.decode(model(ids).logits[0, -1].argmax(), skip_special_tokens=True)
    assert sampler(0, "3+4=", 1, True) == [expected]
    chat = [{"role": "user", "content": "3+4="}]
    ids = tokenizer.apply_chat_template(chat, add_generation_prompt=True, return_tensors="pt", return_dict=True)
    with torch.no_grad():
        expected = tokenizer.decode(model(ids["input_ids"]).logits[0, -1].argmax(), skip_special_tokens=True)
    assert sampler(0, chat, 1, True) == [expected]


def test_prompts_sampled_together_get_their_own_greedy_continuations(tiny):
    """Left padding with its attention mask: each prompt of a shared call continues as it does alone."""
    model, tokenizer = tiny
    sampler = TransformersSampler(model, tokenizer, generation_settings({"max_completion_length": 5}), batch_size=8)
    prompts = ["3+4=", "12+30=", [{"role": "user", "content": "9-5="}], "7="]
    together = sampler.sample_many(list(enumerate(prompts)), 1, True)
    assert together == [sampler(i, prompt, 1, True) for i, prompt in enumerate(prompts)]


def test_prompts_sampled_together_are_seeded_by_their_first_row(tiny):
    model, tokenizer = tiny
    settings = generation_settings({"max_completion_length": 4})
    sampler = TransformersSampler(model, tokenizer, settings, seed=3, batch_size=6)
    items = [(10, "3+4="), (11, "1+1="), (12, "8-2=")]
    first = sampler.sample_many(items, 3, False)
    assert [len(samples) for samples in first] == [3, 3, 3]
    assert sampler.sample_many(items, 3, False) == first
    assert sampler.sample_many([(20, text) for _, text in items], 3, False) != first
    # n above batch_size: one prompt a call, its n samples never split
    assert [
        len(s) for s in TransformersSampler(model, tokenizer, settings, batch_size=2).sample_many(items, 3, False)
    ] == [3] * 3


def test_the_sampler_counts_completions_that_ended_before_the_length_limit(tiny):
    model, tokenizer = tiny
    sampler = TransformersSampler(model, tokenizer, generation_settings({"max_completion_length": 3}))
    letter = tokenizer.convert_tokens_to_ids("a")
    assert sampler._decode(torch.tensor([letter, tokenizer.eos_token_id, letter])) == "a"
    assert sampler._decode(torch.tensor([letter, letter])) == "aa"
    assert (sampler.completions, sampler.ended) == (2, 1)
