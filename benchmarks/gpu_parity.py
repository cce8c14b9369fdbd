"""bf16 parity on a GPU: with default estimator settings GRPOExtTrainer must train bitwise as stock GRPOTrainer.

    python benchmarks/gpu_parity.py                     # every case, both bf16 variants, on cuda
    python benchmarks/gpu_parity.py --cases beta0,beta --precisions bf16-weights
    python benchmarks/gpu_parity.py --dry-run           # build every config on CPU, train nothing

The cases are those of tests/trl_grpo_ext/test_parity.py (which checks the same on CPU in fp32), on the tiny model,
3 steps each. Per case and precision it trains stock, stock again (the control: is stock reproducible against itself
on this GPU?) and the extension, from the same seed, and compares the logged losses and every parameter. Exit status
1 when the extension differs from stock anywhere; the table then says by how much, next to the control's difference
(a control that differs too means GPU nondeterminism: rerun with --full-determinism).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
# The shared helpers that the parity test uses, as benchmarks/trainer_overhead.py imports them.
sys.path.insert(0, str(Path(__file__).parents[1] / "tests" / "support"))

import torch  # noqa: E402

CASES = {  # name -> GRPOConfig overrides, as in test_parity.py
    "beta0": {},
    "beta": {"beta": 0.04},
    "dapo": {"beta": 0.04, "loss_type": "dapo"},
    "dr_grpo": {"beta": 0.04, "loss_type": "dr_grpo"},
    "iterations-accumulation": {"beta": 0.04, "num_iterations": 2, "gradient_accumulation_steps": 2},
    "scale-none": {"scale_rewards": "none"},
    "scale-batch": {"scale_rewards": "batch", "beta": 0.04},
}
PRECISIONS = {  # name -> settings: bf16 autocast over fp32 weights (TRL's default load), or bf16 weights too
    "bf16-autocast": {"bf16": True},
    "bf16-weights": {"bf16": True, "model_init_kwargs": {"dtype": "bfloat16"}},
}


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", default=",".join(CASES), help="Comma-separated subset of " + ", ".join(CASES))
    parser.add_argument("--precisions", default=",".join(PRECISIONS), help="Subset of " + ", ".join(PRECISIONS))
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda", help="cpu: to try the script itself.")
    parser.add_argument("--full-determinism", action="store_true", help="TrainingArguments.full_determinism=True.")
    parser.add_argument("--no-control", dest="control", action="store_false", help="Skip the second stock run.")
    parser.add_argument("--json", help="Also write the results to this file.")
    parser.add_argument("--dry-run", action="store_true", help="Build every config on CPU; train nothing.")
    args = parser.parse_args(argv)
    for flag, valid in (("cases", CASES), ("precisions", PRECISIONS)):
        names = [name.strip() for name in getattr(args, flag).split(",")]
        unknown = [name for name in names if name not in valid]
        if unknown:
            parser.error(f"--{flag}: {unknown} not valid; choose from {', '.join(valid)}")
        setattr(args, flag, names)
    return args


def configs(args, case: str, precision: str, workdir: str) -> tuple:
    """(stock GRPOConfig, extension GRPOExtConfig) for one case: same settings, extension at default estimators."""
    from trainer_helpers import make_config
    from trl import GRPOConfig

    from trl_grpo_ext import GRPOExtConfig

    settings = {
        **CASES[case],
        **PRECISIONS[precision],
        "max_steps": args.steps,
        "use_cpu": args.device == "cpu" or args.dry_run,
        "full_determinism": args.full_determinism,
    }
    stock = make_config(GRPOConfig, Path(workdir) / case / "stock", **settings)
    return stock, make_config(GRPOExtConfig, Path(workdir) / case / "ext", **settings)


def max_abs_diff(a: dict, b: dict) -> float:
    return max((a[name].float() - b[name].float()).abs().max().item() for name in a)


def compare(stock, other) -> dict:
    from trainer_helpers import losses, parameters

    loss_a, loss_b = losses(stock), losses(other)
    params_a, params_b = parameters(stock), parameters(other)
    differing = [name for name in params_a if not torch.equal(params_a[name], params_b[name])]
    return {
        "bitwise": loss_a == loss_b and not differing,
        "loss_max_abs_diff": max(abs(x - y) for x, y in zip(loss_a, loss_b)) if loss_a else 0.0,
        "param_max_abs_diff": max_abs_diff(params_a, params_b),
        "params_differing": f"{len(differing)}/{len(params_a)}",
    }


def train(trainer_cls, config, model_dir: str):
    """trainer_helpers.train without the per-step log lines."""
    from trainer_helpers import digit_reward, prompt_dataset
    from transformers import PrinterCallback, ProgressCallback

    trainer = trainer_cls(model=model_dir, reward_funcs=[digit_reward], args=config, train_dataset=prompt_dataset())
    trainer.remove_callback(PrinterCallback)
    trainer.remove_callback(ProgressCallback)
    trainer.train()
    return trainer


def run_case(args, case: str, precision: str, model_dir: str, workdir: str) -> dict:
    from trainer_helpers import losses, parameters
    from transformers import AutoModelForCausalLM
    from trl import GRPOTrainer

    from trl_grpo_ext import GRPOExtTrainer

    stock_config, ext_config = configs(args, case, precision, workdir)
    stock = train(GRPOTrainer, stock_config, model_dir)
    result = {"case": case, "precision": precision, "losses": losses(stock)}
    result["ext"] = compare(stock, train(GRPOExtTrainer, ext_config, model_dir))
    if args.control:
        control_config, _ = configs(args, case, precision, workdir + "/control")
        result["control"] = compare(stock, train(GRPOTrainer, control_config, model_dir))
    trained = parameters(stock)
    start = dict(AutoModelForCausalLM.from_pretrained(model_dir).named_parameters())
    result["trained"] = any(not torch.equal(trained[n].cpu().float(), start[n].float()) for n in start)
    return result


TABLE_HEADER = (
    "| case | precision | ext = stock | loss max abs diff | param max abs diff | params differing | control |\n"
    + "| --- " * 7
    + "|"
)


def table_row(r: dict) -> str:
    e, c = r["ext"], r.get("control")
    control = "not run" if c is None else ("bitwise" if c["bitwise"] else f"differs ({c['param_max_abs_diff']:.3g})")
    verdict = ("bitwise" if e["bitwise"] else "DIFFERS") + ("" if r["trained"] else " (training changed nothing)")
    return (
        f"| {r['case']} | {r['precision']} | {verdict} | {e['loss_max_abs_diff']:.3g} "
        f"| {e['param_max_abs_diff']:.3g} | {e['params_differing']} | {control} |"
    )


def main(argv=None) -> int:
    args = parse_args(argv)
    import warnings

    warnings.filterwarnings("ignore")
    from transformers.utils import logging

    logging.disable_progress_bar()
    if args.dry_run:
        with tempfile.TemporaryDirectory() as workdir:
            for case in args.cases:
                for precision in args.precisions:
                    stock, ext = configs(args, case, precision, workdir)
                    print(f"{case} / {precision}: stock and extension configs built (beta={stock.beta}, "
                          f"loss_type={stock.loss_type}, advantage={ext.advantage_estimator}, kl={ext.kl_estimator})")  # fmt: skip
        return 0
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit("benchmarks/gpu_parity.py: no CUDA GPU visible; --device cpu runs the same comparison on CPU.")
    from trl_grpo_ext import tiny_model_path

    model_dir = tiny_model_path()
    where = torch.cuda.get_device_name() if args.device == "cuda" else "CPU"
    print(f"{where}, torch {torch.__version__}; {args.steps} steps per run; full_determinism={args.full_determinism}")
    print(TABLE_HEADER, flush=True)
    results = []
    with tempfile.TemporaryDirectory() as workdir:
        for case in args.cases:
            for precision in args.precisions:
                results.append(run_case(args, case, precision, model_dir, workdir))
                print(table_row(results[-1]), flush=True)  # row by row: a time limit keeps what was measured
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    failed = [f"{r['case']}/{r['precision']}" for r in results if not (r["ext"]["bitwise"] and r["trained"])]
    if failed:
        print(f"NOT bitwise or not trained: {', '.join(failed)}")
        return 1
    print("The extension at default settings trains bitwise as stock in every case.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
