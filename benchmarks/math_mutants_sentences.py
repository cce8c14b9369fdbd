"""Wrong answers about shapes and sentences, for `math_mutants.py`: ratios, clock times, and what the words around an
answer say about it. Each function returns (class, completion, form) triples that are different answers by
construction; `math_mutants.py` scores them with the others.

- `ratio`: a ratio reference (`RATIO_REFERENCES`) with its terms permuted, one term rescaled, a negative common factor,
  a term dropped or added, or the running quotient written as a fraction or a decimal;
- `clock`: a clock time (`TIME_REFERENCES`) at another time, in the other half of the day, halved (the quotient of
  `2:15` is that of `4:30`), or without the half of the day the reference fixes;
- `box_context`: the reference boxed in a question, a denial, a hypothesis, an aside, followed by an explicit
  correction in prose, or boxed with a judgement (`\\boxed{R \\text{ is wrong}}`);
- `anchor_clause`: an answer cue that states a wrong value before a clause naming the reference ("The answer is W,
  which is more than R."), a compound quantity ("R hours and 20 minutes"), the reference affirmed and denied;
- `truncated`: the reference as an intermediate result of a completion cut off while it goes on working;
- `json`: a JSON answer whose "answer" field is wrong and whose "reasoning" states the reference;
- `run_on`: a wrong answer, then a new turn or an invented next problem that states the reference.
"""

from __future__ import annotations

import itertools
import json
from fractions import Fraction

# Ratio and clock-time references, for the classes that need them (the public pairs and probes have none).
RATIO_REFERENCES = ("2:3:4", "5:2", "3:1", "1:2:3", "7:4", "4:9", "1:1:2", "3:5:7:11")
TIME_REFERENCES = (r"\text{4:30 PM}", "11:45 AM", "9:05 a.m.", "16:20", r"\text{7:15 AM}", "12:30 PM")


def ratio_mutants(reference: str) -> list[tuple[str, str, str]]:
    """Different ratios and quotients for a ratio of positive integers `a:b:...`."""
    terms = [int(t) for t in reference.split(":")]
    found = []
    for order in sorted(set(itertools.permutations(terms)))[:6]:
        if list(order) != terms:
            found.append(("permutation", ":".join(map(str, order))))
    rescaled = [terms[0] * 2, *terms[1:]]
    found.append(("one_term_rescaled", ":".join(map(str, rescaled))))
    found.append(("negative_factor", ":".join(f"-{t}" for t in terms)))
    found.append(("term_added", f"{reference}:1"))
    if len(terms) > 2:
        found.append(("term_dropped", ":".join(map(str, terms[:-1]))))
    quotient = Fraction(terms[0])
    for term in terms[1:]:
        quotient /= term
    found.append(("quotient_fraction", rf"\frac{{{quotient.numerator}}}{{{quotient.denominator}}}"))
    found.append(("quotient_decimal", f"{float(quotient):.6g}" if quotient.denominator in (1, 2, 4, 5, 8, 10) else ""))
    return [("ratio", rf"So the ratio is $\boxed{{{text}}}$.", form) for form, text in found if text]


def clock_mutants(reference: str) -> list[tuple[str, str, str]]:
    """Other times for the clock time `reference` (`h:mm` with AM/PM, or a 24-hour time)."""
    import re

    match = re.search(r"(\d{1,2}):(\d{2})\s*(?:([ap])\.?\s*m\.?)?", reference, re.IGNORECASE)
    hour, minute, half = int(match.group(1)), int(match.group(2)), (match.group(3) or "").lower()
    found = []
    if half:
        other_half = "AM" if half == "p" else "PM"
        found.append(("other_half", f"{hour}:{minute:02d} {other_half}"))
        found.append(("no_half", f"{hour}:{minute:02d}"))
        suffix = " " + ("PM" if half == "p" else "AM")
    else:
        found.append(("twelve_hours_off", f"{(hour + 12) % 24:02d}:{minute:02d}"))
        suffix = ""
    found.append(("minutes_off", f"{hour}:{(minute + 15) % 60:02d}{suffix}"))
    found.append(("hour_off", f"{hour % 12 + 1}:{minute:02d}{suffix}"))
    if hour % 2 == 0 and minute % 2 == 0:  # the same quotient: 2:15 for 4:30
        found.append(("halved", f"{hour // 2}:{minute // 2:02d}{suffix}"))
    if minute:
        found.append(("hours_only", f"{hour}{suffix}"))
    return [("clock", rf"The meeting starts at $\boxed{{\text{{{text}}}}}$.", form) for form, text in found]


