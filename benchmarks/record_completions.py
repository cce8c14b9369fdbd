"""Record real completions of SmolLM2-135M-Instruct on the built-in arithmetic prompts, for a hand-labelled corpus.

    python benchmarks/record_completions.py --output tests/verifiers/math/data/smollm2_completions.jsonl

Two sources of prompts, all from held-out splits (never trained on), sampled on the CPU with one torch thread and
fixed seeds, in left-padded batches of `--batch_size` prompts:

- "chat_arithmetic": the questions of `trl_grpo_ext.data.chat_arithmetic` ("What is 14 + 7? Answer with the number
  only."), levels 1 and 2, as one user message; temperature 1.0, 24 new tokens.
- "boxed_word": the same held-out questions written as word problems ("Sam has 4 marbles. He finds 7 more. ..."),
  with the system message "Solve the problem. Put the final answer in \\boxed{}."; temperature 0.8, 128 new tokens.
- "boxed_builtin": the built-in task's held-out problems (`trl_grpo_ext.data.datasets.arithmetic_split("held_out")`,
  "3+4=") as "Compute 3+4." with the same system message and settings as "boxed_word".

Each prompt is sampled `--samples` times (one pass over the prompts a sample). The seed of a batch is
`1000 * source_index + 100 * sample + batch_index`, set with `torch.manual_seed` just before its `generate` call, and
recorded on each of its rows: a row is reproduced by rerunning the script (same batches, same seeds), not alone.
One JSON object a line: {"source", "prompt" (the chat messages), "completion", "reference", "seed"}.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import time
from pathlib import Path

SYSTEM_BOXED = "Solve the problem. Put the final answer in \\boxed{}."
NAMES = ("Sam", "Maria", "Ken", "Lena")
THINGS = ("marbles", "apples", "stickers", "coins")


def parse_question(question: str) -> list:
    """'What is 14 + 7 - 5? ...' -> [14, '+', 7, '-', 5]."""
    expression = re.match(r"What is (.+)\? ", question).group(1)
    return [int(t) if t.isdigit() else t for t in expression.split()]


def word_problem(terms: list, index: int) -> str:
    """The expression as a story: a start, then each operation as finding more (+) or giving some away (-)."""
    name, thing = NAMES[index % len(NAMES)], THINGS[(index // len(NAMES)) % len(THINGS)]
    pronoun = "She" if name in ("Maria", "Lena") else "He"
    sentences = [f"{name} has {terms[0]} {thing}."]
    steps = list(zip(terms[1::2], terms[2::2]))
    for k, (op, value) in enumerate(steps):
        start = pronoun if k == 0 else f"Then {pronoun.lower()}"
        verb = "finds" if op == "+" else "gives away"
        more = " more" if op == "+" else ""
        sentences.append(f"{start} {verb} {value}{more}.")
    sentences.append(f"How many {thing} does {name} have now?")
    return " ".join(sentences)


def boxed(question: str) -> list[dict]:
    """The question as a chat that asks for a final answer in \\boxed{}."""
    return [{"role": "system", "content": SYSTEM_BOXED}, {"role": "user", "content": question}]


def build_prompts() -> dict[str, list[tuple[list[dict], str]]]:
    """source -> [(chat messages, reference), ...]."""
    from trl_grpo_ext import arithmetic_split, chat_arithmetic_split

    level1 = chat_arithmetic_split("held_out", level=1)  # 31 questions
    level2 = chat_arithmetic_split("held_out", level=2, limit=44, seed=0)
    level2_word = chat_arithmetic_split("held_out", level=2, limit=24, seed=1)
    chat = [([{"role": "user", "content": r["prompt"]}], r["answer"]) for r in level1 + level2]
    word = [
        (boxed(word_problem(parse_question(r["prompt"]), i)), r["answer"]) for i, r in enumerate(level1 + level2_word)
    ]
    builtin = [(boxed(f"Compute {r['prompt'].rstrip('=')}."), r["answer"]) for r in arithmetic_split("held_out")]
    return {"chat_arithmetic": chat, "boxed_word": word, "boxed_builtin": builtin}


SETTINGS = {  # source -> (temperature, max_new_tokens)
    "chat_arithmetic": (1.0, 24),
    "boxed_word": (0.8, 128),
    "boxed_builtin": (0.8, 128),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", required=True, help="JSON lines file to write.")
    parser.add_argument("--model", default=None, help="Model folder (default: SmolLM2-135M-Instruct, prepared).")
    parser.add_argument("--samples", type=int, default=2, help="Completions of each prompt.")
    parser.add_argument("--batch_size", type=int, default=16)
    args = parser.parse_args()

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from trl_grpo_ext import smollm2_path

    torch.set_num_threads(1)
    model_path = args.model or smollm2_path()
    model = AutoModelForCausalLM.from_pretrained(model_path, dtype=torch.float32).eval()
    tokenizer = AutoTokenizer.from_pretrained(model_path, padding_side="left")
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token

    print(f"load average before: {os.getloadavg()}")
    started = time.perf_counter()
    rows = []
    for source_index, (source, prompts) in enumerate(build_prompts().items()):
        temperature, max_new_tokens = SETTINGS[source]
        source_started = time.perf_counter()
        for sample in range(args.samples):
            for batch_index, start in enumerate(range(0, len(prompts), args.batch_size)):
                batch = prompts[start : start + args.batch_size]
                texts = [
                    tokenizer.apply_chat_template(m, tokenize=False, add_generation_prompt=True) for m, _ in batch
                ]
                inputs = tokenizer(texts, return_tensors="pt", padding=True)
                seed = 1000 * source_index + 100 * sample + batch_index
                torch.manual_seed(seed)
                with torch.no_grad():
                    output = model.generate(
                        **inputs, do_sample=True, temperature=temperature, top_p=1.0, top_k=0,
                        max_new_tokens=max_new_tokens, pad_token_id=tokenizer.pad_token_id,
                    )  # fmt: skip
                new = output[:, inputs["input_ids"].shape[1] :]
                for (messages, reference), tokens in zip(batch, new):
                    completion = tokenizer.decode(tokens, skip_special_tokens=True)
                    rows.append({"source": source, "prompt": messages, "completion": completion,
                                 "reference": reference, "seed": seed})  # fmt: skip
        count = args.samples * len(prompts)
        print(f"{source}: {count} completions in {time.perf_counter() - source_started:.1f} s")
    elapsed = time.perf_counter() - started
    print(f"load average after: {os.getloadavg()}")
    print(f"{len(rows)} completions in {elapsed:.1f} s ({model_path}, 1 thread)")
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    with open(args.output, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"wrote {args.output} ({Path(args.output).stat().st_size} bytes)")


if __name__ == "__main__":
    main()
