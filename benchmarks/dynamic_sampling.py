"""Stock GRPO against dynamic sampling, prompt retirement and pass-rate sampling on the built-in task, at the same
generation budget.

Every run trains the tiny model (after compare's format-only warm-up, one per seed) on the 88 training problems of the
built-in task's single-digit sums and differences with the `math` verifier and compare's settings for it (8 completions per prompt,
32 prompts per step, beta 0.04, learning rate 1e-3, one-token completions), until it has generated `--budget`
completions, counted as the trainer counts them (`num_completions_generated`: every round, dropped groups included).
The data set holds each problem once: retirement is tracked by dataset row, and compare's built-in set repeats every
problem 100 times as separate rows, where no row would come back often enough to be retired.

At `--evals` evenly spaced points of the budget (the first step that reaches each), the policy is evaluated on the
22 held-out problems no run trains on (`arithmetic_split("held_out")`) by its expected reward: with one-token completions sampled at temperature 1, that is exactly the
probability of the tokens the `math` verifier pays for the problem's answer (found by asking the verifier about every
token of the vocabulary), averaged over the problems. No sampling noise, and the same measure for every variant:
the training reward cannot be compared, since retirement samples only the problems not yet solved.

    python benchmarks/dynamic_sampling.py                          # 3 seeds x 3 variants, 51,200 completions each
    python benchmarks/dynamic_sampling.py --seeds 1 --budget 2560  # a quick look
    python benchmarks/dynamic_sampling.py --seeds 5 --variants prompt_sampling=pass_rate  # stock and one variant

Writes `<output_dir>/results.json` (every evaluation and logged step of every run) and prints a Markdown table: per
variant, the expected reward at each budget point (mean over seeds [95% interval, Student t]), the optimizer steps
taken, and the paired difference from stock (same seed) at the full budget.
"""

from __future__ import annotations

import argparse
import json
import os
import time
import warnings
from pathlib import Path

os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch  # noqa: E402
from transformers import PrinterCallback, TrainerCallback  # noqa: E402

from trl_grpo_ext import GRPOExtConfig, GRPOExtTrainer, arithmetic_dataset, arithmetic_split  # noqa: E402  # noqa: E402
from trl_grpo_ext.compare import Task  # noqa: E402
from trl_grpo_ext.compare.plan import TINY_PROMPTS_PER_STEP, TINY_SETTINGS  # noqa: E402
from trl_grpo_ext.compare.run import prepare_model  # noqa: E402
from trl_grpo_ext.compare.stats import mean_ci, paired_difference  # noqa: E402
from trl_grpo_ext.compare.worker import build_rewards  # noqa: E402

VARIANTS = {
    "stock": {},
    "dynamic_sampling": {"dynamic_sampling": True},
    "retire_solved_after=2": {"retire_solved_after": 2},
    "prompt_sampling=pass_rate": {"prompt_sampling": "pass_rate"},
}


def paying_tokens(reward, tokenizer, answers: list[str]) -> dict[str, list[int]]:
    """answer -> the token ids whose one-token completion the reward function scores 1.0 for that answer."""
    vocabulary = list(range(len(tokenizer)))
    texts = [tokenizer.decode([token]) for token in vocabulary]
    paying = {}
    for answer in sorted(set(answers)):
        scores = reward(prompts=texts, completions=texts, answer=[answer] * len(texts))
        paying[answer] = [token for token, score in zip(vocabulary, scores, strict=True) if score == 1.0]
    return paying


@torch.no_grad()
def expected_reward(trainer, problems: list[dict], paying: dict[str, list[int]]) -> float:
    """Mean over the problems of the probability, at the sampling temperature, of a paid one-token completion."""
    model = trainer.accelerator.unwrap_model(trainer.model)
    training = model.training
    model.eval()
    ids = torch.tensor(trainer.processing_class(text=[p["prompt"] for p in problems])["input_ids"])
    logits = model(input_ids=ids.to(model.device)).logits[:, -1, :].float() / trainer.args.temperature
    model.train(training)
    probs = torch.softmax(logits, dim=-1).cpu()
    return sum(probs[i, paying[p["answer"]]].sum().item() for i, p in enumerate(problems)) / len(problems)


