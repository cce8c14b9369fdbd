"""Sampling completions with transformers `generate`, as GRPOTrainer's default generation path does.

The prompt is tokenized as the trainer tokenizes it (a conversation through the chat template with the generation
prompt and `chat_template_kwargs`; text through the tokenizer), and sampled with the trainer's generation settings:
`max_completion_length`, `temperature`, `top_p`, `top_k`, `min_p`, `repetition_penalty`, then `generation_kwargs`
on top. Completions are cut at the first end-of-sequence token and decoded without special tokens.

Each prompt's samples are drawn in batches of their own, after seeding torch with (seed, row index): a prompt gets
the same samples whichever process evaluates it and whatever else is evaluated, so two processes write the same
per-prompt file as one. (The batch size is part of the draw: the same `batch_size` gives the same samples.)

`sample_many` draws the samples of several prompts in one left-padded batch, seeded with (seed, first row index):
on a CPU, 8 prompts a call generate about twice as many sequences a second as one (docs/benchmarks.md). The rows
drawn together are then part of the draw: the evaluation deals fixed chunks of consecutive rows to processes, so a
prompt still gets the same samples whichever process evaluates it.
"""

from __future__ import annotations

import dataclasses
from typing import Any

# GRPOConfig fields that shape generation; their defaults are read from GRPOConfig itself.
GENERATION_FIELDS = (
    "max_completion_length",
    "temperature",
    "top_p",
    "top_k",
    "min_p",
    "repetition_penalty",
    "generation_kwargs",
    "chat_template_kwargs",
)
SEED_STRIDE = 1_000_003  # a prime larger than any dataset we evaluate: (seed, row) pairs never share a torch seed


def generation_settings(config: dict[str, Any]) -> dict[str, Any]:
    """GRPOConfig's defaults for the generation fields, replaced by those `config` sets."""
    from trl import GRPOConfig

    defaults = {f.name: f.default for f in dataclasses.fields(GRPOConfig) if f.name in GENERATION_FIELDS}
    return {**defaults, **{k: v for k, v in config.items() if k in GENERATION_FIELDS}}


class TransformersSampler:
    """`sampler(index, prompt, n, greedy) -> n completion texts`, drawn with `model.generate`."""

    def __init__(self, model, tokenizer, settings: dict[str, Any], seed: int = 0, batch_size: int = 64):
        if batch_size < 1:
            raise ValueError(f"batch_size={batch_size} must be >= 1.")
        self.model, self.tokenizer, self.seed, self.batch_size = model, tokenizer, seed, batch_size
        self.settings = settings
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        self.eos_ids = self._eos_ids()
        # Completions decoded, and how many of them ended with an end-of-sequence token before the length limit.
        self.completions = self.ended = 0

    def _eos_ids(self) -> list[int]:
        configured = getattr(self.model.generation_config, "eos_token_id", None)
        ids = configured if isinstance(configured, list) else [configured]
        return [i for i in {*ids, self.tokenizer.eos_token_id} if i is not None]

    def prompt_ids(self, prompt: Any) -> list[int]:
        if isinstance(prompt, str):
            return self.tokenizer(text=prompt)["input_ids"]
        return self.tokenizer.apply_chat_template(
            prompt,
            add_generation_prompt=True,
            tokenize=True,
            return_dict=True,
            **(self.settings.get("chat_template_kwargs") or {}),
        )["input_ids"]

    def generation_kwargs(self, greedy: bool) -> dict[str, Any]:
        s = self.settings
        kwargs = {
            "max_new_tokens": s["max_completion_length"],
            "pad_token_id": self.tokenizer.pad_token_id,
            "eos_token_id": self.eos_ids,
            "do_sample": not greedy,
        }
        if not greedy:
            kwargs.update(
                temperature=s["temperature"],
                top_p=s["top_p"],
                top_k=s["top_k"],
                min_p=s["min_p"],
                repetition_penalty=s["repetition_penalty"],
            )
            kwargs.update(s.get("generation_kwargs") or {})
        return kwargs

    def __call__(self, index: int, prompt: Any, n: int, greedy: bool) -> list[str]:
        import torch

        ids = torch.tensor([self.prompt_ids(prompt)], device=self.model.device)
        kwargs = self.generation_kwargs(greedy)
        torch.manual_seed(self.seed * SEED_STRIDE + index)
        texts: list[str] = []
        with torch.no_grad():
            while len(texts) < n:
                batch = min(self.batch_size, n - len(texts))
                inputs = ids.expand(batch, -1)
                output = self.model.generate(input_ids=inputs, attention_mask=torch.ones_like(inputs), **kwargs)
                texts += [self._decode(row[ids.size(1) :]) for row in output]
        return texts

    def sample_many(self, items: list[tuple[int, Any]], n: int, greedy: bool) -> list[list[str]]:
        """n completions of each (row index, prompt) of `items`, drawn together in left-padded batches of at most
        max(batch_size, n) sequences (a prompt's n samples are never split), seeded with the first row index."""
        import torch

        if len(items) == 1:
            return [self(items[0][0], items[0][1], n, greedy)]
        prompts = [self.prompt_ids(prompt) for _, prompt in items]
        kwargs = self.generation_kwargs(greedy)
        per_call = max(1, self.batch_size // n)
        torch.manual_seed(self.seed * SEED_STRIDE + items[0][0])
        texts: list[list[str]] = []
        with torch.no_grad():
            for start in range(0, len(prompts), per_call):
                group = prompts[start : start + per_call]
                width = max(len(ids) for ids in group)
                rows = [[self.tokenizer.pad_token_id] * (width - len(ids)) + ids for ids in group for _ in range(n)]
                mask = [[0] * (width - len(ids)) + [1] * len(ids) for ids in group for _ in range(n)]
                output = self.model.generate(
                    input_ids=torch.tensor(rows, device=self.model.device),
                    attention_mask=torch.tensor(mask, device=self.model.device),
                    **kwargs,
                )
                decoded = [self._decode(row[width:]) for row in output]
                texts += [decoded[i * n : (i + 1) * n] for i in range(len(group))]
        return texts

    def _decode(self, completion_ids) -> str:
        tokens = completion_ids.tolist()
        self.completions += 1
        for position, token in enumerate(tokens):
            if token in self.eos_ids:
                tokens = tokens[:position]
                self.ended += 1
                break
        return self.tokenizer.decode(tokens, skip_special_tokens=True)
