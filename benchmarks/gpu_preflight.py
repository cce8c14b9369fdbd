"""First step of benchmarks/gpu_suite.sh: the versions the figures were measured with, and whether torch sees a GPU.

python benchmarks/gpu_preflight.py            # exit status 1 when no CUDA GPU is visible
python benchmarks/gpu_preflight.py --dry-run  # versions only, on any machine
"""

from __future__ import annotations

import argparse
import importlib.util
import sys


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dry-run", action="store_true", help="Print the versions; do not require a GPU.")
    args = parser.parse_args(argv)
    import accelerate
    import torch
    import transformers
    import trl

    deepspeed = importlib.util.find_spec("deepspeed") is not None
    print(
        f"python {sys.version.split()[0]}, torch {torch.__version__} (CUDA {torch.version.cuda}), transformers "
        f"{transformers.__version__}, trl {trl.__version__}, accelerate {accelerate.__version__}, "
        f"deepspeed {'installed' if deepspeed else 'not installed'}"
    )
    if not torch.cuda.is_available():
        if args.dry_run:
            return 0
        print("No CUDA GPU visible to torch (torch.cuda.is_available() is False): the GPU steps cannot run.")
        return 1
    name = torch.cuda.get_device_name()
    print(f"{torch.cuda.device_count()} GPU(s): {name}, bf16 supported: {torch.cuda.is_bf16_supported()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
