"""Models for tests and examples: a tiny character-level chat model built locally (tiny_model.py) and SmolLM2
converted from a GGUF checkpoint to a plain model folder (gguf_checkpoint.py).

Their public names are importable from `trl_grpo_ext` itself.
"""
