"""The completion probes: whole completions as policies write them (category, completion, reference, verdict of a
careful human grader).

Written so that the math reward holds on what real policies write: one category per class that a held-back set
of chain-of-thought, Minerva, GSM8K, bold, Unicode and looping completions found. `tests/verifiers/math/test_probes.py`
checks every verdict; `benchmarks/math_verifier.py --probes` prints them next to math-verify's.
"""

from __future__ import annotations

from math_probes import Probe

T, F = True, False

_COT = "Let me work through this step by step.\n\nFirst, we set up the equation. "

_TABLE: dict[str, list[tuple[str, str, bool]]] = {
    "the question copied into the box": [
        (r"We need $17 \times 23$. So the answer is $\boxed{17 \times 23}$.", "391", F),
        (r"$\boxed{\int_0^1 x^2\,dx}$", r"\frac{1}{3}", F),
        (r"The number of subsets is $\boxed{\dbinom{16}{5}}$.", "4368", F),
        (r"$\boxed{\lim_{x \to 0} \frac{\sin 3x}{x}}$", "3", F),
        (r"$\boxed{\sum_{k=1}^{100} k}$", "5050", F),
        (r"$\boxed{\gcd(84, 36)}$", "12", F),
        (r"$\boxed{\log_2 1024}$", "10", F),
        (r"$\boxed{2^{10}}$", "1024", F),
        (r"$\boxed{\frac{d}{dx}(x^3)}$", "3x^2", F),
        ("0 + 7", "7", F),
        ("12 * 4", "48", F),
        (r"The answer is $\sqrt{144}$.", "12", F),
        (r"#### 6*7", "42", F),
        (r"$\boxed{4368}$", "4368", T),
        (r"So $17 \times 23 = 391$, and the answer is $\boxed{391}$.", "391", T),
        (r"The answer is 0 + 7 = 7.", "7", T),
        (r"$\boxed{\binom{16}{5}}$", r"\binom{16}{5}", T),
        (r"$\boxed{1.2 \times 10^{6}}$", "1200000", T),
    ],
    "Unicode": [
        ("The answer is −7.", "7", F),
        ("The answer is −7.", "-7", T),
        ("The answer is 2√3.", "2", F),
        ("The answer is 2√3.", r"2\sqrt{3}", T),
        ("The area is 3π.", "3", F),
        ("The area is 3π.", r"3\pi", T),
        ("So x = ½.", r"\frac{1}{2}", T),
        ("So x = ½.", "1", F),
        ("The answer is 2½.", r"\frac{5}{2}", T),
        ("The answer is 10⁵.", "100000", T),
        ("The answer is 10⁵.", "10", F),
        ("We get x² + 1.", "x^2+1", T),
        ("The inverse is x⁻¹.", r"\frac{1}{x}", T),
        ("The angle is π/4.", r"\frac{\pi}{4}", T),
        ("The value is √2/2.", r"\frac{\sqrt{2}}{2}", T),
        ("The answer is ∛8.", "2", F),
        ("So the answer is –3.", "-3", T),
        ("So the answer is –3.", "3", F),
        ("The solution is x ≤ 3.", r"x \le 3", T),
        ("The solution is x ≥ 3.", r"x \le 3", F),
        ("Answer: 4 × 10³", "4000", T),
        ("The answer is 7÷2.", r"\frac{7}{2}", F),
        (r"$\boxed{−5}$", "5", F),
        (r"$\boxed{−5}$", "-5", T),
    ],
    "more than one final answer": [
        (r"So $\boxed{5}$. Hmm, wait, that's wrong: the correct value is $7$.", "5", F),
        (r"So $\boxed{5}$. Hmm, wait, that's wrong: the correct value is $7$.", "7", T),
        ("So the answer is $\\boxed{5}$.\n\nFinal answer: 7", "5", F),
        ("So the answer is $\\boxed{5}$.\n\nFinal answer: 7", "7", T),
        ("The answer is B, though it could also be D.", "B", F),
        ("My answer: C. But A might be right too.", "C", F),
        ("$\\boxed{B}$\n\nOn reflection it might be D.", "B", F),
        ("So x = 3 ... So x = 4 ... So x", "4", F),
        ("So x = 3 ... So x = 4 ... So x", "3", F),
        ("Counting them: 1, 2, ..., 57", "57", F),
        ("The possible values are 1, 2, 3 and 4.", "4", F),
        ("So it is at least 4.", "4", F),
        (
            "We find $\\boxed{12}$ on the first pass, then $\\boxed{15}$, then $\\boxed{20}$.\n\n"
            "**Final Answer:** $\\boxed{94}$",
            "94",
            T,
        ),
        (
            "We find $\\boxed{12}$ on the first pass, then $\\boxed{15}$, then $\\boxed{20}$.\n\n"
            "**Final Answer:** $\\boxed{94}$",
            "20",
            F,
        ),
        (
            "So the answer is $\\boxed{5}$.\n\nWait, I made an error in the second step. Redoing it: $\\boxed{7}$",
            "7",
            T,
        ),
        (
            "So the answer is $\\boxed{5}$.\n\nWait, I made an error in the second step. Redoing it: $\\boxed{7}$",
            "5",
            F,
        ),
        ("The answer is C.", "C", T),
        ("A quick sanity check shows the answer is (C).", "C", T),
        ("A quick sanity check shows the answer is (C).", "A", F),
    ],
    "restatements": [
        (r"So $\boxed{\frac{1}{2}}$, or $50\%$.", r"\frac{1}{2}", T),
        (r"So $\boxed{\frac{1}{2}}$, or $60\%$.", r"\frac{1}{2}", F),
        (r"The answer is $\boxed{1000}$ (or $10^3$).", "1000", T),
        (r"The answer is $\boxed{1000}$ (or $10^4$).", "1000", F),
        (r"So $\boxed{34}$. Checking: $68 - 34 = 34$.", "34", T),
        (r"So $\boxed{34}$. It could also be $35$.", "34", F),
    ],
    "count nouns and formatting": [
        (r"$\boxed{7 \text{ apples}}$", "7", T),
        ("Natalia sold 72 clips in total.\n#### 72 clips", "72", T),
        ("The answer is 6 apples.", "6", T),
        ("The answer is 6 apples.", "7", F),
        ("The answer is 6 or more apples.", "6", F),
        ("The answer is 6 million.", "6", F),
        ("The answer is 5 dozen.", "5", F),
        ("The answer is 2 thirds.", "2", F),
        (r"The answer is $\$18$.", "18", T),
        (r"#### $\$18$", "18", T),
        ("**Answer: B**", "B", T),
        ("The correct answer is **C**.", "C", T),
        ("the answer is **7** cm", "7", T),
        (r"$\boxed{{{12}}}$", "12", T),
        (r"$\boxed{\lbrack 1, 3 \rbrack}$", "[1, 3]", T),
        (r"$\boxed{\bigl(1, 3\bigr)}$", "(1, 3)", T),
        (r"$\boxed{\Big[1, 3\Big]}$", "[1, 3]", T),
        (r"$\boxed{\textcolor{red}{12}}$", "12", T),
        (r"$\boxed{\underline{12}}$", "12", T),
        (r"$\boxed{\nicefrac{3}{4}}$", r"\frac{3}{4}", T),
        (r"$\boxed{3+4\mathrm{i}}$", "3+4i", T),
        (r"$\boxed{\text{twelve}}$", "12", T),
        (r"$\boxed{\text{eleven}}$", "12", F),
    ],
    "content that renders nothing": [
        (r"$\boxed{\phantom{12}}$", "12", F),
        ("% $\\boxed{12}$\nThe answer is $7$.", "12", F),
        ("% $\\boxed{12}$\nThe answer is $7$.", "7", T),
        (r"$\boxed{\color{red}12}$", "12", T),
        (r"$\boxed{\hphantom{1}2}$", "12", F),
    ],
    "the number read from prose": [
        ("Thus $x = 5$. Checking: $2(5)+1=11$.", "5", T),
        ("Thus $x = 5$. Checking: $2(5)+1=11$.", "11", F),
        ("To confirm, 68 - 34 = 34.", "34", T),
        ("The remaining amount is 68 - 34 = 34 dollars.", "34", T),
    ],
    "units in the reference": [
        (r"$\boxed{45 \text{ radians}}$", r"45^\circ", F),
        (r"$\boxed{45^\circ}$", r"45^\circ", T),
        (r"$\boxed{1250 \text{ cents}}$", r"\$1250", F),
        (r"$\boxed{1250}$", r"\$1250", T),
        ("#### 18 cents", r"\$18", F),
        ("#### 18", r"\$18", T),
        (r"$\boxed{\$18}$", "18", T),
    ],
    "decimal references": [
        (r"$\boxed{0.54}$", "0.5", F),
        (r"$\boxed{2.46}$", "2.5", F),
        (r"$\boxed{12.54}$", "12.5", F),
        (r"$\boxed{0.254}$", "0.25", F),
        (r"$\boxed{\frac{1}{4}}$", "0.2", F),
        (r"$\boxed{\frac{11}{20}}$", "0.5", F),
        (r"$\boxed{\frac{1}{3}}$", "0.33", T),
        (r"$\boxed{\pi}$", "3.14", T),
        (r"$\boxed{3.14159}$", "3.142", T),
        (r"$\boxed{0.50}$", "0.5", T),
    ],
    "references that do not parse today": [
        (r"$\boxed{\frac{1}{x}}$", r"\frac1x", T),
        (r"$\boxed{\frac{1}{x}}$", r"\frac1y", F),
        (r"$\boxed{\frac{a+b}{ab}}$", r"\frac1a+\frac1b", T),
    ],
}

COMPLETION_PROBES: list[Probe] = [Probe(category, *row) for category, rows in _TABLE.items() for row in rows]
COMPLETION_CATEGORIES: list[str] = list(_TABLE)
