"""Memory estimate of RL fine-tuning setups (PPO and GRPO variants) from a model's config alone.

`model_dims` reads the shape of a model and lists its parameter tensors; `estimate` turns a shape and a
`TrainingSetup` into bytes per GPU for each component. Both are pure: no torch, no weights.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
