"""Canaries for the live verifier audit: completions built from a batch's reference whose verdict is known by
construction, scored beside the real completions and never trained on (see `core/audit.py`).

- wrong: the reference's value changed (an integer or decimal plus one, negated, times ten; any other answer
  `(R) + 1`), written in the forms real completions use (a boxed chain of thought, Minerva's sentence, GSM8K's
  `####`, a bold label, an `<answer>` tag), and the reference itself said with a qualifier ("at least") or offered
  beside a wrong value (a hedge). Each is a different answer for any value of the reference.
- right: the reference, unchanged, in two of those forms.

A wrong canary paid is a false positive of the verifier on this run's own references; a right one refused, a false
negative. Multiple-choice references get the other letters as wrong answers.
"""

from __future__ import annotations

import random
import re
from decimal import Decimal

from .batch import read_reference

FORMS = (
    "First I work through the problem step by step, and the result is $\\boxed{{{answer}}}$.",
    "Final Answer: The final answer is ${answer}$. I hope it is correct.",
    "Adding the parts gives the total.\n#### {answer}",
    "**Answer:** ${answer}$",
    "<think>Working it out.</think>\n<answer>{answer}</answer>",
)
WRONG_SENTENCES = (
    "So the answer is at least $\\boxed{{{reference}}}$.",
    "It is either $\\boxed{{{reference}}}$ or $\\boxed{{{wrong}}}$.",
)
NUMBER = re.compile(r"-?\d+(\.\d+)?")


def wrong_values(answer: str) -> list[str]:
    """Values that differ from `answer` whatever it is."""
    if NUMBER.fullmatch(answer):
        value = Decimal(answer)  # exact at any length, where a float would make 10**17 + 1 equal to 10**17
        if value == 0:  # ten times, or the negation of, zero is zero
            return [str(value + 1), str(value - 1)]
        return [str(value + 1), str(value * 10), str(-value)]
    return [f"({answer}) + 1"]


def canaries(reference: str, rng: random.Random, right: int = 2, wrong: int = 3) -> tuple[list[str], list[str]]:
    """(wrong completions, right completions) for `reference`; none when the verifier reads no answer in it."""
    read = read_reference(reference)
    if read.answer is None:
        return [], []
    if read.letter is not None:
        others = [letter for letter in read.letters or "" if letter != read.letter]
        return [f"The answer is ({letter})." for letter in rng.sample(others, min(wrong, len(others)))], [
            f"The answer is ({read.letter})."
        ]
    answer = read.answer
    values = wrong_values(answer)
    wrong_texts = [rng.choice(FORMS).format(answer=value) for value in values]
    wrong_texts += [sentence.format(reference=answer, wrong=values[0]) for sentence in WRONG_SENTENCES]
    rng.shuffle(wrong_texts)
    right_texts = [form.format(answer=answer) for form in rng.sample(FORMS, min(right, len(FORMS)))]
    return wrong_texts[:wrong], right_texts
