"""Non-smooth pieces (|.|, min, max, floor, ceiling...) that sampling cannot cover: a difference confined to a
window no sampled point falls in. There, equality is paid only on a symbolic proof (`refute.sampling_decides`,
`refute.symbolically_zero`), and a verdict "not equal" for want of one has the reason `unproven_nonsmooth`."""

import pytest
import sympy

from trl_grpo_ext.verifiers import MathVerifier
from trl_grpo_ext.verifiers.math.compare import compare_all_task, compare_task
from trl_grpo_ext.verifiers.math.refute import UNPROVEN_NONSMOOTH, sampling_decides, symbolically_zero

UNPROVEN = (False, UNPROVEN_NONSMOOTH)
DIFFERENT = (False, "different")
EQUAL = (True, "symbolic")


def verdict(pred: str, ref: str) -> tuple:
    return compare_task([(pred, ref)], 0.0, 0.0)


@pytest.mark.parametrize(
    "pred, ref, expected",
    [
        # equal at every sampled point, different in a window no point falls in
        (r"x^2+\max(0,\sin x-0.99999999)", "x^2", UNPROVEN),  # windows 3e-4 wide around pi/2 + 2 pi k
        (r"x+\lfloor 1/(1+(x-7.3)^2)\rfloor", "x", UNPROVEN),  # 1 at x = 7.3 only
        (r"x + \lceil \max(0, \cos(x-1.2345) - 0.9999999999) \rceil", "x", UNPROVEN),  # 1 within 1.4e-5 of 1.2345
        (r"x + \lfloor \frac{1}{1+10^{8}(x-\pi)^2} \rfloor", "x", UNPROVEN),  # 1 at x = pi only
        # polynomial arguments, but breakpoints closer than the points can resolve, or a jump between points
        (r"x + \max(0, 10^{-30} - (x-7.3)^2)", "x", UNPROVEN),  # a bump 2e-15 wide
        (r"x + \lfloor x - 0.3\rfloor - \lfloor x - 0.3 - 10^{-30} \rfloor", "x", UNPROVEN),  # 1 on [k+0.3, +1e-30)
        (r"x + \lfloor -(x-7.3)^2\rfloor + \lceil (x-7.3)^2 - 10^{-30}\rceil", "x", UNPROVEN),
        # several variables: breakpoints are searched along one variable at a time
        (r"x+y+\max(0, 1-10^6((x-7.3)^2+(y-2.1)^2))", "x+y", UNPROVEN),  # a bump in a disc of radius 1e-3
        (
            r"x+y+(\lceil x-7.3\rceil-\lceil x-7.3000001\rceil)(\lceil y-2.1\rceil-\lceil y-2.1000001\rceil)",
            "x+y",
            UNPROVEN,
        ),  # 1 on a 1e-7 square
        # an equation: its constant ratio at sampled points is no proof either
        (r"y - x^2 - \max(0,\sin x-0.99999999) = 0", "y = x^2", UNPROVEN),
        # a narrow window of polynomial breakpoints the refuting points reach: different, as before
        (r"2y - 2x - 2\max(0,1-1000|x-3|) = 0", "y = x", DIFFERENT),  # constant_ratio samples refuting points too
        (r"x + \lceil \frac{1}{1+(x-7.3)^2} - 0.999 \rceil", "x", DIFFERENT),  # the rational breakpoints are found
        (r"x + \max(0, 1 - 1000|x - 3|)", "x", DIFFERENT),
        (r"x + \lceil \frac{1}{x^2+10^{6}} - 10^{-7}\rceil", "x", DIFFERENT),  # 1 wherever |x| < 3000
        (r"\sin|x|", r"|\sin x|", DIFFERENT),
    ],
)
def test_differences_hidden_in_a_narrow_region_are_not_paid(pred, ref, expected):
    assert verdict(pred, ref) == expected
    assert verdict(ref, pred) == expected


@pytest.mark.parametrize(
    "pred, ref",
    [
        (r"\cos|x|", r"\cos x"),
        ("|x|^2", "x^2"),
        (r"\sqrt{x^2}", "|x|"),
        (r"\max(x,3)+\min(x,3)", "x+3"),  # sampled: a polynomial argument
        (r"|x-1|+|x+1|", "|1+x|+|-1+x|"),
        (r"\lfloor x \rfloor", r"\lfloor{x}\rfloor+0"),
        (r"\lfloor x \rfloor", r"-\lceil -x \rceil"),  # proven with ceiling written with floor
        (r"\lfloor x \rfloor + 1", r"\lfloor x + 1 \rfloor"),
        (r"|\sin x|", r"\sqrt{\sin^2 x}"),
        (r"\max(\sin x, \cos x)", r"\max(\cos x, \sin x)"),  # sympy orders the arguments
        (r"\max(\sin x, \cos x)", r"\frac{\sin x + \cos x + |\sin x - \cos x|}{2}"),
        (r"|\sin x| |\cos x|", r"\frac{|\sin 2x|}{2}"),  # proven by simplify
        (r"\max(x, 5000)", r"\frac{x + 5000 + |x - 5000|}{2}"),
        (r"\sqrt{x^2+2x+1}", "|x+1|"),
        (r"\max(x,y)+\min(x,y)", "x+y"),
        (r"\max(a, b)", r"\frac{a+b+|a-b|}{2}"),
        (r"\max(a, b) - \min(a, b)", "|a-b|"),
        (r"\ln|ab|", r"\ln|a| + \ln|b|"),
        (r"\sqrt{a^2 b^2}", "|a||b|"),
        (r"y = |x|", r"|x| - y = 0"),
    ],
)
def test_true_identities_with_non_smooth_pieces_keep_paying(pred, ref):
    assert verdict(pred, ref) == EQUAL
    assert verdict(ref, pred) == EQUAL


