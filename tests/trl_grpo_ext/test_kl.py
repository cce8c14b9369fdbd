"""KL estimators, checked exactly on a categorical distribution small enough to enumerate (5 tokens, float64).

Used as a loss term on-policy, an estimator k contributes E_{y ~ pi}[grad k(y)] = sum_y pi(y) grad k(y) with the
sampling probabilities pi(y) held fixed (detached): that expectation is computed by enumeration, no Monte Carlo.
"""

from __future__ import annotations

import itertools
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from stock_trl import build_stock_trainer, loss_inputs, stock_loss

from trl_grpo_ext.trainer.kl import (
    _KL_ESTIMATORS,
    get_kl_estimator,
    kl_divergence,
    list_kl_estimators,
    register_kl_estimator,
)

VOCAB = 5
BASE_ESTIMATORS = ["k1", "k3", "abs", "low_var_kl"]
ALL_ESTIMATORS = ["k1", "k2", "k3", "abs", "low_var_kl", "k1+", "k3+", "abs+", "low_var_kl+"]
SEEDS = [0, 1, 2, 3]


def distributions(seed: int, spread: float = 1.0):
    """(theta, logp, ref_logp): theta a float64 leaf with requires_grad, logp = log_softmax(theta), ref fixed."""
    generator = torch.Generator().manual_seed(seed)
    theta = (spread * torch.randn(VOCAB, generator=generator, dtype=torch.float64)).requires_grad_(True)
    ref_logp = torch.log_softmax(spread * torch.randn(VOCAB, generator=generator, dtype=torch.float64), dim=0)
    return theta, torch.log_softmax(theta, dim=0), ref_logp


def grad(output: torch.Tensor, theta: torch.Tensor) -> torch.Tensor:
    (gradient,) = torch.autograd.grad(output, theta, retain_graph=True, allow_unused=False)
    return gradient


def expected_gradient(estimator: str, seed: int, spread: float = 1.0) -> torch.Tensor:
    """sum_y pi(y).detach() * grad_theta k(y)."""
    theta, logp, ref_logp = distributions(seed, spread)
    pi = logp.exp().detach()
    return grad((pi * kl_divergence(logp, ref_logp, estimator)).sum(), theta)


def per_token_gradients(values: torch.Tensor, theta: torch.Tensor) -> list[torch.Tensor]:
    """grad_theta values[y] for every token y."""
    return [grad(values[y], theta) for y in range(VOCAB)]


def true_kl(p: list[float], q: list[float]) -> float:
    """KL(p || q) = sum_y p(y) log(p(y) / q(y)), in plain Python."""
    return math.fsum(pi * math.log(pi / qi) for pi, qi in zip(p, q))


# --- gradients in expectation ---

CASES = [(seed, spread) for seed in SEEDS for spread in (0.3, 1.0, 3.0)]


