"""Datasets and tasks: the built-in arithmetic and code datasets, Hub and local datasets as prompts (datasets.py),
arithmetic in words for a pretrained chat model (chat_arithmetic.py), and `Task`, what a comparison trains on and an
evaluation scores (task.py).

Their public names are importable from `trl_grpo_ext` itself.
"""
