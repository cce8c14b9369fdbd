"""Shared fixtures: the tiny local model and a small prompt dataset. No network, fixed seeds. In CI no test skips
(tests/support/ci_skips.py)."""

from __future__ import annotations

import os
import shutil
import tempfile

import hypothesis.configuration
import pytest
from ci_skips import (  # noqa: F401  (the hooks of a CI run in which nothing skips)
    pytest_make_collect_report,
    pytest_runtest_makereport,
    pytest_sessionfinish,
    pytest_terminal_summary,
)
from hypothesis import settings

# Caches go to a folder of this test session, set before any Hugging Face library is imported (they read these at
# import) and inherited by the processes the tests launch: the suite writes nothing to the user's caches.
CACHE_ROOT = tempfile.mkdtemp(prefix="trl-grpo-ext-test-cache-")
for variable, folder in {
    "HF_HOME": "huggingface",
    "HF_HUB_CACHE": "huggingface/hub",
    "HF_DATASETS_CACHE": "huggingface/datasets",
    "XDG_CACHE_HOME": "xdg",
    "MPLCONFIGDIR": "matplotlib",
    "TRL_GRPO_EXT_CACHE": "trl_grpo_ext",
}.items():
    os.environ[variable] = os.path.join(CACHE_ROOT, folder)

# Hypothesis keeps its example database in the current folder unless told otherwise.
hypothesis.configuration.set_hypothesis_home_dir(os.path.join(CACHE_ROOT, "hypothesis"))

# Property tests draw the same examples in every run (each test's examples come from a seed derived from the test
# itself) and keep no example database, so that a red run, in CI or here, is reproduced by running it again. Loaded
# before any test module builds its own `settings(...)`, which inherit these. HYPOTHESIS_PROFILE=explore draws new
# random examples (still without a database) to look for failures locally.
HYPOTHESIS_PROFILES = {
    "derandomized": settings(derandomize=True, database=None, print_blob=True),
    "explore": settings(derandomize=False, database=None, print_blob=True),
}
for name, profile in HYPOTHESIS_PROFILES.items():
    settings.register_profile(name, profile)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "derandomized"))

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def pytest_unconfigure(config):
    shutil.rmtree(CACHE_ROOT, ignore_errors=True)


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory) -> str:
    from trl_grpo_ext.models.tiny_model import tiny_model_path

    return tiny_model_path(tmp_path_factory.mktemp("models") / "tiny")
