"""Watch GRPO learn to use a Python tool: products of 3-digit numbers on a CPU, with the tool and without it.

    python examples/grpo_tool.py                 # or: make demo-tool (seed 0, both runs)
    python examples/grpo_tool.py --seeds 0 1 2   # a row per run and seed, and the means over seeds

The task: `456*789` -> `359784`, products of two 3-digit numbers (317 to 999, so that every product has 6 digits).
The embedded tiny model (2 layers, hidden size 64, random weights; a character tokenizer in which the chat
template's fixed strings, `python`, `code` and `\\boxed{` are whole tokens) cannot compute them itself;
with the sandboxed Python tool (`trl_grpo_ext.tools`) it has to call it with the question's expression and copy the
result into `\\boxed{}`.

Each seed trains two runs from the same randomly initialised model:
1. Format warm-up (supervised, `--warmup_steps`, the learning rate decaying to 0) on a different task, sums and
   differences (`456+789`, `789-456`): the tool run learns completions that call `python` on the question's numbers
   with an operator drawn at *random* from `+ - *`, independent of the question's, then box the tool's answer; the
   run without the tool learns the same boxed answers without the call. This teaches the call syntax, copying numbers
   into the call and the tool's answer into the box, and nothing about products: no product question is shown, and
   the operator of the call carries no information about the question's. The policy with the tool starts near 1 in 3
   at best (a right call needs `*`).
2. GRPO with `GRPOExtTrainer` (default estimators, beta 0.04 towards the warmed-up model) on product questions. The
   reward is the `math` verifier against the product, for answers written as a number (the verifier evaluates
   expressions: it would accept `\\boxed{456*789}` and do the multiplication itself). The tool run passes
   `tools=[python tool]` and the tool-calling chat template of the tiny model (`enable_tool_calls`); TRL's own tool
   loop runs the calls (at most one per completion).
3. Held-out accuracy before and after GRPO: 32 product questions never trained on (the same on every machine),
   `--eval_samples` completions each, sampled at the training temperature through the same tool loop and scored by
   the same reward; the mean over questions with a 95% bootstrap interval over questions.

Prints one row per run and seed (with the warm-up's copy rates: see `copy_rates`); with several seeds, each run's
mean over seeds with a 95% Student t interval over seeds, of the held-out accuracy before and after and of the gain,
and the tool run's lead over the run without it. Seeds are fixed and each run trains `--max_steps` steps, so a seed
gives the same figures on any machine (only slower or faster).
"""

from __future__ import annotations

import argparse
import json
import operator
import os
import random
import re
import sys
import time
from pathlib import Path

DEFAULTS = dict(
    max_steps=40,
    num_generations=8,
    prompts_per_step=16,
    learning_rate=1e-3,
    beta=0.04,
    warmup_steps=1000,
    eval_samples=4,
    output_dir="outputs/grpo_tool",
)
# Both numbers of a question (the warm-up's too): 3 digits, and their product always 6 (317 * 317 = 100489), so the
# answer the model copies from the tool has the same length in every product question.
OPERANDS = (317, 999)
HELD_OUT_COUNT = 32
HELD_OUT_SEED = 24  # the held-out questions: the same on every machine and for every --seeds
# The warm-up call's operator, drawn independently of the question's.
WARMUP_OPERATORS = {"+": operator.add, "-": operator.sub, "*": operator.mul}
REWARD_WINDOW = 10  # steps averaged for the first and last training reward
# The chat template's fixed strings, the tool's name and argument and the answer's `\boxed{` are whole tokens of the
# tiny model (`CHAT_TOKENS`): a warm-up conversation with a 6-digit tool answer is 49 tokens instead of 168.
EXTRA_TOKENS = ("python", "code", "\\boxed{")
TOOL_COMPLETION_TOKENS = 48  # call (14 tokens) + tool result (11) + boxed answer (9)
PLAIN_COMPLETION_TOKENS = 12  # \boxed{123456} and the end of turn (9)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for name, default in DEFAULTS.items():
        parser.add_argument(f"--{name}", type=type(default), default=default)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0], help="One tool run and one plain run per seed.")
    parser.add_argument("--runs", choices=("both", "tool", "no_tools"), default="both", help="Which runs to train.")
    parser.add_argument("--threads", type=int, default=min(2, os.cpu_count() or 1), help="torch CPU threads.")
    return parser.parse_args(argv)


