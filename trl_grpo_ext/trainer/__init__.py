"""The trainer and its parts: `GRPOExtTrainer` (trainer.py) and `GRPOExtConfig` (config.py); the advantage and KL
estimator registries (advantages.py, kl.py); what runs around a step (prompt_rounds.py, prompt_stream.py,
dynamic_sampling.py, reward_overlap.py, reward_control.py); the TRL versions it hooks (compat.py); the config's
generated documentation (field_docs.py, config_docs.py); and what a training script needs around the trainer: CPU
threads and a clean end under `accelerate launch` (launch.py), a progress bar (progress.py).

Their public names are importable from `trl_grpo_ext` itself.
"""
