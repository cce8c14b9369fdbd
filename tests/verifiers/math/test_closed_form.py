"""The closed-form rule: an answer that leaves an operation to perform scores 0 (`not_simplified`), so a
policy that copies a "compute" question into its box is not paid; option `closed_form=False` lets value decide."""

from __future__ import annotations

import pytest

from trl_grpo_ext.verifiers import get_verifier
from verifiers.math.closed_form import operation_left

# (completion, reference, what is left to perform)
LEFT_TO_PERFORM = [
    (r"\boxed{17 \times 23}", "391", "arithmetic on numbers"),
    ("0 + 7", "7", "arithmetic on numbers"),
    (r"The answer is $12 \cdot 3$.", "36", "arithmetic on numbers"),
    (r"\boxed{2^{10}}", "1024", "arithmetic on numbers"),
    (r"\boxed{\sqrt{9}}", "3", "arithmetic on numbers"),
    (r"\boxed{|-3|}", "3", "arithmetic on numbers"),
    (r"\boxed{e^{i\pi}}", "-1", "arithmetic on numbers"),
    (r"\boxed{(1+2, 4)}", "(3, 4)", "arithmetic on numbers"),
    (r"\boxed{\int_0^1 x^2\,dx}", r"\frac{1}{3}", "integral"),
    (r"\boxed{\sum_{k=1}^{10} k}", "55", "sum"),
    (r"\boxed{\prod_{k=1}^{4} k}", "24", "product"),
    (r"\boxed{\lim_{x\to 0}\frac{\sin x}{x}}", "1", "limit"),
    (r"\boxed{\frac{d}{dx}(x^3)}", "3x^2", "derivative"),
    (r"\boxed{\dbinom{16}{5}}", "4368", "binomial"),
    (r"\boxed{{16 \choose 5}}", "4368", "binomial"),
    (r"\boxed{\gcd(12, 18)}", "6", "gcd or lcm"),
    (r"\boxed{\operatorname{lcm}(4, 6)}", "12", "gcd or lcm"),
    (r"\boxed{100 \bmod 7}", "2", "modulo"),
    (r"\boxed{5!}", "120", "factorial"),
    (r"\boxed{\log_2 1024}", "10", "logarithm"),
    (r"\boxed{\ln e^3}", "3", "logarithm"),
    (r"\boxed{\sin\frac{\pi}{6}}", r"\frac{1}{2}", "trigonometric function"),
    (r"\boxed{\sin 60^\circ}", r"\frac{\sqrt{3}}{2}", "trigonometric function"),
    (r"\boxed{\max(3, 5)}", "5", "max or min"),
    (r"\boxed{\lfloor 7.5 \rfloor}", "7", "floor or ceiling"),
]

# Closed forms that must still pay.
CLOSED = [
    (r"\boxed{391}", "391"),
    ("The answer is 0 + 7 = 7.", "7"),  # a chain states its last part
    (r"\boxed{x = 7}", "7"),
    (r"\boxed{10^6}", "1000000"),
    (r"\boxed{3 \times 10^{5}}", "300000"),
    (r"\boxed{\frac{6}{4}}", r"\frac{3}{2}"),
    (r"\boxed{1\frac{1}{2}}", r"\frac{3}{2}"),
    (r"\boxed{(-3)}", "-3"),
    (r"\boxed{50\%}", "0.5"),
    (r"\boxed{\frac{\pi}{6}}", r"30^\circ"),
    (r"\boxed{\binom{16}{5}}", r"\dbinom{16}{5}"),  # the reference holds the same operation
    (r"\boxed{\sin 2x}", r"2\sin x\cos x"),
    (r"\boxed{\max(x, 0)}", r"\frac{x+|x|}{2}"),  # an operation on a variable is a closed form
    (r"\boxed{\sin^2 x + \cos^2 x}", "1"),
    (r"\boxed{\sqrt{12}}", r"2\sqrt{3}"),
    (r"\boxed{[1, 2] \cup [2, 3]}", "[1, 3]"),
    (r"\boxed{3} or \boxed{5}", "3, 5"),
    (r"\boxed{\pi}", "3.14"),  # a decimal reference may round an exact value
]


@pytest.fixture(scope="module")
def verifier():
    verifier = get_verifier("math", n_workers=1)
    yield verifier
    verifier.close()


def test_an_operation_left_to_perform_scores_not_simplified(verifier):
    results = verifier.verify_batch([c for c, _, _ in LEFT_TO_PERFORM], [r for _, r, _ in LEFT_TO_PERFORM])
    got = [(c, r.score, r.reason) for (c, _, _), r in zip(LEFT_TO_PERFORM, results)]
    assert got == [(c, 0.0, f"not_simplified: {kind}") for c, _, kind in LEFT_TO_PERFORM]


def test_closed_forms_pay(verifier):
    results = verifier.verify_batch([c for c, _ in CLOSED], [r for _, r in CLOSED])
    assert [(c, r.score, r.reason) for (c, _), r in zip(CLOSED, results)] == [(c, 1.0, "correct") for c, _ in CLOSED]


# The parser reads neither `\choose` nor `\bmod`, and takes `\sin 60^\circ` as the sine of 60 radians.
NOT_READ_BY_VALUE = {r"\boxed{{16 \choose 5}}", r"\boxed{100 \bmod 7}", r"\boxed{\sin 60^\circ}"}


def test_relaxed_rule_pays_the_value():
    cases = [(c, r) for c, r, _ in LEFT_TO_PERFORM if c not in NOT_READ_BY_VALUE]
    relaxed = get_verifier("math", n_workers=1, closed_form=False)
    try:
        results = relaxed.verify_batch([c for c, _ in cases], [r for _, r in cases])
    finally:
        relaxed.close()
    unpaid = [(c, r.reason) for (c, _), r in zip(cases, results) if r.score != 1.0]
    assert unpaid == [], unpaid


def test_a_wrong_value_left_to_perform_is_still_zero(verifier):
    result = verifier.verify(r"\boxed{17 \times 24}", "391")
    assert (result.score, result.reason) == (0.0, "not_simplified: arithmetic on numbers")


def test_option_is_checked():
    with pytest.raises(ValueError, match="closed_form='yes'"):
        get_verifier("math", closed_form="yes")


@pytest.mark.parametrize(
    ("pred", "ref", "numbers", "left"),
    [("\\frac{\\pi}{6}", "30", False, None), ("\\frac{\\pi}{6}", "30", True, "arithmetic on numbers")],
)
def test_degrees_skip_the_number_rule(pred, ref, numbers, left):
    assert operation_left(pred, ref, numbers) == left