def box_context_mutants(answer: str, wrong: str) -> list[tuple[str, str, str]]:
    """The reference `answer` boxed where its sentence does not commit to it (`wrong`: another value)."""
    forms = (
        ("question", rf"Could the answer be $\boxed{{{answer}}}$? We need more information."),
        ("denial", rf"The total cannot be $\boxed{{{answer}}}$."),
        ("not_box", rf"The answer is not $\boxed{{{answer}}}$."),
        ("hypothesis", rf"Suppose the answer were $\boxed{{{answer}}}$; then we get a contradiction."),
        ("if_clause", rf"If $x = \boxed{{{answer}}}$, the equation fails."),
        ("aside", rf"The answer is ${wrong}$ (for comparison, the old method gives $\boxed{{{answer}}}$)."),
        ("footnote", f"The answer is ${wrong}$.\n\n[^1]: $\\boxed{{{answer}}}$ was the first guess."),
        ("correction", rf"The sum gives $\boxed{{{answer}}}$, but the correct count is ${wrong}$."),
        ("refuted", rf"We get $x = \boxed{{{answer}}}$, which is impossible since $x < 0$."),
        ("judged", rf"$\boxed{{{answer} \text{{ is wrong}}}}$"),
        ("judged_not", rf"$\boxed{{\text{{not }} {answer}}}$"),
    )
    return [("box_context", text, form) for form, text in forms]


def anchor_clause_mutants(answer: str, wrong: str, integer: bool) -> list[tuple[str, str, str]]:
    """A cue that states `wrong` before a clause naming the reference `answer`, or that never states it alone."""
    forms = [
        ("which_more", f"The answer is ${wrong}$, which is more than ${answer}$."),
        ("because", f"The answer is ${wrong}$ because ${answer}$ is too small."),
        ("parenthesis", f"The answer is ${wrong}$ (compare ${answer}$)."),
        ("denied_self", f"The answer is ${answer}$ (not ${answer}$)."),
        ("restated_other", f"The answer is ${answer}$, which is ${wrong}$."),
    ]
    if integer:
        forms.append(("compound", f"The answer is {answer} hours and 20 minutes."))
        forms.append(("compound_units", f"The answer is {answer} apples and 3 pears."))
    return [("anchor_clause", text, form) for form, text in forms]


def truncated_mutants(n: int) -> list[tuple[str, str, str]]:
    """The integer reference `n` as an intermediate result of a completion cut off while it goes on working."""
    a, b = (n - 3, 3) if n > 3 else (n + 4, -4)
    step = f"{a} + {b}" if b > 0 else f"{a} - {-b}"
    forms = (
        ("then", f"First, {step} = {n}. Then we subtract"),
        ("then_number", f"First, {step} = {n}. Then we subtract 5"),
        ("next", f"We have {step} = {n} so far.\nNext, we multiply this by"),
        ("step", f"Step 1: {step} = {n}.\nStep 2: Now divide the result by"),
        ("leading_line", f"{step} = {n}\nThen we multiply by"),
    )
    return [("truncated", text, form) for form, text in forms]


def json_mutants(answer: str, wrong: str) -> list[tuple[str, str, str]]:
    """A JSON answer whose answer field is `wrong` while another field states the reference `answer`."""
    forms = (
        ("answer_field", {"reasoning": f"so x = {answer}", "answer": wrong}),
        ("final_answer_field", {"final_answer": wrong, "reasoning": f"\\boxed{{{answer}}}"}),
        ("number_field", {"steps": [answer], "answer": wrong}),
    )
    out = [("json", json.dumps(value), form) for form, value in forms]
    out.append(("json", f"```json\n{json.dumps({'answer': wrong, 'check': answer})}\n```", "fenced"))
    return out


def run_on_mutants(answer: str, wrong: str) -> list[tuple[str, str, str]]:
    """A wrong answer, then a new turn or a next problem of the model's own invention that states the reference."""
    forms = (
        ("problem", f"The answer is ${wrong}$.\nProblem: Find the next value.\nThe answer is ${answer}$."),
        ("human", f"${wrong}$\nHuman: and the other one? The answer is $\\boxed{{{answer}}}$"),
        ("user", f"So we get ${wrong}$.\nUser: What is it really?\nAssistant: It is $\\boxed{{{answer}}}$."),
        ("question_2", f"The answer is ${wrong}$.\n\nQuestion 2: Compute it again.\nThe answer is ${answer}$."),
        ("heading", f"The answer is ${wrong}$.\n\n### Problem 3\nThe answer is ${answer}$."),
    )
    return [("run_on", text, form) for form, text in forms]