# The task -------------------------------------------------------------------------------------------------------------


def question(a: int, b: int, symbol: str) -> list[dict]:
    return [{"role": "user", "content": f"{a}{symbol}{b}"}]


def product_rows(count: int, seed: int, exclude: set = frozenset()) -> list[dict]:
    """`count` distinct product questions of two 3-digit numbers, none of them in `exclude` (pairs (a, b)):
    rows {"prompt": conversation, "answer": "56088", "pair": [a, b]}."""
    rng = random.Random(seed)
    rows, seen = [], set(exclude)
    while len(rows) < count:
        a, b = rng.randint(*OPERANDS), rng.randint(*OPERANDS)
        if (a, b) not in seen:
            seen.add((a, b))
            rows.append({"prompt": question(a, b, "*"), "answer": str(a * b), "pair": [a, b]})
    return rows


def held_out_rows() -> list[dict]:
    return product_rows(HELD_OUT_COUNT, HELD_OUT_SEED)


def train_dataset(steps: int, prompts_per_step: int, seed: int):
    """One fresh product question per prompt of every step, none of them held out."""
    from datasets import Dataset

    held_out = {tuple(r["pair"]) for r in held_out_rows()}
    return Dataset.from_list(product_rows(steps * prompts_per_step, seed + 1000, exclude=held_out))


def build_model(seed: int, with_tool: bool):
    """The tiny model with `CHAT_TOKENS + EXTRA_TOKENS` as whole tokens (both runs), and with the tool run's
    tool-calling templates. Returns (model, tokenizer)."""
    from trl_grpo_ext.models.tiny_model import CHAT_TOKENS, build_tiny_model, enable_tool_calls

    model, tokenizer = build_tiny_model(seed=seed, chat_tokens=CHAT_TOKENS + EXTRA_TOKENS)
    if with_tool:
        enable_tool_calls(tokenizer)
    return model, tokenizer


# The format warm-up ---------------------------------------------------------------------------------------------------


def tool_call_text(code: str) -> str:
    """A completion's tool call, as the tiny model's response template parses it back."""
    call = {"name": "python", "arguments": {"code": code}}
    return f"<tool_call>\n{json.dumps(call)}\n</tool_call><|im_end|>"


def tool_result_text(tokenizer, result: str) -> str:
    """What TRL's tool loop appends after a call: the chat template's tool message and the next assistant header
    (computed as TRL computes it, from a dummy conversation cut after its last end of turn)."""
    call = {"type": "function", "function": {"name": "python", "arguments": {}}}
    head = [{"role": "user", "content": "x"}, {"role": "assistant", "content": "", "tool_calls": [call]}]
    tool = {"role": "tool", "name": "python", "content": result}
    prefix = tokenizer.apply_chat_template(head, tokenize=False)
    prefix = prefix[: prefix.rindex(tokenizer.eos_token) + len(tokenizer.eos_token)]
    full = tokenizer.apply_chat_template(head + [tool], tokenize=False, add_generation_prompt=True)
    if not full.startswith(prefix):
        raise ValueError("the chat template renders a tool message that does not extend the conversation")
    return full[len(prefix) :]


def warmup_example(tokenizer, rng: random.Random, tools) -> list[tuple[str, bool]]:
    """One warm-up conversation as (text, learned) segments: a sum or difference question, then (with tools) a call on
    its numbers with a random operator and the tool's answer, then that answer boxed."""
    a, b = rng.randint(*OPERANDS), rng.randint(*OPERANDS)
    asked = rng.choice("+-")
    symbol = rng.choice(list(WARMUP_OPERATORS))
    code, value = f"{a}{symbol}{b}", str(WARMUP_OPERATORS[symbol](a, b))  # the tool answers the value's repr
    prompt = tokenizer.apply_chat_template(
        question(a, b, asked), tools=tools, tokenize=False, add_generation_prompt=True
    )
    answer = (f"\\boxed{{{value}}}" + tokenizer.eos_token, True)
    if not tools:
        return [(prompt, False), answer]
    return [(prompt, False), (tool_call_text(code), True), (tool_result_text(tokenizer, value), False), answer]