@pytest.mark.parametrize(("seed", "spread"), CASES)
def test_k2_expected_gradient_is_grad_of_reverse_kl(seed, spread):
    theta, logp, ref_logp = distributions(seed, spread)
    reverse_kl = (logp.exp() * (logp - ref_logp)).sum()  # KL(pi || ref), differentiated in closed form by autograd
    expected = grad(reverse_kl, theta)
    torch.testing.assert_close(expected_gradient("k2", seed, spread), expected, rtol=1e-12, atol=1e-14)
    # and by hand: d KL(pi || ref) / d theta = pi * (x - E_pi[x]), x = log pi - log ref
    pi, x = logp.exp().detach(), (logp - ref_logp).detach()
    torch.testing.assert_close(expected, pi * (x - (pi * x).sum()), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize(("seed", "spread"), CASES)
def test_k3_expected_gradient_is_grad_of_forward_kl(seed, spread):
    theta, logp, ref_logp = distributions(seed, spread)
    forward_kl = (ref_logp.exp() * (ref_logp - logp)).sum()  # KL(ref || pi)
    expected = grad(forward_kl, theta)
    torch.testing.assert_close(expected_gradient("k3", seed, spread), expected, rtol=1e-12, atol=1e-14)
    # and by hand: d KL(ref || pi) / d theta = pi - ref
    torch.testing.assert_close(expected, logp.exp().detach() - ref_logp.exp(), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize(("seed", "spread"), CASES)
def test_k1_expected_gradient_is_zero(seed, spread):
    gradient = expected_gradient("k1", seed, spread)
    torch.testing.assert_close(gradient, torch.zeros_like(gradient), rtol=0, atol=1e-15)
    # while its per-token gradients are not zero: the expectation cancels them
    theta, logp, ref_logp = distributions(seed, spread)
    assert max(g.abs().max().item() for g in per_token_gradients(kl_divergence(logp, ref_logp, "k1"), theta)) > 0.1


@pytest.mark.parametrize("base", BASE_ESTIMATORS)
@pytest.mark.parametrize(("seed", "spread"), CASES)
def test_straight_through_expected_gradient_is_grad_of_reverse_kl(base, seed, spread):
    torch.testing.assert_close(
        expected_gradient(f"{base}+", seed, spread), expected_gradient("k2", seed, spread), rtol=1e-12, atol=1e-14
    )


def test_expected_gradients_differ_between_estimators():
    """The checks above are not vacuous: reverse and forward KL gradients differ on these distributions."""
    for seed in SEEDS:
        difference = expected_gradient("k2", seed) - expected_gradient("k3", seed)
        assert difference.abs().max().item() > 1e-3


# --- gradients token by token ---


@pytest.mark.parametrize(("seed", "spread"), CASES)
def test_k3_times_rho_at_rho_1_has_k2_gradient_for_every_token(seed, spread):
    """TRL's stock KL term, k3 * rho with rho = exp(logp - logp_old) and logp_old = logp.detach() (on-policy)."""
    theta, logp, ref_logp = distributions(seed, spread)
    rho = torch.exp(logp - logp.detach())
    assert torch.all(rho == 1.0)
    stock = kl_divergence(logp, ref_logp, "k3") * rho
    k2_values = kl_divergence(logp, ref_logp, "k2")
    for y, (got, expected) in enumerate(zip(per_token_gradients(stock, theta), per_token_gradients(k2_values, theta))):
        torch.testing.assert_close(got, expected, rtol=1e-12, atol=1e-14, msg=f"token {y}")


@pytest.mark.parametrize("base", BASE_ESTIMATORS)
@pytest.mark.parametrize(("seed", "spread"), CASES)
def test_straight_through_has_value_of_base_and_gradient_of_k2_per_token(base, seed, spread):
    theta, logp, ref_logp = distributions(seed, spread)
    straight = kl_divergence(logp, ref_logp, f"{base}+")
    assert torch.equal(straight.detach(), kl_divergence(logp, ref_logp, base).detach())
    k2_values = kl_divergence(logp, ref_logp, "k2")
    for y, (got, expected) in enumerate(
        zip(per_token_gradients(straight, theta), per_token_gradients(k2_values, theta))
    ):
        torch.testing.assert_close(got, expected, rtol=1e-14, atol=1e-15, msg=f"token {y}")


def test_k3_bit_for_bit_equal_to_stock_trl(tiny_model_dir, tmp_path):
    """Stock `_compute_loss` logs `kl`, the masked mean of its per-token k3 (times a ratio of exactly 1 on-policy): with
    a mask holding one token, that mean is the token's value, so each token is compared with stock's own."""
    trainer = build_stock_trainer(tiny_model_dir, tmp_path, beta=0.04)
    generator = torch.Generator().manual_seed(0)
    logp = -torch.rand(4, 16, generator=generator) * 5
    ref_logp = -torch.rand(4, 16, generator=generator) * 5
    ours = kl_divergence(logp, ref_logp, "k3")
    for i, j in itertools.product(range(4), range(16)):
        mask = torch.zeros(4, 16)
        mask[i, j] = 1.0
        stock_loss(trainer, logp, loss_inputs(ref_logp, mask))
        assert trainer._metrics["train"]["kl"][-1] == ours[i, j].item(), (i, j)


# --- values ---


@pytest.mark.parametrize(("seed", "spread"), CASES)
@pytest.mark.parametrize("estimator", ["k1", "k3"])
def test_unbiased_estimators_expectation_is_reverse_kl(estimator, seed, spread):
    _, logp, ref_logp = distributions(seed, spread)
    pi = logp.exp().detach()
    expected = true_kl(pi.tolist(), ref_logp.exp().tolist())
    estimate = (pi * kl_divergence(logp, ref_logp, estimator)).sum().item()
    assert estimate == pytest.approx(expected, rel=1e-12, abs=1e-15)
    assert expected > 0


X_GRID = [-40.0, -25.0, -20.0, -19.5, -3.0, -2.5, -1.0, -1e-3, 0.0, 1e-3, 0.7, 3.0, 10.0, 19.9, 20.0, 21.0, 35.0]


def values_at(estimator: str, xs: list[float]) -> torch.Tensor:
    """The estimator at log-ratios xs, with ref_logp = -1.5 and logp = ref_logp + x."""
    ref_logp = torch.full((len(xs),), -1.5, dtype=torch.float64)
    return kl_divergence(ref_logp + torch.tensor(xs, dtype=torch.float64), ref_logp, estimator)


def test_pointwise_values_match_formulas():
    ref_logp = torch.full((len(X_GRID),), -1.5, dtype=torch.float64)
    xs = (ref_logp + torch.tensor(X_GRID, dtype=torch.float64)) - ref_logp  # the log-ratios as the estimators see them
    formulas = {
        "k1": lambda x: x,
        "k2": lambda x: x * x / 2,
        "k3": lambda x: math.exp(-x) + x - 1,
        "abs": abs,
    }
    for estimator, formula in formulas.items():
        expected = torch.tensor([formula(x) for x in xs.tolist()], dtype=torch.float64)
        torch.testing.assert_close(values_at(estimator, X_GRID), expected, rtol=1e-13, atol=1e-13, msg=estimator)
    assert torch.equal(values_at("abs", X_GRID), values_at("k1", X_GRID).abs())


def test_low_var_kl_is_k3_inside_the_clamp_and_clamped_outside():
    k3_values, low_var = values_at("k3", X_GRID), values_at("low_var_kl", X_GRID)
    for x, k3_value, value in zip(X_GRID, k3_values.tolist(), low_var.tolist()):
        clamped_x = min(max(x, -20.0), 20.0)
        expected = min(max(math.exp(-clamped_x) + clamped_x - 1, -10.0), 10.0)
        assert value == pytest.approx(expected, rel=1e-13), x
        if -20 <= x <= 20 and k3_value <= 10:
            assert value == k3_value, x  # exactly k3 inside the clamp range
        else:
            assert value == 10.0, x  # both tails of k3 exceed 10 here
    assert low_var.max().item() == 10.0 and k3_values.max().item() > 1e8


def test_kl_divergence_clamp_bounds_value_and_stops_gradient():
    ref_logp = torch.full((len(X_GRID),), -1.5, dtype=torch.float64)
    logp = (ref_logp + torch.tensor(X_GRID, dtype=torch.float64)).requires_grad_(True)
    for estimator in ALL_ESTIMATORS:
        unclamped = kl_divergence(logp, ref_logp, estimator)
        clamped = kl_divergence(logp, ref_logp, estimator, clamp=2.0)
        assert torch.all(clamped.abs() <= 2.0), estimator
        inside = unclamped.abs() <= 2.0
        assert torch.equal(clamped[inside], unclamped[inside]), estimator
        assert torch.all(clamped[~inside].abs() == 2.0), estimator
        (gradient,) = torch.autograd.grad(clamped.sum(), logp)
        assert torch.all(gradient[~inside] == 0), estimator
    assert torch.all(kl_divergence(logp, ref_logp, "k1", clamp=2.0) >= -2.0)


@pytest.mark.parametrize("seed", range(20))
def test_expected_k3_is_non_negative_per_token(seed):
    """E_pi[k3] = sum_y pi(y) (exp(-x_y) + x_y - 1) = KL(pi || ref) >= 0, exactly by enumeration, also for a far
    reference and a near-deterministic policy."""
    for spread in (0.01, 1.0, 8.0):
        _, logp, ref_logp = distributions(seed, spread)
        pi = logp.exp().detach()
        values = kl_divergence(logp, ref_logp, "k3")
        assert torch.all(values >= 0)
        assert (pi * values).sum().item() >= 0


@settings(deadline=None, max_examples=200)
@given(x=st.floats(min_value=-30, max_value=30), ref=st.floats(min_value=-30, max_value=0))
def test_k3_is_non_negative_for_every_sample(x, ref):
    ref_logp = torch.tensor([ref], dtype=torch.float64)
    # k3 keeps TRL's formula exp(-x) + x - 1 for bit parity; near x = 0 its cancellation can round to -1 ulp of 1.
    assert kl_divergence(ref_logp + x, ref_logp, "k3").item() >= -4 * torch.finfo(torch.float64).eps


# --- registry ---


def test_builtin_kl_estimators_are_registered():
    assert set(ALL_ESTIMATORS) <= set(list_kl_estimators())
    assert all(list_kl_estimators()[name] for name in ALL_ESTIMATORS)  # each has a one-line description


def test_unknown_kl_estimator_lists_valid_choices():
    with pytest.raises(ValueError, match="k4") as error:
        kl_divergence(torch.zeros(2), torch.zeros(2), "k4")
    for name in ALL_ESTIMATORS:
        assert name in str(error.value)


@pytest.fixture
def registered_kl_names():
    names: list[str] = []
    yield names
    for name in names:
        _KL_ESTIMATORS._entries.pop(name, None)


def test_user_kl_estimator_by_name_and_duplicates(registered_kl_names):
    registered_kl_names.append("test_squared")

    @register_kl_estimator("test_squared")
    def squared(logp, ref_logp):
        """(log pi - log ref)^2."""
        return (logp - ref_logp) ** 2

    assert get_kl_estimator("test_squared") is squared
    assert kl_divergence(torch.tensor([1.0]), torch.tensor([-2.0]), "test_squared").item() == 9.0
    with pytest.raises(ValueError, match=r"test_squared.*override=True"):
        register_kl_estimator("test_squared")(lambda logp, ref_logp: logp)
    register_kl_estimator("test_squared", override=True)(lambda logp, ref_logp: logp - ref_logp)
    assert kl_divergence(torch.tensor([1.0]), torch.tensor([-2.0]), "test_squared").item() == 3.0
