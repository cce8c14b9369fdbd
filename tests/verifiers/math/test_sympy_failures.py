"""The math comparison's narrow catches: sympy's documented "cannot" (a set it cannot reduce, an argument that is
no polynomial it handles) is no proof and reads as such, while any other exception is a bug that escapes to the
verifier, which reports it as `comparison_error: <type>` (counted in `<name>/comparison_error_rate` and logged by the
reward adapter) instead of a silent "not equal" or fewer refuting points."""

from __future__ import annotations

import pytest
import sympy
from sympy.polys.polyerrors import PolynomialError

from trl_grpo_ext.verifiers import as_reward_function
from trl_grpo_ext.verifiers.math import refute
from trl_grpo_ext.verifiers.math.compare import compare_task

SETS = (r"[1, 2] \cup [2, 3]", "[1, 3]")  # compared as sets of reals (relations.same_real_set)


def failing_on_sets(error: Exception):
    simplify = sympy.simplify

    def simplify_or_fail(expr, *args, **kwargs):
        if isinstance(expr, sympy.Set):
            raise error
        return simplify(expr, *args, **kwargs)

    return simplify_or_fail


def test_the_sets_are_equal_when_sympy_works():
    assert compare_task([SETS], 1e-9, 1e-9) == (True, "symbolic")


@pytest.mark.parametrize("error", [TypeError("cannot determine truth value of Relational"), NotImplementedError()])
def test_sympys_cannot_on_sets_is_not_shown_equal(monkeypatch, error):
    monkeypatch.setattr(sympy, "simplify", failing_on_sets(error))
    assert compare_task([SETS], 1e-9, 1e-9) == (False, "different")


def test_another_exception_on_sets_escapes_instead_of_reading_as_different(monkeypatch):
    monkeypatch.setattr(sympy, "simplify", failing_on_sets(ZeroDivisionError("a bug")))
    with pytest.raises(ZeroDivisionError):
        compare_task([SETS], 1e-9, 1e-9)


def test_the_verifier_and_the_reward_count_it_as_a_comparison_error(monkeypatch):
    """Through a worker process (whose comparison meets the bug), up to the reward adapter's metric."""
    import pool_helpers

    from trl_grpo_ext.verifiers.math import verifier as math_verifier

    monkeypatch.setattr(math_verifier, "warm_up", pool_helpers.do_nothing)
    monkeypatch.setattr(math_verifier, "compare_task", pool_helpers.compare_with_a_bug_in_set_simplify)
    reward = as_reward_function("math", n_workers=1)
    try:
        result = reward.verifier.verify(rf"\boxed{{{SETS[0]}}}", SETS[1])
        assert (result.score, result.reason) == (0.0, "comparison_error: ZeroDivisionError")
        metrics = {}
        rewards = reward(
            completions=[rf"\boxed{{{SETS[0]}}}", r"\boxed{2}"],
            answer=[SETS[1], "2"],
            log_metric=metrics.__setitem__,
        )
        assert rewards == [0.0, 1.0] and metrics["math/comparison_error_rate"] == 0.5
    finally:
        reward.verifier.close()


def raising(error: Exception):
    def fail(*args, **kwargs):
        raise error

    return fail


x = sympy.Symbol("x")


def test_an_argument_that_is_no_polynomial_gives_no_breakpoints(monkeypatch):
    assert refute._real_roots(x - 3, x) == [3.0] and refute._breakpoints_sampled([x - 3], x)
    monkeypatch.setattr(sympy, "Poly", raising(PolynomialError("sin(x) contains an element of the generators")))
    assert refute._real_roots(x - 3, x) == [] and not refute._breakpoints_sampled([x - 3], x)


@pytest.mark.parametrize(
    "call", [lambda: refute._real_roots(x - 3, x), lambda: refute._breakpoints_sampled([x - 3], x)]
)
def test_another_exception_finding_breakpoints_escapes_instead_of_dropping_points(monkeypatch, call):
    monkeypatch.setattr(sympy, "Poly", raising(ZeroDivisionError("a bug")))
    with pytest.raises(ZeroDivisionError):
        call()