def format_warmup(model, tokenizer, tools, steps: int, seed: int, batch_size: int = 32) -> float:
    """Supervised steps (AdamW, lr 3e-3 decaying linearly to 0) on warm-up conversations, learning only the model's
    own segments. Returns the last loss."""
    import torch

    rng = random.Random(seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    # Decaying to 0 lets the copies settle by the end instead of staying at the noise of a constant rate (measured:
    # docs/tools.md, "Shown learning").
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1 - step / steps)
    from tqdm.auto import tqdm

    model.train()
    loss = torch.tensor(float("nan"))
    bar = tqdm(range(steps), desc="format warm-up", unit="step", dynamic_ncols=True)
    for step in bar:
        rows = [encode_segments(tokenizer, warmup_example(tokenizer, rng, tools)) for _ in range(batch_size)]
        ids, labels = [row[0] for row in rows], [row[1] for row in rows]
        width = max(map(len, ids))
        pad = [width - len(row) for row in ids]
        batch = torch.tensor([row + [tokenizer.pad_token_id] * n for row, n in zip(ids, pad)])
        mask = torch.tensor([[1] * len(row) + [0] * n for row, n in zip(ids, pad)])
        target = torch.tensor([row + [-100] * n for row, n in zip(labels, pad)])
        loss = model(input_ids=batch, attention_mask=mask, labels=target).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        schedule.step()
        if step % 50 == 0:
            bar.set_postfix(loss=f"{loss.item():.3f}")
    bar.close()
    return loss.item()


def encode_segments(tokenizer, segments: list[tuple[str, bool]]) -> tuple[list[int], list[int]]:
    """Token ids of a conversation, segment by segment as TRL's tool loop concatenates them, and the labels: the ids
    of the learned segments, -100 elsewhere."""
    ids, labels = [], []
    for text, learned in segments:
        piece = tokenizer(text, add_special_tokens=False).input_ids
        ids += piece
        labels += piece if learned else [-100] * len(piece)
    return ids, labels


def copy_rates(model, tokenizer, tools, count: int = 64) -> dict:
    """What the warm-up taught, on fresh warm-up conversations whose call multiplies (a 6-digit tool answer, as in
    the product task): the probability that sampling writes every digit of the call right (the question's numbers)
    and every digit of the box right (the tool's answer), each given the right text before it; mean over `count`."""
    import torch

    rng, sums = random.Random(-1), {"call": 0.0, "box": 0.0}
    digits = {tokenizer.convert_tokens_to_ids(d) for d in "0123456789"}
    model.eval()
    with torch.no_grad():
        for _ in range(count):
            segments = warmup_example(tokenizer, rng, tools)
            while "*" not in segments[1][0]:
                segments = warmup_example(tokenizer, rng, tools)
            ids, _ = encode_segments(tokenizer, segments)
            logp = model(torch.tensor([ids])).logits[0].log_softmax(-1)
            ends = [len(encode_segments(tokenizer, segments[: k + 1])[0]) for k in range(len(segments))]
            for name, (start, end) in {"call": (ends[0], ends[1]), "box": (ends[2], ends[3])}.items():
                positions = [i for i in range(start, end) if ids[i] in digits]
                sums[name] += float(sum(logp[i - 1, ids[i]] for i in positions).exp())
    model.train()
    return {name: total / count for name, total in sums.items()}


# Training and evaluation ----------------------------------------------------------------------------------------------


# The math verifier evaluates expressions: it accepts `\\boxed{123*456}` for 56088, which would let it do the
# multiplication for the model, with or without the tool. Only an answer written as a whole number counts.
NUMBER_ANSWER = re.compile(r"\s*(\\boxed\{-?\d+\}|-?\d+)\s*")


def final_text(completion) -> str:
    """The text of the completion's last assistant message (a plain-text completion as it is)."""
    if isinstance(completion, str):
        return completion
    replies = [m for m in completion if m.get("role") == "assistant"]
    return (replies[-1].get("content") or "") if replies else ""


