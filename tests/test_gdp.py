"""Tests of 003's mu-GDP amplification bound and its (eps, delta) conversion."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

from shufflesim.protocols.bounds.closed_form import gdp
from shufflesim.protocols.bounds.result import BoundKind, BoundStatus
from shufflesim.protocols.errors import ParameterError
from shufflesim.protocols.randomizers import make_randomizer


def test_mu_at_odd_parameters():
    eps = np.array([0.3, 1.7, 0.9, 2.2])
    deltas = np.array([0.0, 0.01, 0.002, 0.0])
    q = (1 - deltas) / (1 + np.exp(eps))
    expected = math.sqrt(2 / (q.sum() - q.max()))
    assert gdp.gdp_mu(eps, deltas) == pytest.approx(expected, rel=1e-14)
    # the user removed is the one with the largest q (smallest budget): 0.3
    assert gdp.gdp_mu(eps) == pytest.approx(
        math.sqrt(2 / sum(1 / (1 + math.exp(e)) for e in (1.7, 0.9, 2.2))), rel=1e-14)


def test_identical_users():
    assert gdp.gdp_mu_identical(1.3, 501) == pytest.approx(gdp.gdp_mu(np.full(501, 1.3)))
    assert gdp.gdp_mu_identical(1.3, 501) == pytest.approx(
        math.sqrt(2 * (1 + math.exp(1.3)) / 500), rel=1e-14)
    # no overflow for large budgets
    assert math.isfinite(gdp.gdp_mu_identical(700.0, 10))


@pytest.mark.parametrize("mu", [0.05, 0.7, 3.0])
@pytest.mark.parametrize("epsilon", [0.0, 0.2, 1.5, 4.0])
def test_delta_matches_the_gaussian_hockey_stick(mu, epsilon):
    """delta(eps) = int (phi(x - mu) - e^eps phi(x))_+ dx, integrated from the crossing point
    x* = eps/mu + mu/2 (the mu-GDP trade-off of N(0,1) vs N(mu,1))."""
    crossing = epsilon / mu + mu / 2

    def integrand(x):
        return stats.norm.pdf(x, mu) - math.exp(epsilon) * stats.norm.pdf(x)

    direct = integrate.quad(integrand, crossing, math.inf, epsabs=1e-15, epsrel=1e-12)[0]
    got = gdp.gdp_delta(epsilon, mu)
    assert got.lower <= got.upper
    assert got.lower == pytest.approx(direct, rel=1e-8, abs=1e-14)
    assert got.upper == pytest.approx(direct, rel=1e-8, abs=1e-14)


def test_epsilon_is_on_the_conservative_side():
    for mu in (0.01, 0.3, 2.0):
        for delta in (1e-3, 1e-6, 1e-10):
            search = gdp.gdp_epsilon(mu, delta)
            assert gdp.gdp_delta(search.value, mu).upper <= delta
            if search.value > 0:
                below = search.value - max(search.error, 1e-9 * search.value) * 1.01
                assert gdp.gdp_delta(max(below, 0.0), mu).upper > delta * (1 - 1e-6)
                assert search.error <= 1e-3 * search.value + 1e-12


def test_bound_record_and_statuses():
    r = make_randomizer("krr", epsilon0=2.0, domain_size=5)
    result = gdp.gdp_bound(r, 10**4, 1e-6)
    assert result.method == "gspa-gdp" and result.kind is BoundKind.UPPER
    assert result.status is BoundStatus.APPROXIMATE
    assert "stronger-clone" in result.note and "Berry-Esseen" in result.note
    assert gdp.STATUSES == (BoundStatus.APPROXIMATE, BoundStatus.STRONGER_CLONE)
    mu = gdp.gdp_mu_identical(2.0, 10**4)
    assert result.epsilon == pytest.approx(gdp.gdp_epsilon(mu, 1e-6).value)


def test_monotone_in_n_and_eps0():
    r = make_randomizer("krr", epsilon0=1.0, domain_size=5)
    small = gdp.gdp_bound(r, 10, 1e-6)
    assert small.epsilon == 1.0 and "capped" in small.note  # never above eps0
    by_n = [gdp.gdp_bound(r, n, 1e-6).epsilon for n in (100, 10**3, 10**5, 10**7)]
    assert all(b < a for a, b in zip(by_n, by_n[1:], strict=False))
    by_eps0 = [gdp.gdp_bound(make_randomizer("brr", epsilon0=e), 10**4, 1e-6).epsilon
               for e in (0.1, 0.5, 1, 3, 6)]
    assert all(b > a for a, b in zip(by_eps0, by_eps0[1:], strict=False))


def test_personalized_budgets_of_003_experiments():
    """003 Sec. 6: n = 10,000 users in three groups (0.54 / 0.37 / 0.09 with budgets 0.1 / 0.5
    / 1.0), central delta = 1e-4. Mixed budgets lie between the uniform extremes."""
    n = 10_000
    eps = np.repeat([0.1, 0.5, 1.0], [5400, 3700, 900])
    mixed = gdp.gdp_personalized_bound(eps, 1e-4)
    low = gdp.gdp_personalized_bound(np.full(n, 0.1), 1e-4)
    high = gdp.gdp_personalized_bound(np.full(n, 1.0), 1e-4)
    assert low.epsilon < mixed.epsilon < high.epsilon
    assert "n = 10000" in mixed.note


def test_validation():
    with pytest.raises(ParameterError, match="epsilons"):
        gdp.gdp_mu([1.0])
    with pytest.raises(ParameterError, match="epsilons"):
        gdp.gdp_mu([1.0, -0.5])
    with pytest.raises(ParameterError, match="deltas"):
        gdp.gdp_mu([1.0, 1.0], [0.0, 1.0])
    with pytest.raises(ParameterError, match="^n "):
        gdp.gdp_bound(make_randomizer("brr", epsilon0=1.0), 1, 1e-6)
    with pytest.raises(ParameterError, match="delta"):
        gdp.gdp_bound(make_randomizer("brr", epsilon0=1.0), 100, 0.0)
    with pytest.raises(ParameterError, match="mu"):
        gdp.gdp_delta(0.5, -1.0)
