"""The suite writes nothing outside temporary folders: the Hugging Face and Hypothesis caches are the
test session's own."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def test_caches_are_in_a_temporary_folder():
    import datasets.config
    import huggingface_hub.constants
    from hypothesis.configuration import storage_directory

    from trl_grpo_ext.models.tiny_model import DEFAULT_CACHE

    temporary = Path(tempfile.gettempdir()).resolve()
    caches = [datasets.config.HF_DATASETS_CACHE, huggingface_hub.constants.HF_HUB_CACHE, os.environ["HF_HOME"]]
    for cache in [*caches, storage_directory("examples", intent_to_write=False).path, DEFAULT_CACHE]:
        assert temporary in Path(cache).resolve().parents, cache


def test_property_tests_are_derandomized_and_keep_no_database():
    """A red run reproduces: the examples come from a fixed seed and no database replays earlier failures first."""
    from hypothesis import settings

    if os.environ.get("HYPOTHESIS_PROFILE", "derandomized") == "derandomized":
        assert settings.default.derandomize is True
    assert settings.default.database is None
