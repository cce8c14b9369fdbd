"""Dynamic sampling (DAPO, arXiv 2503.14476, "filter groups"): pure functions over the batches of all processes.

A generation round is a dict of tensors gathered from every process (rows in stock's global order, groups of
`group_size` consecutive rows), holding stock's batch fields plus `rewards_per_func` (N, functions) and, with the KL
in the reward, `kl_penalty` (N,). The trainer generates rounds until `informative_groups` has found enough groups,
`pick_groups` chooses which ones form the batch, and `assemble_batch` builds it. Every process runs these functions
on the same gathered tensors, so every process builds the same batch and keeps its own slice of it.
"""

from __future__ import annotations

import torch

from .advantages import compute_advantages

# Batch fields and the value that pads them. Prompts are padded on the left, completions on the right, as stock pads.
LEFT_PADDED = ("prompt_ids", "prompt_mask")
PADDING = {
    "prompt_mask": 0,
    "completion_mask": 0,
    "tool_mask": 1,
    "old_per_token_logps": 0.0,
    "ref_per_token_logps": 0.0,
    "sampling_per_token_logps": 0.0,
    "importance_sampling_ratio": 1.0,
}
TOKEN_ID_FIELDS = ("prompt_ids", "completion_ids")  # padded with the tokenizer's pad token
ROW_FIELDS = ("rewards_per_func", "kl_penalty")  # one value (or row) per completion, never padded
RECOMPUTED_FIELDS = ("advantages", "num_items_in_batch")  # computed again for the assembled batch


def combined_rewards(rewards_per_func: torch.Tensor, reward_weights: torch.Tensor) -> torch.Tensor:
    """Weighted sum of the reward functions, NaN where every function returned None: stock's task reward (N,)."""
    rewards = (rewards_per_func * reward_weights.to(rewards_per_func.device).unsqueeze(0)).nansum(dim=1)
    rewards[torch.isnan(rewards_per_func).all(dim=1)] = torch.nan
    return rewards


def trained_token_mask(batch: dict) -> torch.Tensor:
    """(N, T) mask of the completion tokens the policy generated, the ones stock's loss trains on: `completion_mask`,
    times `tool_mask` where tool results or environment feedback were inserted into the completions (those tokens are
    not the policy's actions)."""
    mask = batch["completion_mask"]
    return mask if "tool_mask" not in batch else mask * batch["tool_mask"]


def informative_groups(advantages: torch.Tensor, group_size: int) -> torch.Tensor:
    """(num_groups,) bool: the group has at least one non-zero advantage.

    `advantages` come from `compute_advantages` on the task rewards, which sets a group to exactly 0 when its
    scorable rewards are all equal (compared as float32 values, `max == min`, no tolerance), when fewer than two are
    scorable, and where the estimator itself gives 0 (pass@k with fewer than k failures, maxrl with a zero mean).
    """
    return (advantages.view(-1, group_size) != 0).any(dim=1)


def pick_groups(informative: list[torch.Tensor], target: int) -> list[tuple[int, int]]:
    """The first `target` informative groups, as (round, group) in generation order: the batch DAPO trains on.

    Informative groups beyond `target` are discarded, as DAPO does: by the next step they would be off-policy."""
    picks = [(r, int(g)) for r, mask in enumerate(informative) for g in mask.nonzero().flatten().tolist()]
    return picks[:target]


def fill_groups(informative: list[torch.Tensor], picks: list[tuple[int, int]], target: int) -> list[tuple[int, int]]:
    """Groups of the last round that were not picked, enough to bring the batch to `target` groups when the cap on
    rounds was hit. They are trained on with their completions masked out, so they add nothing to the loss."""
    last = len(informative) - 1
    picked = {g for r, g in picks if r == last}
    spare = [(last, g) for g in range(informative[last].numel()) if g not in picked]
    return spare[: target - len(picks)]


def _pad_width(tensor: torch.Tensor, width: int, value, left: bool) -> torch.Tensor:
    missing = width - tensor.size(1)
    if missing == 0:
        return tensor
    padding = torch.full((tensor.size(0), missing, *tensor.shape[2:]), value, dtype=tensor.dtype, device=tensor.device)
    return torch.cat([padding, tensor] if left else [tensor, padding], dim=1)


def padding_value(field: str, pad_token_id: int):
    if field in TOKEN_ID_FIELDS:
        return pad_token_id
    if field in PADDING:
        return PADDING[field]
    raise ValueError(
        f"dynamic_sampling and retire_solved_after cannot combine the batch field {field!r} across generation rounds "
        "(multimodal and other model-specific inputs are not supported): turn them off for this model."
    )


def assemble_batch(
    rounds: list[dict[str, torch.Tensor]],
    picks: list[tuple[int, int]],
    fillers: list[tuple[int, int]],
    group_size: int,
    pad_token_id: int,
) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
    """The batch made of the picked groups then the filler groups, each field padded to the widest round.

    Returns the batch (every field of the rounds) and a (rows,) bool marking filler rows, whose completion and tool
    masks are zeroed and whose rewards are NaN (unscorable: advantage 0)."""
    groups = picks + fillers
    batch = {}
    for field in rounds[0]:
        parts = [rounds[r][field][g * group_size : (g + 1) * group_size] for r, g in groups]
        if field in ROW_FIELDS or parts[0].dim() < 2:
            batch[field] = torch.cat(parts)
            continue
        width = max(part.size(1) for part in parts)
        value = padding_value(field, pad_token_id)
        batch[field] = torch.cat([_pad_width(part, width, value, field in LEFT_PADDED) for part in parts])
    is_filler = torch.zeros(len(groups) * group_size, dtype=torch.bool, device=batch["completion_mask"].device)
    is_filler[len(picks) * group_size :] = True
    for field in ("completion_mask", "tool_mask"):
        if field in batch:
            batch[field] = batch[field].masked_fill(is_filler.unsqueeze(1), 0)
    batch["rewards_per_func"] = batch["rewards_per_func"].masked_fill(is_filler.unsqueeze(1), torch.nan)
    return batch, is_filler


def round_informative_groups(
    rewards: torch.Tensor, group_size: int, estimator: str, lengths: torch.Tensor | None, **options
) -> torch.Tensor:
    """`informative_groups` of one round, from its task rewards (N,) before any KL penalty.

    The KL penalty is left out on purpose: it is continuous, so with it almost no group would tie and the filter
    would keep groups whose only spread is KL noise; a tie of the task rewards is what means "nothing to learn"."""
    advantages = compute_advantages(rewards, group_size=group_size, estimator=estimator, lengths=lengths, **options)
    return informative_groups(advantages, group_size)
