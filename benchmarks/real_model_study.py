"""Which variant helps on a real model: SmolLM2-135M-Instruct on the chat arithmetic task, every arm stopped at the same
number of completions generated, evaluated on held-out problems along the way, against stock TRL and a null-reward
control.

    python benchmarks/real_model_study.py --level 1          # stock, dr_grpo, rloo, dynamic_sampling, a KL arm, control
    python benchmarks/real_model_study.py --level 2 --arms stock rloo   # level 2: stock, the control, the best arm
    python benchmarks/real_model_study.py --level 1 --print  # the compare command only

The study is `trl-grpo-ext compare` with a fixed plan, so it runs in resumable units (one arm and seed each): run the
same command again, in this session or a later one, and only the unfinished units train. Its output folder is
`benchmarks/results/real_model_level<L>/`; what is committed there (the per-step logs, the evaluation files, the
report) is what the report is rebuilt from (`trl-grpo-ext compare --replot DIR`). The base model, the task's dataset
folder and the trainers' folders are made again where missing.

Settings, those of the real-model example's task file (examples/grpo_real_model.py --write_task): full fine-tuning,
learning rate 2e-5 constant, beta 0, 4 prompts x 8 completions of at most 16 tokens per step, temperature 1.0; the
file leaves `bf16` to stock's default, which with `use_cpu` is bfloat16 autocast on the CPU (the example itself trains
in float32), the same for every arm; 1,280 completions per run (the example's 40 steps), held-out pass@1 every 640
completions on 52 held-out problems x 8 samples.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ARMS = {
    "stock": None,  # always run: compare's baseline
    "dr_grpo": "advantage_estimator=dr_grpo",
    "rloo": "advantage_estimator=rloo",
    "dynamic_sampling": "dynamic_sampling=true",
    "low_var_kl": "beta=0.04,kl_estimator=low_var_kl",
}
LEVEL_SETTINGS = {
    1: dict(max_operand=12, held_out_limit=None),  # 52 held-out problems
    2: dict(max_operand=9, held_out_limit=52),  # a seeded 52 of its held-out problems
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--level", type=int, choices=(1, 2), default=1)
    parser.add_argument("--arms", nargs="+", choices=list(ARMS), default=None, help="Default: every arm at level 1.")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--budget", type=int, default=1280, help="Completions per run.")
    parser.add_argument("--eval_every", type=int, default=640, help="Completions between held-out evaluations.")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--print", action="store_true", help="Print the compare command and stop.")
    args = parser.parse_args()

    arms = args.arms or list(ARMS)
    output_dir = REPO / "benchmarks" / "results" / f"real_model_level{args.level}"
    task_dir = REPO / "outputs" / f"real_task_level{args.level}"
    level = LEVEL_SETTINGS[args.level]
    if not (task_dir / "task.yaml").exists():
        write = [sys.executable, str(REPO / "examples" / "grpo_real_model.py"), "--write_task", str(task_dir),
                 "--level", str(args.level), "--max_operand", str(level["max_operand"])]  # fmt: skip
        if level["held_out_limit"]:
            write += ["--held_out_limit", str(level["held_out_limit"])]
        subprocess.run(write, check=True, cwd=REPO)
    command = [
        sys.executable, "-m", "trl_grpo_ext.cli", "compare", "--config", str(task_dir / "task.yaml"),
        "--seeds", str(args.seeds), "--prompts_per_step", "4", "--budget_completions", str(args.budget),
        "--eval_every_completions", str(args.eval_every), "--control", "shuffled", "--threads", str(args.threads),
        "--output_dir", str(output_dir),
    ]  # fmt: skip
    for arm in arms:
        if ARMS[arm]:
            command += ["--variant", f"{arm}:{ARMS[arm]}"]
    print(" ".join(command), flush=True)
    if args.print:
        return 0
    return subprocess.run(command, cwd=REPO).returncode


if __name__ == "__main__":
    sys.exit(main())
