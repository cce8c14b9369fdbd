"""`trl-grpo-ext compare`: stock `GRPOTrainer` against `GRPOExtTrainer` variants on the same model, data and seeds.

- `plan.py`: the task (built-in, or a `--config` YAML file), variants, the list of runs, and their validation;
- `run.py` and `worker.py`: running: each run in a fresh process (so its peak memory and random state are its own),
  resumable, under one progress bar; the worker writes every logged step to `<output_dir>/<variant>-seed<s>.jsonl`;
- `stats.py`, `report.py`, `plots.py`: reporting, from the files alone (`replot`): `results.md`, `results.json`,
  the PNG curves.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
