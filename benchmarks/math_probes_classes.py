"""Probes of the classes of issue 19: (category, completion, reference, verdict of a careful human grader).

Written for issue 19 ("the math reward pays only what it can stand behind"), one category per class of false
positive that a held-back set found (and one of misses a careful grader would pay). Unlike `math_probes.py`, the
prediction is a whole completion (boxed, or prose for the hedges), used as is. `tests/verifiers/math/test_probes.py`
checks every verdict; `benchmarks/math_verifier.py --probes` prints them next to math-verify's.

Issue 32's closed-form rule turned five verdicts from paid to 0 (`not_simplified`): `7!!` for 105, `8!!` for 384,
`\\cos(\\pi/3)` for 1/2, `\\operatorname{lcm}(4, 6)` for 12 and `\\gcd(12, 18)` for 6 leave an operation to perform;
its word-class rule turned `\\boxed{6 \\text{ apples}}` for 6 from 0 to paid (a noun after a number is what was counted).
"""

from __future__ import annotations

from math_probes import Probe

T, F = True, False

_TABLE: dict[str, list[tuple[str, str, bool]]] = {
    "qualifiers and units": [
        (r"\boxed{12 \text{ or more}}", "12", F),
        (r"\boxed{12 or fewer}", "12", F),
        (r"\boxed{\text{at least } 7}", "7", F),
        (r"\boxed{7 \text{ at most}}", "7", F),
        (r"\boxed{3\text{ hours or less}}", "3", F),
        (r"\boxed{40 \text{ km}}", r"40 \text{ miles}", F),
        (r"\boxed{40\,\mathrm{m}}", r"40\text{ cm}", F),
        (r"\boxed{9 \text{ square feet}}", r"9\text{ ft}", F),
        (r"\boxed{250 \text{ grams}}", r"250\text{ kg}", F),
        (r"\boxed{6 \text{ apples}}", "6", T),  # issue 32: a counted noun is no qualifier
        (r"There are at least $\boxed{7}$ of them.", "7", F),
        (r"So we need \boxed{12} or more.", "12", F),
        (r"The answer is $\ge \boxed{3}$.", "3", F),
        (r"The total is \boxed{12}, or 12 square units.", "12", T),
        (r"The length is \boxed{5} cm.", r"5 \text{ m}", F),
        (r"The length is \boxed{5} cm.", "5", T),
        (r"We need \boxed{12}\text{ minimum}.", "12", F),
        (r"\boxed{40 \text{ km}}", r"40 \text{ kilometers}", T),
        (r"\boxed{9 \text{ ft}^2}", r"9 \text{ square feet}", T),
        (r"\boxed{125 \text{ miles}}", "125", T),
        (r"\boxed{15\text{ cm}^2}", "15", T),
    ],
    "factorials and function names": [
        (r"\boxed{n}", "n!", F),
        (r"\boxed{n!}", "n", F),
        (r"\boxed{k!}", "k", F),
        (r"\boxed{7!!}", "7!", F),
        (r"\boxed{7!}", "7!!", F),
        (r"\boxed{(2n-1)!!}", "(2n-1)!", F),
        (r"\boxed{7!!}", "105", F),
        (r"\boxed{8!!}", "384", F),
        (r"\boxed{n!}", "n!", T),
        (r"\boxed{\sin\left(2x\right)}", r"\sin 2x", T),
        (r"\boxed{\sin\left(x\right)}", r"\sin 2x", F),
        (r"\boxed{\ln\left(x+1\right)}", r"\ln(x+1)", T),
        (r"\boxed{\ln\left(x\right)+1}", r"\ln(x+1)", F),
        (r"\boxed{\cos\left(\frac{\pi}{3}\right)}", r"\frac{1}{2}", F),
    ],
    "hedges in any form": [
        ("The answer is (A) or (C).", "A", F),
        (r"\boxed{A, C}", "C", F),
        (r"\boxed{B \text{ or } D}", "B", F),
        ("Either B or D.", "D", F),
        ("The answer is not A but C.", "A", F),
        ("The answer is not A but C.", "C", T),
        ("The answer is either 4 or 6.", "4", F),
        ("It could be 4 or 6.", "6", F),
        ("So $x = 4$ or $x = 6$.", "6", F),
        ("It is not 8.", "8", F),
        ("The answer is not 3 but 5.", "3", F),
        ("The answer is not 3 but 5.", "5", T),
        (r"\boxed{3} or \boxed{5}", "(3, 5)", F),
        (r"\boxed{3 \text{ or } 5}", "(3, 5)", F),
        (r"\boxed{3} or \boxed{5}", "3, 5", T),
        ("Since 3 is not prime, the answer is 12.", "12", T),
        (r"So the answer is \boxed{3}. It could also be 5, though.", "3", F),
        (r"\boxed{4}, or maybe 6.", "4", F),
        ("The answers are (A), (C).", "A", F),
    ],
    "words are not products": [
        (r"\boxed{\text{dog}}", r"\text{god}", F),
        (r"\boxed{\text{no}}", "on", F),
        (r"\boxed{no}", "on", F),
        (r"\boxed{Evan}", "Nave", F),
        (r"\boxed{\text{listen}}", r"\text{silent}", F),
        (r"\boxed{abc}", "cba", F),
        (r"\boxed{\text{Odd}}", "odd", T),
        (r"\boxed{ab}", "ba", T),
        (r"\boxed{2ab}", "2ba", T),
        (r"\boxed{(\text{dog}, 1)}", r"(\text{god}, 1)", F),
        (r"\boxed{\text{no solution}}", r"\text{No solution}", T),
    ],
    "scientific notation against integers": [
        (r"\boxed{1.234 \times 10^{5}}", "123412", F),
        (r"\boxed{1.2341 \times 10^{5}}", "123412", F),
        (r"\boxed{6.022 \times 10^{23}}", "602214076000000000000000", F),
        (r"\boxed{3.333 \times 10^{6}}", r"\frac{10^7}{3}", F),
        (r"\boxed{1.5 \times 10^{4}}", "15001", F),
        (r"\boxed{9.9999e4}", "99998", F),
        (r"\boxed{1.234 \times 10^{5}}", "123400", T),
        (r"\boxed{1.5e3}", "1500", T),
        (r"\boxed{333.3}", r"\frac{1000}{3}", T),
        (r"\boxed{1.2345 \times 10^{4}}", "12345", T),
    ],
    "sampling refuted": [
        (r"\boxed{\min(x, 5000)}", "x", F),
        (r"\boxed{\max(x, -10^{4})}", "x", F),
        (r"\boxed{x + \max(0, x - 3000)}", "x", F),
        (r"\boxed{\lceil x \rceil - \lfloor x \rfloor}", "1", F),
        (r"\boxed{x^2 + 1 - \lceil x \rceil + \lfloor x \rfloor}", "x^2", F),
        (r"\boxed{x + \max(0, 1 - 1000|x - 3|)}", "x", F),
        (r"\boxed{x + e^{-1000(x-3)^2}}", "x", F),
        (r"\boxed{x + 10^{-35}}", "x", F),
        (r"\boxed{x^2 + 10^{-40}}", "x^2", F),
        (r"\boxed{x + e^{x - 5000}}", "x", F),
        (r"\boxed{\cosh^2 x - \sinh^2 x}", "1", T),
        (r"\boxed{\frac{x^2 - 9}{x - 3}}", "x + 3", T),
        (r"\boxed{\lfloor x \rfloor + 1}", r"\lfloor x + 1 \rfloor", T),
        (r"\boxed{\max(x, 5000)}", r"\frac{x + 5000 + |x - 5000|}{2}", T),
    ],
    "complex answers to equations": [
        (r"\boxed{(2i, -2i)}", "x^2 = -4", F),
        (r"\boxed{(i, 2)}", "x > 1", F),
        (r"\boxed{[1, 2i]}", r"1 \le x \le 2", F),
        (r"\boxed{(1+i, 1-i)}", r"x^2 - 2x + 2 = 0", F),
        (r"\boxed{x = 3i}", r"x \ge 0", F),
        (r"\boxed{2i}", r"-1 < x < 3", F),
        (r"\boxed{[1, 2]}", r"1 \le x \le 2", T),
        (r"\boxed{1 + i, 1 - i}", r"1 \pm i", T),
    ],
    "what a careful grader pays": [
        (r"\boxed{0.\overline{3}}", r"\frac{1}{3}", T),
        (r"\boxed{0.1\overline{6}}", r"\frac{1}{6}", T),
        (r"\boxed{0.333\ldots}", r"\frac{1}{3}", T),
        (r"\boxed{0.\overline{3}}", r"\frac{1}{4}", F),
        (r"\boxed{30^\circ}", r"\frac{\pi}{6}", T),
        (r"\boxed{30^\circ}", r"\frac{\pi}{3}", F),
        (r"\boxed{\mathbb{R}}", r"(-\infty, \infty)", T),
        (r"\boxed{\emptyset}", r"\varnothing", T),
        (r"\boxed{(-\infty, 1) \cup (1, \infty)}", r"x \ne 1", T),
        (r"\boxed{[1, 2] \cup [2, 3]}", "[1, 3]", T),
        (r"\boxed{\{x \mid x > 2\}}", r"(2, \infty)", T),
        (r"\boxed{\operatorname{lcm}(4, 6)}", "12", F),
        (r"\boxed{\gcd(12, 18)}", "6", F),
        (r"\boxed{√2}", r"\sqrt{2}", T),
        (r"\boxed{e}", "2.718", T),
        (r"\boxed{e}", "2.71", F),
        (r"So $\boxed{\frac{1}{2}}$. In decimal form, this is $\boxed{0.5}$.", "0.5", T),
        (r"So $\boxed{\frac{1}{2}}$. In decimal form, this is $\boxed{0.6}$.", "0.5", F),
        (r"\boxed{\begin{pmatrix}1&2\\0&1\end{pmatrix}}", r"\begin{pmatrix}1&1\\0&1\end{pmatrix}^2", T),
        (r"\boxed{\begin{pmatrix}1&3\\0&1\end{pmatrix}}", r"\begin{pmatrix}1&1\\0&1\end{pmatrix}^2", F),
    ],
}

CLASS_PROBES: list[Probe] = [Probe(category, *row) for category, rows in _TABLE.items() for row in rows]
CLASS_CATEGORIES: list[str] = list(_TABLE)