class GenerationBudget(TrainerCallback):
    """Evaluate at each budget point the run crosses, and stop at the budget (or when retirement ends the run)."""

    def __init__(self, trainer: GRPOExtTrainer, budget: int, points: int, evaluate):
        self.trainer, self.budget, self.evaluate = trainer, budget, evaluate
        self.marks = [budget * (i + 1) // points for i in range(points)]
        self.evaluations: list[dict] = []

    def completions(self, state) -> int:
        stream = self.trainer._prompt_stream
        if stream is not None:
            return stream.completions_generated
        return state.global_step * self.trainer.args.generation_batch_size  # one generation per step (stock)

    def on_step_end(self, args, state, control, **kwargs):
        done = self.completions(state)
        if done >= self.budget:
            control.should_training_stop = True
        if self.marks and done >= self.marks[0] or control.should_training_stop:
            while self.marks and done >= self.marks[0]:
                self.marks.pop(0)
            reward = self.evaluate(self.trainer)
            self.evaluations.append({"step": state.global_step, "completions": done, "eval_reward": reward})
        return control


def train_run(variant: str, seed: int, args, output_dir: Path) -> dict:
    task = Task()
    model = prepare_model(task, output_dir, seed)
    problems = arithmetic_split("held_out")
    dataset = arithmetic_dataset(repeats=1, seed=seed, split="train")
    group = TINY_SETTINGS["num_generations"]
    config = GRPOExtConfig(
        **TINY_SETTINGS,
        **VARIANTS[variant],
        output_dir=str(output_dir / "trainer" / f"{variant}-seed{seed}"),
        per_device_train_batch_size=TINY_PROMPTS_PER_STEP * group,
        max_steps=args.budget // (TINY_PROMPTS_PER_STEP * group) + 1,
        logging_steps=1,
        report_to="none",
        disable_tqdm=True,
        seed=seed,
        use_cpu=True,
    )
    rewards = build_rewards(task)
    trainer = GRPOExtTrainer(model=model, reward_funcs=rewards, args=config, train_dataset=dataset)
    trainer.remove_callback(PrinterCallback)
    paying = paying_tokens(rewards[0], trainer.processing_class, [p["answer"] for p in problems])
    budget = GenerationBudget(trainer, args.budget, args.evals, lambda t: expected_reward(t, problems, paying))
    budget.evaluations.append({"step": 0, "completions": 0, "eval_reward": budget.evaluate(trainer)})
    trainer.add_callback(budget)
    start = time.perf_counter()
    try:
        trainer.train()
    finally:
        for reward in rewards:
            reward.verifier.close()
    train_log = [
        {
            key: entry.get(key)
            for key in ("step", "reward", "step_time", "num_completions_generated", "prompts/retired")
        }
        for entry in trainer.state.log_history
        if "reward" in entry
    ]
    return {
        "variant": variant,
        "seed": seed,
        "steps": trainer.state.global_step,
        "seconds": time.perf_counter() - start,
        "evaluations": budget.evaluations,
        "train_log": train_log,
    }


def report(runs: list[dict], budget: int, points: int, variants: list[str]) -> str:
    marks = [budget * (i + 1) // points for i in range(points)]
    lines = [
        "| variant | at 0 | " + " | ".join(f"at {m:,}" for m in marks) + " | steps |",
        "|" + "---|" * (points + 3),
    ]
    final: dict[str, dict[int, float]] = {}
    for variant in variants:
        mine = [run for run in runs if run["variant"] == variant]
        cells = [interval(mean_ci([run["evaluations"][0]["eval_reward"] for run in mine]))]
        for i in range(points):
            values = [
                run["evaluations"][i + 1]["eval_reward"] if i + 1 < len(run["evaluations"]) else None for run in mine
            ]
            cells.append(interval(mean_ci(values)))
        final[variant] = {run["seed"]: run["evaluations"][-1]["eval_reward"] for run in mine}
        steps = mean_ci([float(run["steps"]) for run in mine])
        lines.append(f"| {variant} | " + " | ".join(cells) + f" | {interval(steps, '.0f')} |")
    lines += ["", "| variant - stock, same seed, at the last evaluation | difference |", "|---|---|"]
    for variant in variants[1:]:
        lines.append(f"| {variant} | {interval(paired_difference(final[variant], final['stock']), '+.4f')} |")
    return "\n".join(lines) + "\n"


def interval(stat: dict, spec: str = ".4f") -> str:
    if stat["mean"] is None:
        return "n/a"
    if stat["ci95"] is None:
        return format(stat["mean"], spec)
    low, high = stat["ci95"]
    return f"{format(stat['mean'], spec)} [{format(low, spec)}, {format(high, spec)}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--budget", type=int, default=51200, help="Completions generated per run (default 51200).")
    parser.add_argument("--evals", type=int, default=4, help="Evaluation points over the budget (default 4).")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1).")
    parser.add_argument("--output_dir", default="outputs/dynamic_sampling")
    parser.add_argument(
        "--variants", nargs="+", choices=list(VARIANTS), default=list(VARIANTS),
        help="Variants to run (default: all); stock is always run, as the baseline of the paired differences.",
    )  # fmt: skip
    args = parser.parse_args()
    args.variants = ["stock", *(v for v in args.variants if v != "stock")]
    torch.set_num_threads(args.threads)
    warnings.filterwarnings("ignore", module=r"(trl|transformers|accelerate|torch)(\.|$)")
    output_dir = Path(args.output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    runs = []
    for seed in range(args.seeds):
        for variant in args.variants:
            run = train_run(variant, seed, args, output_dir)
            last = run["evaluations"][-1]
            print(
                f"{variant} seed {seed}: {run['steps']} steps, {last['completions']} completions, eval reward "
                f"{last['eval_reward']:.4f}, {run['seconds']:.0f} s",
                flush=True,
            )
            runs.append(run)
            (output_dir / "results.json").write_text(json.dumps({"args": vars(args), "runs": runs}, indent=1))
    print(report(runs, args.budget, args.evals, args.variants), end="")


if __name__ == "__main__":
    main()
