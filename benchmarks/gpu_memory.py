"""Peak GPU memory of one GRPO step per setup, measured with `torch.cuda.max_memory_allocated`, next to the estimate
of `trl-grpo-ext memory` for the same settings. Needs a CUDA GPU; exits with a message otherwise.

    python benchmarks/gpu_memory.py                        # a locally built Llama (no download), bf16
    python benchmarks/gpu_memory.py --model /path/to/Qwen2.5-0.5B --precision bf16 --group-size 8

Each setup runs in a fresh process so that one setup's cached allocations never count against the next. Every
completion is forced to full length (`min_new_tokens`) and every prompt has `--prompt-length` tokens, so the shapes
are the ones the estimate assumes. PPO is estimated only: TRL 1.16 ships no PPO trainer to measure.
Measured: the allocator's peak (all live tensors: weights, reference and reward models, gradients, optimizer
states, activations, KV cache, temporaries), and the bytes parameters/gradients/optimizer states hold after the
optimizer step (counted from the tensors, as tests/test_memory.py does on CPU).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile

SETUPS = {  # name -> (estimate setup, beta, reward model?)
    "grpo_reward_model": ("grpo_reward_model", 0.04, True),
    "grpo_verifiers": ("grpo_verifiers", 0.04, False),
    "grpo_verifiers_beta0": ("grpo_verifiers_beta0", 0.0, False),
}
OPTIM = {"adamw": "adamw_torch", "adamw_8bit": "adamw_bnb_8bit"}  # our name -> TrainingArguments.optim
GIB = 1024**3


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", help="Local folder of a causal LM with weights; default: a locally built Llama.")
    parser.add_argument("--hidden-size", type=int, default=1024, help="Size of the locally built Llama.")
    parser.add_argument("--layers", type=int, default=8, help="Layers of the locally built Llama.")
    parser.add_argument("--precision", choices=["fp32", "bf16"], default="bf16")
    parser.add_argument("--optimizer", choices=list(OPTIM), default="adamw")
    parser.add_argument("--lora-rank", type=int, default=0, help="0: full fine-tuning.")
    parser.add_argument("--group-size", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=2, help="Prompts per step.")
    parser.add_argument("--prompt-length", type=int, default=128)
    parser.add_argument("--completion-length", type=int, default=256)
    parser.add_argument("--no-gradient-checkpointing", dest="gradient_checkpointing", action="store_false")
    parser.add_argument("--setups", default=",".join(SETUPS), help="Comma-separated subset of " + ", ".join(SETUPS))
    parser.add_argument("--dry-run", action="store_true", help="Check the arguments, print each setup's command.")
    parser.add_argument("--child", help=argparse.SUPPRESS)  # run one setup in this process and print JSON
    return parser.parse_args(argv)


def model_folder(args) -> str:
    if args.model:
        return args.model
    from trl_grpo_ext import tiny_model_path

    return tiny_model_path(hidden_size=args.hidden_size, num_layers=args.layers, max_positions=4096)


def tensor_bytes(tensors) -> int:
    import torch

    seen = {id(t): t for t in tensors if torch.is_tensor(t)}
    return sum(t.numel() * t.element_size() for t in seen.values())


def exact_length_prompts(tokenizer, count: int, length: int) -> list[str]:
    """`count` copies of a plain-text prompt of exactly `length` tokens: a repeated word, cut to length in tokens."""
    ids = tokenizer(" hello" * length, add_special_tokens=False)["input_ids"][:length]
    text = tokenizer.decode(ids)
    if len(tokenizer(text, add_special_tokens=False)["input_ids"]) != length:
        raise ValueError(f"--prompt-length={length}: could not build a prompt of exactly that many tokens")
    return [text] * count


def measure_one(args) -> dict:
    """One training step of the extended trainer in setup `args.child`; bytes measured on the GPU."""
    import torch
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoModelForSequenceClassification, AutoTokenizer, TrainerCallback

    from trl_grpo_ext import GRPOExtConfig, GRPOExtTrainer

    _, beta, with_reward_model = SETUPS[args.child]
    folder = model_folder(args)
    dtype = torch.float32 if args.precision == "fp32" else torch.bfloat16
    tokenizer = AutoTokenizer.from_pretrained(folder)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    torch.cuda.reset_peak_memory_stats()
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=dtype)
    reward_funcs = [lambda completions, **kwargs: [float(len(c)) for c in completions]]
    if with_reward_model:
        reward_model = AutoModelForSequenceClassification.from_pretrained(folder, num_labels=1, dtype=dtype)
        reward_model.config.pad_token_id = tokenizer.pad_token_id
        reward_funcs = [reward_model]
    peft_config = None
    if args.lora_rank:
        from peft import LoraConfig

        peft_config = LoraConfig(r=args.lora_rank, lora_alpha=2 * args.lora_rank, target_modules="all-linear")
    held = {}

    class Held(TrainerCallback):
        def on_optimizer_step(self, targs, state, control, model=None, optimizer=None, **kwargs):
            params = list(model.parameters())
            inner = getattr(optimizer, "optimizer", optimizer)
            held["weights"] = tensor_bytes(params)
            held["gradients"] = tensor_bytes([p.grad for p in params if p.grad is not None])
            held["optimizer_states"] = tensor_bytes([v for s in inner.state.values() for v in s.values()])

    config = GRPOExtConfig(
        output_dir=tempfile.mkdtemp(),
        per_device_train_batch_size=args.batch_size * args.group_size,
        num_generations=args.group_size,
        max_completion_length=args.completion_length,
        generation_kwargs={"min_new_tokens": args.completion_length},
        gradient_checkpointing=args.gradient_checkpointing,
        beta=beta,
        optim=OPTIM[args.optimizer],
        bf16=args.precision == "bf16",
        max_steps=1,
        report_to="none",
        save_strategy="no",
        seed=0,
    )
    dataset = Dataset.from_dict({"prompt": exact_length_prompts(tokenizer, args.batch_size, args.prompt_length)})
    trainer = GRPOExtTrainer(
        model=model,
        reward_funcs=reward_funcs,
        args=config,
        train_dataset=dataset,
        processing_class=tokenizer,
        peft_config=peft_config,
        callbacks=[Held()],
    )
    resident_after_init = torch.cuda.memory_allocated()
    trainer.train()
    torch.cuda.synchronize()
    return {"peak": torch.cuda.max_memory_allocated(), "resident_after_init": resident_after_init, **held}


def estimate_for(args, setup_name: str):
    from transformers import AutoConfig

    from trl_grpo_ext.memory import TrainingSetup, dims_from_config, estimate

    dims = dims_from_config(AutoConfig.from_pretrained(model_folder(args)))
    setup = TrainingSetup(
        precision=args.precision,
        optimizer=args.optimizer,
        lora_rank=args.lora_rank,
        group_size=args.group_size,
        batch_size=args.batch_size,
        prompt_length=args.prompt_length,
        completion_length=args.completion_length,
        gradient_checkpointing=args.gradient_checkpointing,
    )
    return estimate(setup_name, dims, setup)


def run_child(setup_name: str, argv: list[str]) -> dict:
    """Run one setup in a fresh Python process and read its JSON line."""
    result = subprocess.run(
        [sys.executable, __file__, *argv, "--child", setup_name], capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        raise RuntimeError(f"setup {setup_name} failed:\n{result.stderr[-4000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    names = [name.strip() for name in args.setups.split(",")]
    unknown = [name for name in names if name not in SETUPS]
    if unknown:
        sys.exit(f"--setups: {unknown} not valid; choose from {', '.join(SETUPS)}")
    if args.dry_run:
        child_argv = [a for a in argv if a != "--dry-run"]
        for name in names:
            print(" ".join([sys.executable, __file__, *child_argv, "--child", name]))
        return 0
    import torch

    if not torch.cuda.is_available():
        sys.exit("benchmarks/gpu_memory.py measures torch.cuda.max_memory_allocated and needs a CUDA GPU; none is "
                 "visible (torch.cuda.is_available() is False). On CPU run `pytest tests/test_memory.py`, which "
                 "checks the estimate against the bytes tensors hold.")  # fmt: skip
    if args.child:
        print(json.dumps(measure_one(args)))
        return 0
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}; {' '.join(argv) or 'defaults'}")
    print(
        "| setup | est. peak GiB | measured peak GiB | measured/est. | est. w+g+opt GiB | measured w+g+opt GiB "
        "| est. models GiB | measured after init GiB |"
    )
    print("| --- " * 8 + "|")
    for name in names:
        measured = run_child(name, argv)
        est = estimate_for(args, SETUPS[name][0])
        c = est.components
        est_states = c["weights"] + c["gradients"] + c["optimizer_states"]
        held = measured["weights"] + measured["gradients"] + measured["optimizer_states"]
        est_models = c["weights"] + c["reference_model"] + c["reward_model"]  # on the GPU before the first step
        print(
            f"| {name} | {est.peak / GIB:.3f} | {measured['peak'] / GIB:.3f} | {measured['peak'] / est.peak:.2f} "
            f"| {est_states / GIB:.3f} | {held / GIB:.3f} | {est_models / GIB:.3f} "
            f"| {measured['resident_after_init'] / GIB:.3f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