class ProductReward:
    """The `math` verifier's verdict on answers written as a number (0 for anything else); while `recording`, it
    keeps each score by the question's answer (for the held-out accuracy)."""

    def __init__(self, math_reward):
        self.reward, self.recording, self.scores = math_reward, False, {}
        self.__name__ = math_reward.__name__

    def __call__(self, prompts=None, completions=(), **columns):
        verdicts = self.reward(prompts, completions, **columns)
        scores = [
            verdict if verdict is None or NUMBER_ANSWER.fullmatch(final_text(completion)) else 0.0
            for verdict, completion in zip(verdicts, completions)
        ]  # None: the verifier's own failure, which TRL leaves out of the reward
        if self.recording:
            for answer, score in zip(columns["answer"], scores):
                if score is not None:
                    self.scores.setdefault(answer, []).append(score)
        return scores

    def evaluate(self, trainer, seed: int) -> dict:
        """Held-out accuracy: the mean score of each question, then their mean with a 95% bootstrap interval."""
        from trl_grpo_ext.evaluation.intervals import bootstrap_mean_ci

        self.recording, self.scores = True, {}
        try:
            trainer.evaluate()
        finally:
            self.recording = False
        per_question = [sum(s) / len(s) for s in self.scores.values()]
        return bootstrap_mean_ci(per_question, seed=seed)


def make_trainer(model, tokenizer, args: argparse.Namespace, seed: int, with_tool: bool, reward, progress):
    from transformers import PrinterCallback, ProgressCallback

    from trl_grpo_ext import GRPOExtConfig, GRPOExtTrainer
    from trl_grpo_ext.tools import PythonToolConfig, make_python_tool

    name = "tool" if with_tool else "no tools"

    batch = args.num_generations * args.prompts_per_step
    eval_batch = args.eval_samples * HELD_OUT_COUNT
    config = GRPOExtConfig(
        output_dir=str(Path(args.output_dir) / f"{name.replace(' ', '_')}_seed{seed}"),
        bf16=False, use_cpu=True, seed=seed, max_steps=args.max_steps, learning_rate=args.learning_rate,
        lr_scheduler_type="constant", num_generations=args.num_generations, per_device_train_batch_size=batch,
        num_generations_eval=args.eval_samples, per_device_eval_batch_size=eval_batch,
        max_completion_length=TOOL_COMPLETION_TOKENS if with_tool else PLAIN_COMPLETION_TOKENS,
        max_tool_calling_iterations=1 if with_tool else None, temperature=1.0, beta=args.beta, logging_steps=1,
        save_strategy="no", report_to="none", disable_tqdm=True,
    )  # fmt: skip
    from datasets import Dataset

    extra = {"tools": [make_python_tool(PythonToolConfig(timeout_s=20.0))]} if with_tool else {}
    trainer = GRPOExtTrainer(
        model=model, args=config, reward_funcs=[reward], processing_class=tokenizer,
        train_dataset=train_dataset(args.max_steps, args.prompts_per_step, seed),
        eval_dataset=Dataset.from_list(held_out_rows()), callbacks=[progress], **extra,
    )  # fmt: skip
    trainer.remove_callback(PrinterCallback)
    trainer.remove_callback(ProgressCallback)
    return trainer


def train_one(args: argparse.Namespace, seed: int, with_tool: bool) -> dict:
    """Warm up, evaluate, train, evaluate one run. Returns its row of the table."""
    import torch

    from trl_grpo_ext.tools import TOOL_STATS, make_python_tool
    from trl_grpo_ext.verifiers import as_reward_function

    torch.manual_seed(seed)
    model, tokenizer = build_model(seed, with_tool)
    tools = [make_python_tool()] if with_tool else None
    started = time.perf_counter()
    warmup_loss = format_warmup(model, tokenizer, tools, args.warmup_steps, seed)
    copies = copy_rates(model, tokenizer, tools) if with_tool else None
    note = f"; copies right: call {copies['call']:.2f}, box {copies['box']:.2f}" if copies else ""
    elapsed = time.perf_counter() - started
    print(
        f"  format warm-up: {args.warmup_steps} steps, last loss {warmup_loss:.3f}, {elapsed:.0f} s{note}", flush=True
    )
    reward = ProductReward(as_reward_function("math", reference_column="answer"))
    from trl_grpo_ext import RewardProgress

    progress = RewardProgress(
        args.max_steps, REWARD_WINDOW, desc=f"GRPO, {'tool' if with_tool else 'no tools'}, seed {seed}"
    )
    history = progress.history
    trainer = make_trainer(model, tokenizer, args, seed, with_tool, reward, progress)
    before = reward.evaluate(trainer, seed)
    print(f"  held-out accuracy before GRPO: {interval(before)}", flush=True)
    calls_before = TOOL_STATS.snapshot()
    trainer.train()
    calls = (TOOL_STATS.snapshot() - calls_before).calls
    after = reward.evaluate(trainer, seed)
    reward.reward.verifier.close()
    window = min(REWARD_WINDOW, len(history))
    first, last = (sum(h["reward"] for h in part) / window for part in (history[:window], history[-window:]))
    return {
        "run": "tool" if with_tool else "no tools", "seed": seed, "warmup_loss": warmup_loss, "warmup_copies": copies,
        "held_out_before": before, "held_out_after": after, "reward_first": first, "reward_last": last,
        "calls_per_completion": calls / max(1, args.max_steps * args.num_generations * args.prompts_per_step),
        "steps": history[-1]["step"] if history else 0, "seconds": time.perf_counter() - started, "log": history,
    }  # fmt: skip


