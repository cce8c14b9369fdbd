"""Rewards with a known share of all-equal groups, for the dynamic sampling and retirement tests."""

from __future__ import annotations

GROUP_SIZE = 4


def first_operand(prompt: str) -> int:
    return int(prompt.split()[2])  # "What is a + b?"


def half_tied_reward(prompts, completions, **kwargs):
    """Prompts with an even first operand: every completion 0.5 (a tied group, advantage 0). Odd: 0, 1, 2, 3 in each
    group's order, so the group always has a spread, whatever the completions."""
    return [0.5 if first_operand(p) % 2 == 0 else float(i % GROUP_SIZE) for i, p in enumerate(prompts)]


def solved_when_even_reward(prompts, completions, **kwargs):
    """1.0 for every completion of a prompt with an even first operand (solved); 0, 1 alternating otherwise."""
    return [1.0 if first_operand(p) % 2 == 0 else float(i % 2) for i, p in enumerate(prompts)]


def always_solved_reward(prompts, completions, **kwargs):
    return [1.0] * len(completions)
