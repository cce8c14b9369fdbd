"""Shared fixtures: the tiny local model and a small prompt dataset. No network, fixed seeds."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory) -> str:
    from trl_grpo_ext.tiny_model import tiny_model_path

    return tiny_model_path(tmp_path_factory.mktemp("models") / "tiny")
