"""Sampling speed of held-out evaluation on a CPU: torch threads, and prompts sampled together in one generate call.

    python benchmarks/generation_speed.py                       # SmolLM2-135M-Instruct, prepared on first use
    python benchmarks/generation_speed.py --model outputs/run --rounds 5

The sampler of `trl-grpo-ext evaluate` (`TransformersSampler`) draws n = 8 completions of 16 new tokens for each of
16 held-out arithmetic questions (`trl_grpo_ext.data.chat_arithmetic`), in four settings: 1 or 2 torch threads, and one
prompt a call (`--prompts_per_call 1`) or 8 (one left-padded call of 64 sequences). Each round runs the four settings
one after the other, so that load from other processes hits all of them; the figure is the median over rounds of
the milliseconds per sequence, and the ratios are taken within each round, then their median and range printed.
The load average is printed before and after: a figure measured under load is no figure.
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="Model folder (default: SmolLM2-135M-Instruct, prepared).")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--prompts", type=int, default=16)
    args = parser.parse_args()

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from trl_grpo_ext import as_chat, chat_arithmetic_split, smollm2_path
    from trl_grpo_ext.evaluation.core import draw
    from trl_grpo_ext.evaluation.sampling import TransformersSampler, generation_settings

    model_path = args.model or smollm2_path()
    model = AutoModelForCausalLM.from_pretrained(model_path).eval()
    tokenizer = AutoTokenizer.from_pretrained(model_path)
    rows = as_chat(chat_arithmetic_split("held_out", max_operand=12, limit=args.prompts))
    samples = 8
    sampler = TransformersSampler(
        model, tokenizer, generation_settings({"max_completion_length": 16, "temperature": 1.0}), batch_size=64
    )
    settings = list(itertools.product((1, 2), (1, 8)))  # (threads, prompts per call)
    print(f"load average before: {os.getloadavg()}")
    ms: dict[tuple[int, int], list[float]] = {s: [] for s in settings}
    for _ in range(args.rounds):
        for threads, per_call in settings:
            torch.set_num_threads(threads)
            started = time.perf_counter()
            for start in range(0, len(rows), per_call):
                items = [(i, rows[i]["prompt"]) for i in range(start, min(start + per_call, len(rows)))]
                draw(sampler, items, samples, False)
            ms[threads, per_call].append((time.perf_counter() - started) * 1000 / (len(rows) * samples))
    print(f"load average after: {os.getloadavg()}")
    print(f"{model_path}: {len(rows)} prompts x {samples} samples x 16 new tokens, {args.rounds} rounds")
    print("| threads | prompts per call | ms per sequence (median) | speed-up over 1 thread, 1 prompt a call |")
    print("|---|---|---|---|")
    base = ms[1, 1]
    for setting in settings:
        ratios = [b / x for b, x in zip(base, ms[setting])]
        print(f"| {setting[0]} | {setting[1]} | {statistics.median(ms[setting]):.0f} | "
              f"x{statistics.median(ratios):.2f} (x{min(ratios):.2f} - x{max(ratios):.2f}) |")  # fmt: skip


if __name__ == "__main__":
    main()
