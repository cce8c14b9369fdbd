"""Start a support script under `accelerate launch` with two CPU processes (gloo), as the slow tests do."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SUPPORT = Path(__file__).parent


def launch_two_processes(script: str, *args: str, port: int = 29517) -> None:
    # --cpu would silently start one process; --multi_gpu with no GPU starts two on gloo.
    command = [
        sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2",
        "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no", "--main_process_port", str(port),
        str(SUPPORT / script), *args,
    ]  # fmt: skip
    env = {
        **os.environ,
        "PYTHONPATH": f"{SUPPORT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
        "OMP_NUM_THREADS": "1",
    }
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-4000:]
