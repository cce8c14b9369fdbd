"""Wrong answers generated from correct ones: every non-equivalent mutant of a reference must score 0.

Issue 19 asked for rules that close classes of false positives rather than cases; this generator keeps them closed.
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
  (`e^{-1000(x - c)^2}`) or a constant below the agreement tolerance (`10^{-35}`).

    python benchmarks/math_mutants.py            # mutants of the public pairs' golds and of the probes
    python benchmarks/math_mutants.py -v         # also list every mutant that was paid

`tests/verifiers/math/test_mutants.py` runs the mutants of the probes' references (a fast slice) in the default
suite.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections import Counter
from pathlib import Path
from typing import NamedTuple

REPO_ROOT = Path(__file__).resolve().parents[1]
CLASSES = ("value", "qualifier", "unit", "hedge", "approximation", "perturbation")
QUALIFIERS = (r"\text{ or more}", r"\text{ at least}", " or less", r"\text{ approximately}")
OTHER_UNITS = {"cm": "m", "m": "km", "km": "mi", "mi": "km", "ft": "in", "in": "ft", "kg": "g", "g": "kg"}
PERTURBATIONS = (
    r"\max(0, 1 - 1000|x - 2.5|)",
    r"\max(0, x - 5000)",
    r"(1 - \lceil x \rceil + \lfloor x \rfloor)",
    r"e^{-1000(x - 1.5)^2}",
    r"10^{-35}",
)


class Mutant(NamedTuple):
    kind: str
    completion: str
    reference: str


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


def mutants(reference: str) -> list[Mutant]:
    """Non-equivalent completions built from `reference` (a bare answer), by class."""
    from trl_grpo_ext.verifiers.math.extract import reference_letter
    from trl_grpo_ext.verifiers.math.normalize import normalize_answer, plain_number
    from trl_grpo_ext.verifiers.math.numbers import is_decimal_text

    letter = reference_letter(reference)
    if letter is not None:
        other = "B" if letter != "B" else "C"
        forms = (
            f"The answer is ({letter}) or ({other}).",
            rf"\boxed{{{letter}, {other}}}",
            f"Either {other} or {letter}.",
        )
        return [Mutant("hedge", form, reference) for form in forms]
    norm = normalize_answer(reference)
    if norm.invalid or not norm.text:
        return []
    answer, number = norm.text, plain_number(norm.text)
    found = [Mutant("value", rf"\boxed{{{m}}}", reference) for m in _value_mutants(answer, number)]
    if number is not None or _is_leaf(answer):
        found += [Mutant("qualifier", rf"\boxed{{{answer}{q}}}", reference) for q in QUALIFIERS]
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
        if unit in OTHER_UNITS:  # another unit inside the box, and after it
            found.append(Mutant("unit", rf"\boxed{{{answer}\text{{ {OTHER_UNITS[unit]}}}}}", with_unit))
            found.append(Mutant("unit", rf"The answer is $\boxed{{{answer}}}$ {OTHER_UNITS[unit]}.", with_unit))
        found += _approximations(answer, number, reference)
    elif _is_leaf(answer) and re.search(r"(?<![a-zA-Z\\])x(?![a-zA-Z])", answer):
        found += [Mutant("perturbation", rf"\boxed{{{answer} + {p}}}", reference) for p in PERTURBATIONS]
    return found


def _approximations(answer: str, number, reference: str) -> list[Mutant]:
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
    return [Mutant("approximation", rf"\boxed{{{r}}}", reference) for r in out]


def probe_references() -> list[str]:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from math_probes import PROBES
    from math_probes_classes import CLASS_PROBES

    return sorted({p.ref for p in [*PROBES, *CLASS_PROBES]})


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


def run(references: list[str], verbose: bool) -> dict[str, tuple[int, int]]:
    """(mutants, paid) per class; prints every paid mutant with -v."""
    from trl_grpo_ext.verifiers import get_verifier

    items = [m for ref in references for m in mutants(ref)]
    verifier = get_verifier("math")
    try:
        results = verifier.verify_batch([m.completion for m in items], [m.reference for m in items])
    finally:
        verifier.close()
    counts, paid = Counter(m.kind for m in items), Counter()
    for mutant, result in zip(items, results):
        if result.score == 1.0:
            paid[mutant.kind] += 1
            if verbose:
                print(f"  paid ({mutant.kind}): {mutant.completion!r} for {mutant.reference!r}")
    return {kind: (counts[kind], paid[kind]) for kind in CLASSES}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-v", "--verbose", action="store_true", help="list every mutant that was paid")
    args = parser.parse_args()
    for name, references in (("public pairs' golds", public_references()), ("probes' references", probe_references())):
        table = run(references, args.verbose)
        total, paid = sum(n for n, _ in table.values()), sum(p for _, p in table.values())
        print(f"{name}: {len(references)} references, {total} wrong mutants, {paid} paid")
        for kind, (n, p) in table.items():
            print(f"  {kind:<14} {n:>5} mutants {p:>4} paid")
    return 0


if __name__ == "__main__":
    sys.exit(main())
