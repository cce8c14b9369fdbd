"""`trl-grpo-ext memory`: GPU memory per component for PPO and three GRPO setups, from the model's config alone.

Example: `trl-grpo-ext memory --preset qwen2.5-7b --precision mixed --zero_stage 3 --num_gpus 8` (the dashed
spellings of earlier versions, `--zero-stage`, still work).
"""

from __future__ import annotations

import argparse
import json
import sys

GIB = 1024**3
SETUP_TITLES = {
    "ppo": "PPO",
    "grpo_reward_model": "GRPO+RM",
    "grpo_verifiers": "GRPO+verif.",
    "grpo_verifiers_beta0": "GRPO beta=0",
}
COMPONENT_TITLES = {
    "weights": "policy weights",
    "gradients": "policy gradients",
    "optimizer_states": "optimizer states",
    "reference_model": "reference model",
    "reward_model": "reward model",
    "critic": "critic (all states)",
    "activations": "activations",
    "kv_cache": "KV cache (generation)",
    "zero3_generation_gather": "ZeRO-3 gathered weights",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from trl_grpo_ext.memory import OPTIMIZERS, PRECISIONS, PRESETS

    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--model",
        help="Config folder, config.json file, or Hub name (reads the config only). No default: this or --preset.",
    )
    source.add_argument(
        "--preset", choices=list(PRESETS), help="Dims typed in from a public config.json. No default: this or --model."
    )
    add_flag(
        parser,
        "--reward_model",
        help="Reward model's config (folder, file, Hub name or preset). Default: the policy's.",
    )
    add_flag(
        parser,
        "--critic_model",
        help="Critic's config for PPO. Default: the policy's (value model = backbone + head).",
    )
    add_flag(parser, "--precision", choices=PRECISIONS, default="bf16", help="Default: %(default)s.")
    add_flag(parser, "--optimizer", choices=OPTIMIZERS, default="adamw", help="Default: %(default)s.")
    add_flag(parser, "--lora_rank", type=int, default=0, help="LoRA rank; 0 is full fine-tuning. Default: 0.")
    add_flag(parser, "--lora_targets", default="all-linear", help="Comma-separated modules. Default: all-linear.")
    add_flag(parser, "--zero_stage", type=int, choices=[0, 1, 2, 3], default=0, help="Default: %(default)s.")
    add_flag(parser, "--num_gpus", type=int, default=1, help="GPUs the ZeRO stage shards over. Default: 1.")
    add_flag(parser, "--group_size", type=int, default=8, help="Completions per prompt (G). Default: 8.")
    add_flag(parser, "--batch_size", type=int, default=1, help="Prompts per GPU per forward pass. Default: 1.")
    add_flag(parser, "--prompt_length", type=int, default=512, help="Default: %(default)s tokens.")
    add_flag(parser, "--completion_length", type=int, default=1024, help="Default: %(default)s tokens.")
    add_flag(
        parser,
        "--no_gradient_checkpointing",
        dest="gradient_checkpointing",
        action="store_false",
        help="Turn gradient checkpointing off. Default: on (TRL's default).",
    )
    add_flag(
        parser,
        "--ppo_separate_updates",
        dest="ppo_joint_update",
        action="store_false",
        help="PPO updates policy and critic one after the other (verl, OpenRLHF) instead of in one backward (TRL). "
        "Default: off (one backward).",
    )
    parser.add_argument("--json", action="store_true", help="Print bytes as JSON instead of a table. Default: off.")


def add_flag(parser: argparse.ArgumentParser, name: str, **kwargs) -> None:
    """Add `--name_with_underscores` (TRL's convention) and, for a name with an underscore, the dashed spelling of
    earlier versions as a hidden alias of the same destination."""
    action = parser.add_argument(name, **kwargs)
    if "_" not in name:
        return
    alias = {k: v for k, v in kwargs.items() if k in ("type", "choices", "action")}
    parser.add_argument(
        name.replace("_", "-"), dest=action.dest, default=argparse.SUPPRESS, help=argparse.SUPPRESS, **alias
    )


def setup_from_args(args: argparse.Namespace):
    from trl_grpo_ext.memory import TrainingSetup

    return TrainingSetup(
        precision=args.precision,
        optimizer=args.optimizer,
        lora_rank=args.lora_rank,
        lora_targets=tuple(args.lora_targets.split(",")),
        zero_stage=args.zero_stage,
        num_gpus=args.num_gpus,
        group_size=args.group_size,
        prompt_length=args.prompt_length,
        completion_length=args.completion_length,
        batch_size=args.batch_size,
        gradient_checkpointing=args.gradient_checkpointing,
        ppo_joint_update=args.ppo_joint_update,
    )


def format_table(estimates: dict, title: str) -> str:
    """One row per component and phase, one column per setup, in GiB per GPU."""
    names = list(estimates)
    width = max(map(len, COMPONENT_TITLES.values()))
    lines = [title, f"{'GiB per GPU':<{width}}" + "".join(f"{SETUP_TITLES[n]:>13}" for n in names)]
    for key, label in COMPONENT_TITLES.items():
        lines.append(f"{label:<{width}}" + "".join(f"{estimates[n].components[key] / GIB:>13.2f}" for n in names))
    lines.append("-" * len(lines[1]))
    rows = {
        "training phase": lambda e: e.training_phase,
        "generation phase": lambda e: e.generation_phase,
        "peak per GPU": lambda e: e.peak,
    }
    for label, value in rows.items():
        lines.append(f"{label:<{width}}" + "".join(f"{value(estimates[n]) / GIB:>13.2f}" for n in names))
    ppo = estimates["ppo"].peak
    lines.append(f"{'peak vs PPO':<{width}}" + "".join(f"{estimates[n].peak / ppo:>12.0%} " for n in names))
    return "\n".join(lines)


def describe(policy, setup) -> str:
    from trl_grpo_ext.memory import count_parameters

    training = (
        "full fine-tuning" if setup.lora_rank == 0 else f"LoRA r={setup.lora_rank} on {','.join(setup.lora_targets)}"
    )
    checkpointing = "on" if setup.gradient_checkpointing else "off"
    return (
        f"{policy.name or 'model'}: {count_parameters(policy) / 1e9:.3f}B parameters; {training}; "
        f"precision {setup.precision}; {setup.optimizer}; ZeRO-{setup.zero_stage} on {setup.num_gpus} GPU(s)\n"
        f"{setup.batch_size} prompt(s) x G={setup.group_size} = {setup.num_sequences} sequences per GPU of "
        f"{setup.prompt_length}+{setup.completion_length} tokens; gradient checkpointing {checkpointing}"
    )


def run(args: argparse.Namespace) -> int:
    from trl_grpo_ext.memory import estimate_all, load_model_dims

    try:
        policy = load_model_dims(args.preset or args.model)
        reward = load_model_dims(args.reward_model) if args.reward_model else None
        critic = load_model_dims(args.critic_model) if args.critic_model else None
        setup = setup_from_args(args)
    except ValueError as error:  # bad input: say what and how to fix it, without a traceback
        print(f"trl-grpo-ext memory: error: {error}", file=sys.stderr)
        return 2
    estimates = estimate_all(policy, setup, reward=reward, critic=critic)
    if args.json:
        payload = {
            name: {**e.components, "training_phase": e.training_phase, "generation_phase": e.generation_phase}
            for name, e in estimates.items()
        }
        print(json.dumps(payload, indent=2))
    else:
        print(format_table(estimates, describe(policy, setup)))
    return 0
