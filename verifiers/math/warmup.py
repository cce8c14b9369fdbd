"""Warm-up inputs of the math workers: every comparison path and common answer shapes, exercised once per worker.

sympy imports much of itself lazily on first use (simplify, solvers, sets, matrices), and the ANTLR parser of
latex2sympy builds its prediction cache as it meets constructs; a worker pays for both here, before its first batch.
The math benchmark checks that none of these inputs occurs in its timed data.
"""

from __future__ import annotations

import gc

from .compare import compare_task
from .parse import latex_to_sympy, parse_leaf

# One pair per comparison path.
WARM_UP_PAIRS = [
    (r"\frac{x}{2}+1", r"\frac{x+2}{2}"),
    (r"3x-6y+2=0", r"y=\frac{1}{2}x+\frac{1}{3}"),
    (r"x \ge 5", r"[5, \infty)"),
    (r"-2 < x \le 7", r"(-2, 7]"),
    (r"1 \le |z| \le 2", r"[-2, -1] \cup [1, 2]"),
    (r"\begin{pmatrix}2 & 0 \\ 5 & -1\end{pmatrix}", r"\begin{bmatrix}2 & 0 \\ 5 & -1\end{bmatrix}"),
    (r"\sqrt{2}+\sin(\pi/4)", r"1.5 \sqrt{2}"),
    (r"\sqrt[3]{t^{2}} \cdot 5", r"5t^{2/3}"),
    (r"1-\sin^2(u)", r"\cos^2(u)"),
    (r"\log(x) + \ln(e)", r"\log x + 1"),
    (r"b_{12} = 7", r"b_{12} = 7.0"),
    (r"(1 - \sqrt{5}) \times 2", r"2 - 2\sqrt{5}"),
    (r"\frac{\sqrt{7}}{7}", r"\frac{1}{\sqrt{7}}"),
    (r"2+3i", r"3i+2"),
    (r"f(x) = \sum_{k=0}^{n} k", r"f(x) = \sum_{k=0}^{n} k"),
    (r"\binom{9}{4}", r"126"),
    (r"x^2 \ne 1", r"1 \ne x^2"),
]


# Common shapes of final answers, parsed once per worker: the ANTLR parser's prediction states for their token
# sequences are then built before the first batch instead of during it.
WARM_UP_LEAVES = [
    r"\frac{11}{13}",
    r"-\frac{5}{12}",
    r"\dfrac{7}{2}",
    r"\frac{\sqrt{3}}{2}",
    r"\frac{2\sqrt{6}}{5}",
    r"\frac{3-\sqrt{13}}{4}",
    r"4\sqrt{3}",
    r"\sqrt{23}",
    r"\sqrt[3]{9}",
    r"2^{10}",
    r"3^{-2}",
    r"x^2-4x+3",
    r"3x^{3}+2x-7",
    r"2x^2 + 5x - 1",
    r"(x-2)(x+5)",
    r"-3(x+1)^2+4",
    r"\frac{x+1}{x-1}",
    r"\frac{1}{x^2+1}",
    r"6\pi",
    r"\frac{\pi}{3}",
    r"\frac{5\pi}{6}",
    r"2\pi r",
    r"e^{2}",
    r"e^{-x}",
    r"\ln 2",
    r"\ln(3)",
    r"\log_{2} 8",
    r"\log_3(x)",
    r"\sin(x)",
    r"\cos 2x",
    r"\tan^{2} x",
    r"\sin^2(x)+\cos^2(x)",
    r"\arcsin\left(\frac{1}{2}\right)",
    r"|x-3|",
    r"\left|2x+1\right|",
    r"5!",
    r"\binom{10}{3}",
    r"1.25",
    r"-0.5",
    r"3.14159",
    r"10^{6}",
    r"2.5\times 10^{3}",
    r"4 \cdot 7",
    r"12/5",
    r"a_n",
    r"a_{n+1}",
    r"a_{n-1}+a_{n-2}",
    r"x_1",
    r"F_{k}",
    r"\sum_{i=1}^{n} i^2",
    r"\sum_{k=0}^{n} \binom{n}{k}",
    r"\int_0^1 x^2\,dx",
    r"\lim_{x\to\infty} \frac{1}{x}",
    r"3+4i",
    r"2-i",
    r"\sqrt{-1}",
    r"\infty",
    r"-\infty",
    r"\begin{pmatrix} 2 & -1 \\ 0 & 3 \end{pmatrix}",
    r"\begin{pmatrix} 1 \\ 4 \end{pmatrix}",
    r"\begin{bmatrix} 0 & 1 \\ 1 & 0 \end{bmatrix}",
    r"\begin{array}{cc} 5 & 6 \\ 7 & 8 \end{array}",
    r"y",
    r"2y-3",
    r"ab+bc",
    r"mn",
    r"\alpha+\beta",
    r"\theta",
    r"45^\circ",
    r"h(t)",
    r"g(2)",
    r"xy^2",
    r"\frac{a}{b}+\frac{c}{d}",
    r"(2x+3y)^2",
    r"x^3 - y^3",
    r"\left(\frac{1}{2}\right)^n",
    r"\frac{n(n+1)}{2}",
    r"n^2 + n",
    r"2n-1",
    r"\overline{AB}",
    r"\lfloor x \rfloor",
    r"\lceil 2.5 \rceil",
]

# Every common operator once after every common kind of operand (generated, not taken from any data set): ANTLR
# builds its prediction states per token sequence, and a construct met for the first time costs 10-90 ms of parsing
# (`1:2`, for instance). These ~320 parses add about 2 s to a worker's start and spare its first batches that cost.
_OPERANDS = [
    "7", "0.5", "y", "pq", "b_{2}", "c_1", "u'", r"\frac{m}{3}", r"\sqrt{5}", r"\sqrt[3]{v}", r"\sin(t)", "g(w)",
    "(k-1)", "[2]", "|r|", r"\pi", r"\text{km}", "3!", r"\sum_{j=0}^{m} j", r"\binom{6}{j}", "h^{-2}", r"\alpha",
    "e^{s}",
]  # fmt: skip
_OPERATORS = ["+", "-", "*", "/", r"\cdot", r"\times", ":", "^", "", " ", ",", "=", "<", r"\le"]


def _pairings() -> list[str]:
    pairings = []
    for i, left in enumerate(_OPERANDS):
        for j, operator in enumerate(_OPERATORS):
            right = _OPERANDS[(i + j + 1) % len(_OPERANDS)]  # each operator meets a different right operand
            if operator == "^":
                if not left.endswith("!"):  # `3!^{y}` is not valid LaTeX
                    pairings.append(f"{left}^{{{right}}}")
            else:
                pairings.append(f"{left}{operator}{right}")
    return pairings


WARM_UP_LEAVES += _pairings()


def warm_up() -> None:
    """Worker initializer: import and exercise every comparison path once so the first items do not pay for it."""
    for pred, ref in WARM_UP_PAIRS:
        compare_task([(pred, ref)], 0.0, 0.0)
    for latex in WARM_UP_LEAVES:
        try:
            latex_to_sympy(latex)
        except Exception:  # a warm-up is an optimisation: another parser version may reject a shape, and that is fine
            pass
    parse_leaf.cache_clear()
    # Everything built so far (sympy's modules and caches, the parser's prediction states) lives as long as the
    # worker: move it out of the collector's generations, so that collections during an item do not walk it again
    # (without this, the larger prediction cache made the items ~15% slower in CPU time, not faster).
    gc.collect()
    gc.freeze()
