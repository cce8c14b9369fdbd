"""Wrong answers generated from correct ones: every non-equivalent mutant of a reference must score 0.

The grader's rules close classes of false positives rather than cases; this generator keeps them closed.
From each reference (the public pairs' golds and the probes' references) it builds completions in these classes,
each known by construction to be a different answer:

- `value`: last digit changed, sign flipped, a factor of 10, a factorial added or dropped, an exponent off by one,
  `+ 1` on a formula;
- `qualifier`: the reference followed by "or more", "at least", "or less", "approximately" (as text or bare), inside
  its box or around it ("at least $\\boxed{7}$", "\\boxed{12} or more");
- `unit`: the reference with a unit against the same value with another unit, inside the box or after it;
- `hedge`: the reference offered with a wrong alternative (two boxes joined by "or", "either ... or", "could be ...
  or ...", "it could also be ..." after the box, several choice letters);
- `approximation`: an exact reference rounded to 2 - 3 significant digits, or an integer reference in scientific
  notation with 4 significant digits;
- `perturbation`: a formula in x plus a narrow window (`\\max(0, 1 - 1000|x - c|)`), a far-out term
  (`\\max(0, x - 5000)`), a term only at integers (`1 - \\lceil x \\rceil + \\lfloor x \\rfloor`), a bump
  (`e^{-1000(x - c)^2}`) or a constant below the agreement tolerance (`10^{-35}`);
- `echo`: an integer reference n written as the operation a question asks for, left unevaluated
  (`a + b`, `a \\times b`, `2^{k}`, `\\dbinom{m}{k}`, `\\sqrt{n^2}`): 0 with reason `not_simplified`;
- `cut_off`: a chain of thought that states a wrong value, then a sentence cut off as it starts to state
  the reference ("So the answer is X.\\n\\nActually the total is", an unclosed `\\boxed{` of the reference);
- `hedge_across_sentences`: the reference, then in a later clause or sentence "though it could also be
  X", "X might be right too", "On reflection it might be X".

Ratios, clock times and the sentence around an answer (`math_mutants_sentences.py`, whole completions, never placed
in other templates): `ratio` (permutations, one term rescaled, a negative factor, a term added or dropped, the
running quotient), `clock` (another time, the other half of the day, the time halved, the half left open),
`box_context` (the reference boxed in a question, a denial, a hypothesis, an aside, before a correction in prose, or
with a judgement inside the box), `anchor_clause` (a wrong value stated before a clause naming the reference, a
compound quantity, the reference affirmed and denied), `truncated` (the reference as an intermediate result of a
completion cut off while it goes on working), `json` (a wrong "answer" field beside a "reasoning" that states the
reference) and `run_on` (a wrong answer, then a new turn or an invented next problem stating the reference). The
ratio and clock references (`RATIO_REFERENCES`, `TIME_REFERENCES`) join the probes' references.

Real policies write whole completions, not bare boxes. So every mutant with one wrong final answer X is
also placed in completion templates (`TEMPLATES`): a chain of thought ending in `\\boxed{X}`, Minerva ("Final
Answer: The final answer is $X$. I hope it is correct."), GSM8K ("... #### X"), bold ("**Answer:** X", "The answer
is **X**."), `<answer>X</answer>` after a `<think>` block, Unicode (`−`, `√`, `π`), intermediate boxes (the reference
among them) before a labelled final box X, restatements after the box ("$\\boxed{X}$ (or $Y$)" with another wrong Y,
with the reference, and "$\\boxed{R}$ (or $X$)"), a check after the box that recomputes X, and a retraction
("$\\boxed{R}$. Wait, that's wrong: the correct value is $X$."). A mutant that is a sentence (a hedge, a qualifier
around the box) goes into the chain-of-thought and tagged templates. Every placement must score 0 (not None).

Controls: the reference itself in every template (bare, boxed chain of thought, Minerva, GSM8K, bold, tagged,
Unicode, a labelled final box after intermediate boxes of other values, a restatement with an equal value, a check,
a correction that ends on the reference). These must pay; the ones that do not are listed (misses).

    python benchmarks/math_mutants.py            # every mutant in every template, and the controls
    python benchmarks/math_mutants.py -v         # also list every mutant paid and every control not paid
    python benchmarks/math_mutants.py --sample 2 # two templates per mutant, seeded (the test's slice)

`tests/verifiers/math/test_mutants.py` runs the mutants of the probes' references (bare, and a seeded sample of
templates) and their controls in the default suite.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import sys
import time
import zlib
from collections import Counter
from pathlib import Path
from typing import NamedTuple

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
import math_mutants_sentences as sentences  # noqa: E402  (a benchmark module beside this one)

# Ratios, clock times and the sentence around an answer (`math_mutants_sentences.py`).
SENTENCE_CLASSES = ("ratio", "clock", "box_context", "anchor_clause", "truncated", "json", "run_on")
CLASSES = (
    "value",
    "qualifier",
    "unit",
    "hedge",
    "approximation",
    "perturbation",
    "echo",
    "cut_off",
    "hedge_across_sentences",
    *SENTENCE_CLASSES,
)
# Classes whose mutants are whole completions already: each form is its own template, never placed in others.
WHOLE_CLASSES = ("cut_off", "hedge_across_sentences", *SENTENCE_CLASSES)
QUALIFIERS = (r"\text{ or more}", r"\text{ at least}", " or less", r"\text{ approximately}")
OTHER_UNITS = {"cm": "m", "m": "km", "km": "mi", "mi": "km", "ft": "in", "in": "ft", "kg": "g", "g": "kg"}
PERTURBATIONS = (
    r"\max(0, 1 - 1000|x - 2.5|)",
    r"\max(0, x - 5000)",
    r"(1 - \lceil x \rceil + \lfloor x \rfloor)",
    r"e^{-1000(x - 1.5)^2}",
    r"10^{-35}",
)
# Templates a mutant with one wrong final answer X is placed in ("bare" is the mutant as generated).
TEMPLATES = (
    "bare",
    "cot",
    "minerva",
    "gsm8k",
    "bold_label",
    "bold_sentence",
    "tagged",
    "unicode",
    "intermediate",
    "restate_other",
    "restate_ref_after",
    "restate_ref_first",
    "check",
    "retraction",
)
# Templates a mutant that is a sentence (a hedge, a qualifier around its box) is placed in.
SENTENCE_TEMPLATES = ("cot", "tagged")
# Templates where X is the only final answer: an `echo` there must score 0 with reason `not_simplified`.
SOLE_ANSWER_TEMPLATES = (
    "bare",
    "cot",
    "minerva",
    "gsm8k",
    "bold_label",
    "bold_sentence",
    "tagged",
    "unicode",
    "intermediate",
    "check",
)
CONTROL_TEMPLATES = (
    "bare",
    "cot",
    "minerva",
    "gsm8k",
    "bold_label",
    "bold_sentence",
    "tagged",
    "unicode",
    "intermediate",
    "restate_equal",
    "check",
    "correction",
    "correction_box",
)
# Chains of thought before the final answer: no number, no hedge word ("or", "could"), no retraction ("wait",
# "recompute"), no qualifier ("at least", "over"), so the final statement alone decides.
COT_BODIES = (
    "Let me work through this step by step.\n\nFirst, we set up the equation from the given conditions. Then we "
    "simplify both sides and solve.\n\n",
    "We start by writing down what is given. Substituting the values into the formula and simplifying gives the "
    "result.\n\n",
    "Step 1: Identify the quantities in the problem.\nStep 2: Combine them using the relation in the statement.\n"
    "Step 3: Simplify.\n\n",
)
GSM8K_BODY = (
    "There are 12 + 8 = <<12+8=20>>20 items at first.\nSplitting them into 4 groups gives 20 / 4 = <<20/4=5>>5 per "
    "group.\n"
)
LETTERS = "ABCDE"
UNUSABLE = "unusable_reference"


class Mutant(NamedTuple):
    kind: str
    completion: str
    reference: str
    template: str = "bare"
    answer: str | None = None  # the wrong final answer X, to place in templates (None: the completion is a sentence)
    other: str | None = None  # another wrong value Y of the same reference (restatements, intermediate boxes)


class Control(NamedTuple):
    """The reference itself in a completion template: must pay."""

    template: str
    completion: str
    reference: str


def _reference_letter(reference: str) -> str | None:
    try:
        from trl_grpo_ext.verifiers.math.letters import reference_letter
    except ImportError:  # before extraction was split into modules
        from trl_grpo_ext.verifiers.math.extract import reference_letter
    return reference_letter(reference)


def _is_leaf(answer: str) -> bool:
    """A single formula: no list, relation, interval, set, matrix or text, so arithmetic on it stays one value."""
    pattern = r"[,;=<>]|\\le|\\ge|\\ne|\\approx|\\cup|\\in\b|\\\{|\\text|matrix|array|\\pm|\\infty"
    return not re.search(pattern, answer)


def _value_mutants(answer: str, number) -> list[str]:
    from trl_grpo_ext.verifiers.math.numbers import is_decimal_text

    out = []
    if number is not None:  # a plain number: change its value
        digits = [m for m in re.finditer(r"\d", answer)]
        if digits:
            last = digits[-1]
            changed = str((int(last.group(0)) + 1) % 10)
            out.append(answer[: last.start()] + changed + answer[last.end() :])
        if number != 0:
            out.append(answer[1:] if answer.startswith("-") else f"-{answer}")
            out.append(f"10 \\cdot {answer}" if "." not in answer else str(number * 10))
        if number.denominator == 1 and 3 <= number <= 50:
            out.append(f"{answer}!")
    elif _is_leaf(answer) and not is_decimal_text(answer):  # a decimal reference accepts its rounding: 6.02e23 + 1
        out.append(f"{answer} + 1")
        factorial = re.fullmatch(r"(\d+|\(.*\))!", answer.replace(" ", ""))
        if factorial:
            out.append(factorial.group(1))
    power = re.search(r"\^\{?(\d+)\}?", answer)
    if power and _is_leaf(answer) and not re.search(r"(?<![\d.])[01]\s*\^", answer):
        out.append(answer[: power.start()] + f"^{{{int(power.group(1)) + 1}}}" + answer[power.end() :])
    return [m for m in out if m.replace(" ", "") != answer.replace(" ", "")]


def _last_digit_changed(answer: str) -> str | None:
    """The answer with its last digit changed: another value for a list, an interval, a set or a relation (before
    any `\\approx`, whose exact side is the answer: `\\frac{\\sqrt{3}}{3} \\approx 0.578` still says 0.577...)."""
    head = answer.split("\\approx")[0]
    digits = list(re.finditer(r"\d", head))
    if not digits:
        return None
    last = digits[-1]
    return answer[: last.start()] + str((int(last.group(0)) + 1) % 10) + answer[last.end() :]


def wrong_values(answer: str, number) -> list[str]:
    """Wrong values of a normalised reference `answer`, first the most plausible (a changed digit)."""
    from trl_grpo_ext.verifiers.math.numbers import is_decimal_text

    values = _value_mutants(answer, number)
    if not values and _is_leaf(answer):
        values = [f"2 \\cdot {answer}" if number is None and is_decimal_text(answer) else f"{answer} + 1"]
    if not values:
        changed = _last_digit_changed(answer)
        values = [changed] if changed else []
    return values


def _other(values: list[str], answer: str) -> str | None:
    """A wrong value of the reference other than the wrong answer `answer`."""
    key = answer.replace(" ", "")
    return next((v for v in values if v.replace(" ", "") != key), None)


def mutants(reference: str) -> list[Mutant]:
    """Non-equivalent completions built from `reference` (a bare answer), by class, as generated (template "bare")."""
    from trl_grpo_ext.verifiers.math.normalize import normalize_answer, plain_number
    from trl_grpo_ext.verifiers.math.numbers import is_decimal_text

    letter = _reference_letter(reference)
    if letter is not None:
        other = "B" if letter != "B" else "C"
        forms = (
            f"The answer is ({letter}) or ({other}).",
            rf"\boxed{{{letter}, {other}}}",
            f"Either {other} or {letter}.",
        )
        found = [Mutant("hedge", form, reference) for form in forms]
        return found + _hedges_across_sentences(letter, other, reference, letter=True)
    if reference in sentences.RATIO_REFERENCES or reference in sentences.TIME_REFERENCES:
        made = sentences.ratio_mutants if reference in sentences.RATIO_REFERENCES else sentences.clock_mutants
        return [Mutant(kind, text, reference, form) for kind, text, form in made(reference)]
    norm = normalize_answer(reference)
    if norm.invalid or not norm.text:
        return []
    answer, number = norm.text, plain_number(norm.text)
    values = wrong_values(answer, number)

    def placed(kind: str, wrong: str, completion: str | None = None, ref: str = reference) -> Mutant:
        return Mutant(kind, completion or rf"\boxed{{{wrong}}}", ref, "bare", wrong, _other(values, wrong))

    found = [placed("value", m) for m in _value_mutants(answer, number)]
    if number is not None or _is_leaf(answer):
        found += [placed("qualifier", f"{answer}{q}") for q in QUALIFIERS]
        found += [
            Mutant("qualifier", rf"There are at least $\boxed{{{answer}}}$.", reference),
            Mutant("qualifier", rf"So it is \boxed{{{answer}}} or more.", reference),
        ]
        wrong = _value_mutants(answer, number)[:1] or [f"{answer} + 1"]
        if wrong[0] == f"{answer} + 1" and number is None and is_decimal_text(answer):
            wrong = [f"2 \\cdot {answer}"]
        found += [
            Mutant("hedge", rf"\boxed{{{answer}}} or \boxed{{{wrong[0]}}}", reference),
            Mutant("hedge", f"The answer is either ${answer}$ or ${wrong[0]}$.", reference),
            Mutant("hedge", f"It could be ${wrong[0]}$ or ${answer}$.", reference),
        ]
        if number is not None:
            found.append(Mutant("hedge", rf"\boxed{{{answer}}}. It could also be {wrong[0]}, though.", reference))
    if number is not None and not norm.percent:
        unit = norm.unit or "cm"
        with_unit = reference if norm.unit else f"{reference}\\text{{ {unit}}}"
        if unit in OTHER_UNITS and number != 0:  # another unit inside the box, and after it (0 m is 0 cm)
            found.append(placed("unit", rf"{answer}\text{{ {OTHER_UNITS[unit]}}}", ref=with_unit))
            found.append(Mutant("unit", rf"The answer is $\boxed{{{answer}}}$ {OTHER_UNITS[unit]}.", with_unit))
        found += [placed("approximation", a) for a in _approximations(answer, number)]
    elif _is_leaf(answer) and re.search(r"(?<![a-zA-Z\\])x(?![a-zA-Z])", answer):
        found += [placed("perturbation", rf"{answer} + {p}") for p in PERTURBATIONS]
    if number is not None and number.denominator == 1 and not is_decimal_text(answer):  # `2^{100}` for 1.27e30 pays
        found += [placed("echo", e) for e in echoes(int(number))]
    if values:
        found += _cut_offs(answer, values[0], reference)
        if number is not None or _is_leaf(answer):
            found += _hedges_across_sentences(answer, values[0], reference)
            found += _sentence_mutants(answer, values[0], reference, number)
    return found


def _sentence_mutants(answer: str, wrong: str, reference: str, number) -> list[Mutant]:
    """The classes of `math_mutants_sentences.py` that take a reference and a wrong value of it."""
    integer = number is not None and number.denominator == 1 and re.fullmatch(r"-?\d+", answer) is not None
    made = [
        *sentences.box_context_mutants(answer, wrong),
        *sentences.anchor_clause_mutants(answer, wrong, integer),
        *sentences.json_mutants(answer, wrong),
        *sentences.run_on_mutants(answer, wrong),
        *(sentences.truncated_mutants(int(number)) if integer else []),
    ]
    return [Mutant(kind, text, reference, form) for kind, text, form in made]


def _approximations(answer: str, number) -> list[str]:
    if number == 0:
        return []
    value = float(number)
    out = []
    if number.denominator != 1:
        for digits in (2, 3):
            rounded = f"{value:.{digits}g}"
            if "e" not in rounded and float(rounded) != value:
                out.append(rounded)
    elif abs(number) >= 10**4:
        rounded = f"{value:.3e}"
        mantissa, exponent = rounded.split("e")
        if float(rounded) != value:
            out.append(rf"{mantissa} \times 10^{{{int(exponent)}}}")
    return out


def echoes(n: int) -> list[str]:
    """The integer n written as an operation left to perform: a sum, a product, a power of 2, a binomial
    coefficient, the square root of its square (the question copied into the answer)."""
    out = []
    if n >= 3:
        out.append(f"{n - n // 3} + {n // 3}")
    elif n <= -3:
        out.append(f"-{-n - -n // 3} - {-n // 3}")
    else:  # 0, 1, 2 and their negatives: `6 - 5` for 1, `3 - 5` for -2
        out.append(f"{n + 5} - 5")
    m = abs(n)
    factor = next((p for p in range(2, min(m, 1000)) if m % p == 0), None) if m > 3 else None
    if factor is not None:
        out.append(f"{'-' if n < 0 else ''}{factor} \\times {m // factor}")
    if n > 2 and n & (n - 1) == 0:
        out.append(f"2^{{{n.bit_length() - 1}}}")
    binomial = _binomial_of(n)
    if binomial:
        out.append(rf"\dbinom{{{binomial[0]}}}{{{binomial[1]}}}")
    if m < 10**40:
        out.append(f"{'-' if n < 0 else ''}\\sqrt{{{m * m}}}")
    return out


def _binomial_of(n: int) -> tuple[int, int] | None:
    """(m, k) with C(m, k) = n and 2 <= k <= m - 2, the smallest k; None if there is none (or n is too large)."""
    if n < 6 or n > 10**12:
        return None
    for k in range(2, 40):
        if math.comb(2 * k, k) > n:
            return None
        low, high = 2 * k, 2 * k
        while math.comb(high, k) < n:
            high *= 2
        while low < high:  # the smallest m >= 2k with C(m, k) >= n
            mid = (low + high) // 2
            low, high = (mid + 1, high) if math.comb(mid, k) < n else (low, mid)
        if math.comb(low, k) == n:
            return low, k
    return None


def _cut_offs(answer: str, wrong: str, reference: str) -> list[Mutant]:
    """A wrong value stated, then a sentence cut off as it starts to state the reference."""
    body = _body(wrong + reference)
    out = [
        Mutant("cut_off", f"{body}So the answer is ${wrong}$.\n\nActually the total is", reference, "cut_sentence"),
        Mutant(
            "cut_off",
            f"{body}So the answer is $\\boxed{{{wrong}}}$.\n\nWait, let me redo the last step. The answer is "
            f"$\\boxed{{{answer}",
            reference,
            "cut_box",
        ),
    ]
    if re.fullmatch(r"\d{2,}", answer):  # the reference's first digits: "Actually the total is 39" for 391
        out.append(
            Mutant(
                "cut_off",
                f"{body}So the answer is {_inline(wrong)}.\n\nActually the total is {answer[: len(answer) // 2]}",
                reference,
                "cut_number",
            )
        )
    return out


def _hedges_across_sentences(answer: str, wrong: str, reference: str, letter: bool = False) -> list[Mutant]:
    """The reference stated, then another value offered in a later clause or sentence."""
    if letter:
        forms = (
            ("though", f"The answer is {answer}, though it could also be {wrong}."),
            ("might_too", f"My answer: {answer}. But {wrong} might be right too."),
            ("reflection", f"$\\boxed{{{answer}}}$\n\nOn reflection it might be {wrong}."),
            ("next_paragraph", f"So the answer is ({answer}).\n\nThough it could also be ({wrong})."),
        )
    else:
        body = _body(answer + wrong)
        forms = (
            ("though", f"The answer is ${answer}$, though it could also be ${wrong}$."),
            ("might_too", f"{body}**Final Answer:** $\\boxed{{{answer}}}$\n\nBut ${wrong}$ might be right too."),
            ("reflection", f"$\\boxed{{{answer}}}$\n\nOn reflection it might be ${wrong}$."),
            ("next_paragraph", f"So the answer is $\\boxed{{{answer}}}$.\n\nThough it could also be ${wrong}$."),
        )
    return [Mutant("hedge_across_sentences", text, reference, name) for name, text in forms]


def _body(key: str) -> str:
    """A chain of thought, chosen by the text (so a run is reproducible without a seed)."""
    return COT_BODIES[zlib.crc32(key.encode()) % len(COT_BODIES)]


def _inline(answer: str) -> str:
    """An answer as prose writes it: plain (`7 or more`, `-12`) when it holds no LaTeX beyond `\\text{}`, else
    `$...$`."""
    text = re.sub(r"\\text\s*\{([^{}]*)\}", r"\1", answer)
    text = re.sub(r"\s+", " ", text).strip()
    return text if re.fullmatch(r"[A-Za-z0-9.,()+\-*/% ]+", text) else f"${answer}$"


def unicode_form(answer: str) -> str | None:
    """The answer with `-` as `−` (U+2212), `\\sqrt` as `√`, `\\pi` as `π`; None when it holds none of them."""
    text = re.sub(r"\\pi(?![a-zA-Z])\s*", "π", answer)
    text = re.sub(r"\\sqrt\s*\{(\d+|[a-zA-Z])\}(?![\w.])", r"√\1", text)
    text = re.sub(r"\\sqrt\s*\{([^{}]+)\}", r"√(\1)", text)
    text = text.replace("-", "\u2212")
    return text if text != answer else None


def _in_template(template: str, x: str, ref: str, other: str | None, numeric: bool) -> str | None:
    """The final answer `x` in a completion `template`, with `ref` the reference and `other` another value (the
    wrong intermediate and restated values); None where the template does not apply."""
    body = _body(template + x + ref)
    if template == "bare":
        return x
    if template == "cot":
        return f"{body}So the answer is $\\boxed{{{x}}}$."
    if template == "minerva":
        return f"{body}Final Answer: The final answer is ${x}$. I hope it is correct."
    if template == "gsm8k":
        return f"{GSM8K_BODY}#### {_inline(x)}" if numeric else None
    if template == "bold_label":
        return f"{body}**Answer:** {_inline(x)}"
    if template == "bold_sentence":
        return f"{body}The answer is **{_inline(x)}**."
    if template == "tagged":
        return f"<think>\n{body}</think>\n<answer>{x}</answer>"
    if template == "unicode":
        text = unicode_form(x)
        if text is None:
            return None
        if re.search(r"[\\{}^_]", text):  # LaTeX left around the Unicode: in its box
            return f"{body}So the answer is $\\boxed{{{text}}}$."
        return f"{body}So the answer is {text}."  # plain text: "So the answer is −42.", "... 2√3."
    if template == "check":
        return f"{body}So the answer is $\\boxed{{{x}}}$.\n\nChecking: recomputing the last step gives ${x}$ again."
    if other is None:
        return None
    if template == "intermediate":  # the reference and another value boxed before the labelled final box
        return (
            f"{body}We find $\\boxed{{{ref}}}$ on the first pass, then $\\boxed{{{other}}}$.\n\n"
            f"**Final Answer:** $\\boxed{{{x}}}$"
        )
    if template == "restate_other":
        return f"{body}So the answer is $\\boxed{{{x}}}$ (or ${other}$)."
    if template == "restate_ref_after":
        return f"{body}So the answer is $\\boxed{{{x}}}$ (or ${ref}$)."
    if template == "restate_ref_first":
        return f"{body}So the answer is $\\boxed{{{ref}}}$ (or ${x}$)."
    if template == "retraction":
        return f"{body}So the answer is $\\boxed{{{ref}}}$. Wait, that's wrong: the correct value is ${x}$."
    raise ValueError(template)


def placements(mutant: Mutant, templates: tuple[str, ...] = TEMPLATES) -> list[Mutant]:
    """The mutant in each of `templates` that applies to it (a sentence only in `SENTENCE_TEMPLATES`)."""
    from trl_grpo_ext.verifiers.math.normalize import normalize_answer, plain_number

    if mutant.kind in WHOLE_CLASSES:
        return [mutant] if "bare" in templates else []
    out = [mutant] if "bare" in templates else []
    if mutant.answer is None:  # a sentence: after a chain of thought, or inside answer tags
        for template in (t for t in templates if t in SENTENCE_TEMPLATES):
            body = _body(template + mutant.completion)
            text = (
                f"{body}{mutant.completion}"
                if template == "cot"
                else f"<think>\n{body}</think>\n<answer>{mutant.completion}</answer>"
            )
            out.append(mutant._replace(template=template, completion=text))
        return out
    norm = normalize_answer(mutant.reference)
    numeric = not norm.invalid and plain_number(norm.text) is not None
    ref = norm.text if not norm.invalid and norm.text else mutant.reference
    for template in templates:
        if template == "bare" or (mutant.kind == "echo" and template in ("restate_ref_first", "restate_ref_after")):
            # "$\\boxed{42}$ (or $28 + 14$)" and "$\\boxed{28 + 14}$ (or $42$)" both state the reference, once in closed
            # form: paid, as "(or $10^3$)" for 1000 (docs/verifiers.md, the closed-form rule)
            continue
        text = _in_template(template, mutant.answer, ref, mutant.other, numeric)
        if text is not None:
            out.append(mutant._replace(template=template, completion=text))
    return out


def placed_mutants(references: list[str], sample: int | None = None, seed: int = 0) -> list[Mutant]:
    """Every mutant of `references` as generated, and in every template that applies (`sample`: in that many
    templates per mutant, drawn with `seed`)."""
    rng = random.Random(seed)
    out = []
    for reference in references:
        for mutant in mutants(reference):
            variants = placements(mutant)
            if sample is not None and len(variants) > 1 + sample:
                variants = [variants[0], *rng.sample(variants[1:], sample)]
            out += variants
    return out


def controls(reference: str) -> list[Control]:
    """The reference itself in every template of `CONTROL_TEMPLATES` that applies to it: must pay."""
    from trl_grpo_ext.verifiers.math.normalize import normalize_answer, plain_number

    ref = reference.strip()
    letter = _reference_letter(reference)
    if letter is not None:
        x, numeric = letter, False
        others = [c for c in LETTERS if c != letter][:2]
    else:
        norm = normalize_answer(reference)
        if norm.invalid or not norm.text:
            return []
        x, number = ref, plain_number(norm.text)
        numeric = number is not None
        others = wrong_values(norm.text, number)
    body = _body("control" + ref)
    out = []
    for template in CONTROL_TEMPLATES:
        if template == "bare":
            text = ref
        elif template in ("cot", "minerva", "gsm8k", "bold_label", "bold_sentence", "tagged", "unicode", "check"):
            text = _in_template(template, x, ref, None, numeric)
        elif not others:
            text = None
        elif template == "intermediate":
            second = others[1] if len(others) > 1 else others[0]
            text = (
                f"{body}We find $\\boxed{{{others[0]}}}$ on the first pass, then $\\boxed{{{second}}}$.\n\n"
                f"**Final Answer:** $\\boxed{{{x}}}$"
            )
        elif template == "restate_equal":
            text = f"{body}So the answer is $\\boxed{{{x}}}$ (or ${x}$)."
        elif template == "correction":
            text = f"{body}So $\\boxed{{{others[0]}}}$. Hmm, wait, that's wrong: the correct value is ${x}$."
        elif template == "correction_box":
            text = (
                f"{body}So the answer is $\\boxed{{{others[0]}}}$.\n\nWait, I made an error in the second step. "
                f"Redoing it: $\\boxed{{{x}}}$"
            )
        else:
            raise ValueError(template)
        if text is not None:
            out.append(Control(template, text, reference))
    return out


def probe_references() -> list[str]:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from math_probes import PROBES
    from math_probes_classes import CLASS_PROBES

    return sorted(
        {p.ref for p in [*PROBES, *CLASS_PROBES]} | {*sentences.RATIO_REFERENCES, *sentences.TIME_REFERENCES}
    )


def public_references() -> list[str]:
    folder = Path(os.environ.get("MATH_EQUIVALENCE_DIR", REPO_ROOT.parent / "shared" / "data" / "math_equivalence"))
    if not folder.is_dir():
        return []
    golds = [
        json.loads(line)["gold"] for path in sorted(folder.glob("*.jsonl")) for line in path.open() if line.strip()
    ]
    from trl_grpo_ext.verifiers.math.extract import extract_reference

    answers = [extract_reference(g).answer for g in golds]
    return sorted({a.strip("$ ") for a in answers if a and "$" not in a.strip("$ ")})


class Report(NamedTuple):
    mutants: dict[tuple[str, str], tuple[int, int]]  # (class, template) -> (mutants, paid)
    controls: dict[str, tuple[int, int]]  # template -> (controls, paid)
    paid: list[tuple[Mutant, str]]  # every mutant paid, with its reason
    escaped: list[tuple[Mutant, str]]  # every mutant scored None, with its reason
    echo_reasons: list[tuple[Mutant, str]]  # echoes alone in their completion not refused as `not_simplified`
    misses: list[tuple[Control, float | None, str]]  # every control not paid: score and reason
    unusable: list[Mutant | Control]  # items whose reference the verifier cannot read (None, the reference's fault)


def score(items: list, controls_: list[Control]) -> Report:
    """Score mutants and controls in one batch."""
    from trl_grpo_ext.verifiers import get_verifier

    everything = [*items, *controls_]
    verifier = get_verifier("math", n_workers=2)
    try:
        results = verifier.verify_batch([m.completion for m in everything], [m.reference for m in everything])
    finally:
        verifier.close()
    counts, paid_counts = Counter(), Counter()
    paid, escaped, echo_reasons, unusable = [], [], [], []
    for mutant, result in zip(items, results):
        if result.score is None and str(result.reason).startswith(UNUSABLE):
            unusable.append(mutant)  # a broken reference (`1 = \\zzz = x = 0`): no verdict on any answer
            continue
        key = (mutant.kind, mutant.template)
        counts[key] += 1
        if result.score == 1.0:
            paid_counts[key] += 1
            paid.append((mutant, result.reason))
        elif result.score is None:
            escaped.append((mutant, result.reason))
        if (
            mutant.kind == "echo"
            and mutant.template in SOLE_ANSWER_TEMPLATES
            and not str(result.reason).startswith("not_simplified")
        ):
            echo_reasons.append((mutant, result.reason))
    control_counts, control_paid, misses = Counter(), Counter(), []
    for control, result in zip(controls_, results[len(items) :]):
        if result.score is None and str(result.reason).startswith(UNUSABLE):
            unusable.append(control)
            continue
        control_counts[control.template] += 1
        if result.score == 1.0:
            control_paid[control.template] += 1
        else:
            misses.append((control, result.score, result.reason))
    table = {key: (counts[key], paid_counts[key]) for key in _ordered(counts)}
    control_table = {t: (control_counts[t], control_paid[t]) for t in CONTROL_TEMPLATES if control_counts[t]}
    return Report(table, control_table, paid, escaped, echo_reasons, misses, unusable)


def _ordered(counts: Counter) -> list[tuple[str, str]]:
    order = {t: i for i, t in enumerate(TEMPLATES)}
    return sorted(counts, key=lambda k: (CLASSES.index(k[0]), order.get(k[1], len(order)), k[1]))


def run(references: list[str], verbose: bool = False, sample: int | None = None, seed: int = 0) -> Report:
    """Mutants (all templates, or `sample` per mutant) and controls of `references`, scored; prints the table."""
    items = placed_mutants(references, sample, seed)
    controls_ = [c for ref in references for c in controls(ref)]
    report = score(items, controls_)
    print_report(report, verbose)
    return report


def print_report(report: Report, verbose: bool = False) -> None:
    print(f"  {'class':<24} {'template':<18} {'mutants':>7} {'paid':>5}")
    by_class: Counter = Counter()
    by_class_paid: Counter = Counter()
    for (kind, template), (n, p) in report.mutants.items():
        by_class[kind] += n
        by_class_paid[kind] += p
        print(f"  {kind:<24} {template:<18} {n:>7} {p:>5}")
    for kind in CLASSES:
        if by_class[kind]:
            print(f"  {kind:<24} {'(all templates)':<18} {by_class[kind]:>7} {by_class_paid[kind]:>5}")
    total, paid = sum(by_class.values()), sum(by_class_paid.values())
    print(f"  {'all classes':<24} {'':<18} {total:>7} {paid:>5}")
    print(f"  {'controls':<24} {'template':<18} {'count':>7} {'paid':>5}")
    for template, (n, p) in report.controls.items():
        print(f"  {'controls':<24} {template:<18} {n:>7} {p:>5}")
    n_controls = sum(n for n, _ in report.controls.values())
    n_paid = sum(p for _, p in report.controls.values())
    print(f"  {'controls':<24} {'(all)':<18} {n_controls:>7} {n_paid:>5}")
    print(
        f"  mutants paid: {len(report.paid)}; scored None: {len(report.escaped)}; echoes alone not refused as "
        f"not_simplified: {len(report.echo_reasons)}; controls not paid: {len(report.misses)}; left out (reference "
        f"unusable): {len(report.unusable)}"
    )
    if verbose:
        for mutant, reason in report.paid:
            print(
                f"    paid ({mutant.kind}/{mutant.template}): {mutant.completion!r} for {mutant.reference!r} ({reason})"
            )
        for mutant, reason in report.escaped:
            print(
                f"    None ({mutant.kind}/{mutant.template}): {mutant.completion!r} for {mutant.reference!r} ({reason})"
            )
        for mutant, reason in report.echo_reasons:
            print(f"    echo ({mutant.template}): {mutant.completion!r} for {mutant.reference!r} ({reason})")
        for control, result_score, reason in report.misses:
            print(
                f"    control not paid ({control.template}): {control.completion!r} for {control.reference!r} "
                f"(score {result_score}, {reason})"
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-v", "--verbose", action="store_true", help="list every mutant paid, control not paid")
    parser.add_argument("--sample", type=int, default=None, help="templates per mutant (seeded); default: all")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    for name, references in (("public pairs' golds", public_references()), ("probes' references", probe_references())):
        if not references:
            print(f"{name}: none found")
            continue
        start = time.perf_counter()
        print(f"{name}: {len(references)} references")
        run(references, args.verbose, args.sample, args.seed)
        print(f"  ({time.perf_counter() - start:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