def test_the_price_an_identity_sympy_cannot_prove_is_not_paid():
    # equal (|x-1| + |x+1| is 2 max(|x|, 1)), but the max of a non-polynomial argument needs a proof sympy does not find
    assert verdict(r"|x-1|+|x+1|", r"\max(2|x|, 2)") == UNPROVEN


def test_identical_non_smooth_answers_pay():
    for answer in (r"|\sin x|", r"x + \lfloor \frac{1}{1+(x-7.3)^2} \rfloor", r"\max(0, \sin x - 0.99)"):
        assert verdict(answer, answer) == EQUAL


def test_reason_of_the_first_group_that_is_not_proven():
    groups = [[("x^2", "x^2")], [(r"x^2+\max(0,\sin x-0.99999999)", "x^2")]]
    assert compare_all_task(groups, 0.0, 0.0) == UNPROVEN


def test_reason_reaches_the_verification_result():
    verifier = MathVerifier(n_workers=1)
    try:
        wrong, right = verifier.verify_batch(
            [r"\boxed{x^2+\max(0,\sin x-0.99999999)}", r"\boxed{\max(x,3)+\min(x,3)}"], ["x^2", "x+3"]
        )
    finally:
        verifier.close()
    assert (wrong.score, wrong.reason) == (0.0, UNPROVEN_NONSMOOTH)
    assert (right.score, right.reason) == (1.0, "correct")


x, y = sympy.symbols("x y", real=True)


@pytest.mark.parametrize(
    "exprs, decides",
    [
        ((x**2, x**2 + 1), True),  # nothing non-smooth
        ((sympy.Abs(x - 1) + sympy.Abs(x + 1), 2 * sympy.Max(x, 1)), True),
        ((sympy.Max(x, 3) + y, x + y), True),  # pieces in x only; y is smooth
        ((sympy.Abs(x**2 - 2) * sympy.sin(y), x), True),
        ((sympy.floor(sympy.Integer(5) / 2) + x, x), True),  # a constant floor
        ((sympy.Abs(sympy.sin(x)), x), False),  # a trigonometric argument
        ((sympy.Max(0, 1 / (1 + x**2) - sympy.Rational(1, 2)), x), False),  # a rational argument
        ((sympy.Abs(x - y), x), False),  # several variables
        ((sympy.Abs(x) + sympy.Abs(y), x), False),  # pieces in two variables
        ((sympy.floor(x), x), False),  # a jump
        ((sympy.Max(0, sympy.Abs(x) - 1), x), False),  # nested: the argument is not a polynomial
        ((sympy.Abs(x**7 - 1), x), False),  # above the degree whose breakpoints are found
        ((sympy.Abs((x - 1) * (x - 1 - sympy.Rational(1, 10**12))), x), False),  # breakpoints too close
        ((sympy.Abs((x - 1) ** 2 * (x + 1)), x), True),  # a double root is one breakpoint
        ((sympy.Abs(x - sympy.pi), x), False),  # irrational coefficients: no exact roots here
    ],
)
def test_sampling_decides(exprs, decides):
    assert sampling_decides(exprs) is decides


@pytest.mark.parametrize(
    "difference, zero",
    [
        (sympy.Max(x, y) - (x + y + sympy.Abs(x - y)) / 2, True),
        (sympy.floor(x) + sympy.ceiling(-x), True),
        (sympy.log(sympy.Abs(x * y)) - sympy.log(sympy.Abs(x)) - sympy.log(sympy.Abs(y)), True),
        (sympy.Max(0, sympy.sin(x) - sympy.Rational(99999999, 10**8)), False),
        (sympy.floor(1 / (1 + (x - sympy.Rational(73, 10)) ** 2)), False),
        (sympy.log(x * y) - sympy.log(x) - sympy.log(y), False),  # factors of either sign: not rewritten
    ],
)
def test_symbolically_zero(difference, zero):
    assert symbolically_zero(difference) is zero
