"""Import an example script (examples/ is a folder of scripts, not a package) as a module, for tests of its parts."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def import_example(name: str):
    """examples/<name>.py as a module; its own imports (script_setup.py, next to it) resolve from examples/."""
    sys.path.insert(0, str(EXAMPLES))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(EXAMPLES))
