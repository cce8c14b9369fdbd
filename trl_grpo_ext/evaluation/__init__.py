"""Held-out evaluation with the verifiers: unbiased pass@k, maj@k over verifier-equivalent answers, greedy accuracy,
means over prompts with seeded bootstrap intervals.

- `estimators.py`: pass@k and maj@k, pure functions of counts and votes;
- `equivalence.py`: answer classes, grouping answers the verifier judges equivalent;
- `intervals.py`: the percentile bootstrap over prompts;
- `core.py`: scoring one prompt's samples, evaluating a list of rows with a sampler, the summary;
- `sampling.py`: the transformers `generate` sampler, with the trainer's generation settings;
- `runner.py`: rows split across processes and gathered once, files, table, the pass-rate prefilter;
- `votes.py`: what each sample votes with in maj@k (extracted answers, or normalised completions), or why it cannot;
- `loading.py`: the model to sample from, a LoRA output folder merged into its base included;
- `base_comparison.py`: pass@k of a trained model and its base for every k, and the k from which the base is ahead.

`trl-grpo-ext evaluate`, `GRPOExtConfig(eval_pass_at_k=...)` and `compare` use these.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
