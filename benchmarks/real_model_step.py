"""Seconds per GRPO step of SmolLM2-135M-Instruct on a CPU: float32 against bfloat16 mixed precision, full fine-tuning
against LoRA.

    python benchmarks/real_model_step.py                  # 2 rounds of 4 steps per setting
    python benchmarks/real_model_step.py --rounds 3 --steps 5 --settings fp32-full bf16-full

The real-model example's step (examples/grpo_real_model.py): 4 prompts x 8 completions of 16 new tokens, temperature
1.0, beta 0, no gradient checkpointing. Each round trains every setting for `--steps` steps one after the other, so
that load from other processes hits all of them alike; a setting's figure is the median of its steps' `step_time`
(TRL's own log) without each run's first step (warm-up). Ratios to the first setting are taken within each round, and
their median and range printed. The training rewards of the first two steps are printed too: float32 and bfloat16
sample from slightly different logits, so they may differ from the first step on. The load average is printed before
and after: a figure measured under load is no figure.
"""

from __future__ import annotations

import argparse
import os
import statistics

SETTINGS = {
    "fp32-full": dict(bf16=False, lora=False),
    "bf16-full": dict(bf16=True, lora=False),
    "fp32-lora": dict(bf16=False, lora=True),
    "bf16-lora": dict(bf16=True, lora=True),
}


def train_steps(model_path: str, setting: str, steps: int, seed: int) -> list[dict]:
    """Train `steps` steps of the real-model example in `setting`; the logged rows."""
    import tempfile

    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback

    from trl_grpo_ext import GRPOExtConfig, GRPOExtTrainer, as_chat, chat_arithmetic_split
    from trl_grpo_ext.verifiers import as_reward_function

    options = SETTINGS[setting]
    rows = as_chat(chat_arithmetic_split("train", max_operand=12, limit=64, seed=seed))
    logged: list[dict] = []

    class Recorder(TrainerCallback):
        def on_log(self, args, state, control, logs=None, **kwargs):
            if logs and "step_time" in logs:
                logged.append(dict(logs))

    peft_config = None
    if options["lora"]:
        from peft import LoraConfig

        peft_config = LoraConfig(r=16, lora_alpha=32, target_modules="all-linear", task_type="CAUSAL_LM")
    reward = as_reward_function("math", reference_column="answer")
    with tempfile.TemporaryDirectory() as out:
        config = GRPOExtConfig(
            output_dir=out, use_cpu=True, bf16=options["bf16"], seed=seed, max_steps=steps,
            learning_rate=2e-4 if options["lora"] else 2e-5, lr_scheduler_type="constant", num_generations=8,
            per_device_train_batch_size=32, max_completion_length=16, temperature=1.0, beta=0.0,
            gradient_checkpointing=False, logging_steps=1, save_strategy="no", report_to="none", disable_tqdm=True,
        )  # fmt: skip
        trainer = GRPOExtTrainer(
            model=AutoModelForCausalLM.from_pretrained(model_path), args=config,
            processing_class=AutoTokenizer.from_pretrained(model_path), reward_funcs=reward,
            train_dataset=Dataset.from_list(rows), peft_config=peft_config, callbacks=[Recorder()],
        )  # fmt: skip
        try:
            trainer.train()
        finally:
            reward.verifier.close()
    return logged


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="Model folder (default: SmolLM2-135M-Instruct, prepared).")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--steps", type=int, default=4, help="Steps per run; the first is left out of the figure.")
    parser.add_argument("--settings", nargs="+", default=list(SETTINGS), choices=list(SETTINGS))
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()

    import torch

    from trl_grpo_ext import smollm2_path

    torch.set_num_threads(args.threads)
    model_path = args.model or smollm2_path()
    print(f"load average before: {os.getloadavg()}; torch {torch.__version__}, {args.threads} threads", flush=True)
    per_round: list[dict[str, float]] = []
    for round_index in range(args.rounds):
        figures = {}
        for setting in args.settings:
            rows = train_steps(model_path, setting, args.steps, seed=0)
            times = [row["step_time"] for row in rows[1:]]
            figures[setting] = statistics.median(times)
            rewards = ", ".join(f"{row['reward']:.3f}" for row in rows[:2])
            print(
                f"round {round_index}: {setting}: {figures[setting]:.2f} s a step (steps {times}); rewards {rewards}"
            )
        per_round.append(figures)
    first = args.settings[0]
    for setting in args.settings:
        seconds = statistics.median(r[setting] for r in per_round)
        ratios = [r[first] / r[setting] for r in per_round]
        print(
            f"{setting}: {seconds:.2f} s a step (median of rounds), x{statistics.median(ratios):.2f} the steps a "
            f"second of {first} (range {min(ratios):.2f} - {max(ratios):.2f})"
        )
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