# The table ------------------------------------------------------------------------------------------------------------


def interval(result: dict) -> str:
    low, high = result["ci95"] or (result["mean"], result["mean"])
    return f"{result['mean']:.2f} [{low:.2f}, {high:.2f}]"


def table(rows: list[dict], eval_samples: int) -> str:
    lines = [
        f"Held-out accuracy: {HELD_OUT_COUNT} product questions never trained on, {eval_samples} samples each, "
        "mean [95% bootstrap interval over questions]",
        "Warm-up copies: the probability of writing every digit of the call / of the box right (6-digit tool answers)",
        "| run | seed | warm-up copies | held-out before | held-out after | train reward first -> last 10 steps | "
        "tool calls per completion | steps | seconds |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        copies = r.get("warmup_copies")
        copies = f"{copies['call']:.2f} / {copies['box']:.2f}" if copies else "-"
        lines.append(
            f"| {r['run']} | {r['seed']} | {copies} | {interval(r['held_out_before'])} | "
            f"{interval(r['held_out_after'])} | "
            f"{r['reward_first']:.2f} -> {r['reward_last']:.2f} | {r['calls_per_completion']:.2f} | {r['steps']} | "
            f"{r['seconds']:.0f} |"
        )
    if len({r["seed"] for r in rows}) > 1:
        lines += [""] + over_seeds(rows)
    return "\n".join(lines)


def over_seeds(rows: list[dict]) -> list[str]:
    """Each run's held-out accuracy before and after, and its gain, as the mean over seeds with a 95% Student t
    interval over seeds; and the tool run's lead over the run without it, paired by seed."""
    from trl_grpo_ext.compare.report import fmt_interval
    from trl_grpo_ext.compare.stats import mean_ci, paired_difference

    lines = [
        "Over seeds: mean [95% interval over seeds, Student t]",
        "| run | seeds | held-out before | held-out after | gain (after - before) |",
        "| --- | --- | --- | --- | --- |",
    ]
    after = {}
    for run in dict.fromkeys(r["run"] for r in rows):
        before = {r["seed"]: r["held_out_before"]["mean"] for r in rows if r["run"] == run}
        after[run] = {r["seed"]: r["held_out_after"]["mean"] for r in rows if r["run"] == run}
        cells = [mean_ci(list(before.values())), mean_ci(list(after[run].values()))]
        gain = paired_difference(after[run], before)
        lines.append(
            f"| {run} | {len(before)} | {fmt_interval(cells[0], '.2f')} | {fmt_interval(cells[1], '.2f')} | "
            f"{fmt_interval(gain, '.2f', signed=True)} |"
        )
    if len(after) == 2:
        lead = paired_difference(after["tool"], after["no tools"])
        lines.append(f"Held-out after, tool minus no tools (paired by seed): {fmt_interval(lead, '.2f', signed=True)}")
    return lines


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    # examples/script_setup.py, next to this script; imported here since it imports trl, which --help does not need.
    import torch
    from script_setup import quiet_libraries

    quiet_libraries()
    torch.set_num_threads(args.threads)
    out = Path(args.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    runs = {"both": (True, False), "tool": (True,), "no_tools": (False,)}[args.runs]
    rows = []
    for seed in args.seeds:
        for with_tool in runs:
            row = train_one(args, seed, with_tool)
            print(
                f"{row['run']}, seed {seed}: held-out {interval(row['held_out_before'])} -> "
                f"{interval(row['held_out_after'])}, train reward {row['reward_first']:.2f} -> "
                f"{row['reward_last']:.2f} ({row['steps']} steps, {row['seconds']:.0f} s)",
                flush=True,
            )
            rows.append(row)
    with open(out / "results.json", "w") as f:
        json.dump(rows, f, indent=1)
    text = table(rows, args.eval_samples)
    (out / "table.md").write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
