"""Arithmetic questions in words, for a pretrained chat model: a task a 135M model learns in minutes on a CPU.

Level 1: "What is 14 + 7? Answer with the number only." (a + b, and a - b with a >= b, for a, b in 0..max_operand).
Level 2: two operations, "What is 14 + 7 - 5? ..." (a + b - c and a - b + c, every partial result >= 0).
The answer column holds the result; the `math` verifier grades a completion against it.

Every problem of a level is enumerated in a fixed order, and a fixed share is held out with a fixed seed, so the
held-out problems are the same on every machine and never trained on. Level 2 has tens of thousands of problems:
`chat_arithmetic_split(..., limit=N)` takes a seeded subset of a split.
"""

from __future__ import annotations

import itertools
import random

LEVELS = (1, 2)
SPLITS = ("all", "train", "held_out")
HELD_OUT_SHARE = 0.2
HELD_OUT_SEED = 135
INSTRUCTION = "Answer with the number only."


def chat_arithmetic_problems(level: int = 1, max_operand: int = 9) -> list[dict[str, str]]:
    """Every problem of `level` with operands 0..max_operand: [{"prompt": question, "answer": result}, ...]."""
    if level not in LEVELS:
        raise ValueError(f"level={level!r} is not a level of the task. Valid choices: {', '.join(map(str, LEVELS))}.")
    if not isinstance(max_operand, int) or max_operand < 1:
        raise ValueError(f"max_operand={max_operand!r} must be an integer >= 1.")
    operands = range(max_operand + 1)
    expressions = []
    if level == 1:
        for a, b in itertools.product(operands, repeat=2):
            expressions.append((f"{a} + {b}", a + b))
            if a >= b:
                expressions.append((f"{a} - {b}", a - b))
    else:
        for a, b, c in itertools.product(operands, repeat=3):
            if a + b >= c:
                expressions.append((f"{a} + {b} - {c}", a + b - c))
            if a >= b:
                expressions.append((f"{a} - {b} + {c}", a - b + c))
    return [{"prompt": f"What is {text}? {INSTRUCTION}", "answer": str(value)} for text, value in expressions]


def chat_arithmetic_split(
    split: str = "all", level: int = 1, max_operand: int = 9, limit: int | None = None, seed: int = 0
) -> list[dict[str, str]]:
    """The problems of one split (`SPLITS`): "held_out" is a fixed fifth of the level's problems, "train" the rest.
    `limit`: a subset of that many, drawn with `seed` (in the split's order); None: the whole split."""
    if split not in SPLITS:
        raise ValueError(f"split={split!r} is not a split of the task. Valid choices: {', '.join(SPLITS)}.")
    problems = chat_arithmetic_problems(level, max_operand)
    if split != "all":
        count = round(HELD_OUT_SHARE * len(problems))
        held_out = set(random.Random(HELD_OUT_SEED).sample(range(len(problems)), count))
        problems = [p for i, p in enumerate(problems) if (i in held_out) == (split == "held_out")]
    if limit is not None:
        if limit < 1:
            raise ValueError(f"limit={limit} must be >= 1.")
        chosen = sorted(random.Random(seed).sample(range(len(problems)), min(limit, len(problems))))
        problems = [problems[i] for i in chosen]
    return problems


def as_chat(rows: list[dict[str, str]]) -> list[dict]:
    """The rows with their question as a one-message conversation (the form GRPOTrainer reads)."""
    return [{**row, "prompt": [{"role": "user", "content": row["prompt"]}]} for row in rows]
