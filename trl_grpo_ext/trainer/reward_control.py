"""Null-reward controls: training rewards that keep the batch's reward distribution but say nothing about which
completion earned them.

A variant's gain over the base model mixes two things: what the reward's information taught (which completions are
right) and what any training does to the model (a shorter format, ending sooner, a new register). Training the same
model with rewards moved to other completions of the batch keeps the second and removes the first; the difference
between a variant and this control is the part of its gain that the reward's information explains (Shao et al. 2025,
"Spurious Rewards: Rethinking Training Signals in RLVR", arXiv 2506.10947, show that uninformative rewards alone can
raise some models' benchmark scores).

- `shuffled`: each training batch's reward rows permuted across the whole batch (all processes): the same multiset of
  rewards, each at a completion drawn without replacement.
- `random`: each reward row drawn with replacement from the batch's rows: with 0/1 rewards, a Bernoulli draw at the
  batch's observed pass rate.

A row holds every reward function's value for one completion, so several reward functions move together.
"""

from __future__ import annotations

import torch

REWARD_CONTROLS = ("shuffled", "random")


def control_rewards(rewards_per_func: torch.Tensor, control: str, generator: torch.Generator) -> torch.Tensor:
    """`rewards_per_func` (N, F), the gathered rewards of one training batch, with its rows moved as `control` says.
    `generator` (a CPU generator) decides where: seed it the same way on every process, so that all agree."""
    rows = rewards_per_func.size(0)
    if control == "shuffled":
        index = torch.randperm(rows, generator=generator)
    elif control == "random":
        index = torch.randint(rows, (rows,), generator=generator)
    else:
        raise ValueError(f"reward_control={control!r} is not valid. Valid choices: {', '.join(REWARD_CONTROLS)}.")
    return rewards_per_func[index.to(rewards_per_func.device)]


def control_generator(seed: int, step: int, call: int) -> torch.Generator:
    """The generator of one batch's control: fixed by the run's seed, the optimizer step and the batch's index within
    that step (dynamic sampling scores several batches per step), so a resumed run draws what an uninterrupted one
    draws."""
    return torch.Generator().manual_seed((seed * 1_000_003 + step) * 1_009 + call)
