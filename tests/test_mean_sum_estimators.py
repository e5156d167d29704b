"""Mean and sum estimators over the numeric randomizers.

Oracles: exact enumeration of the distribution of the aggregate for small n (discrete reports),
the per-user moments by enumeration / integration (tests/test_randomizers_numeric.py), and Monte
Carlo with fixed seeds. Monte Carlo bands: unbiasedness within 6 standard errors of the exact
variance (two-sided significance ~2e-9 under normality); the sample variance within 6 standard
errors estimated from the sample fourth moment.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from shufflesim.protocols.errors import ParameterError
from shufflesim.protocols.estimators.mean import MeanEstimator
from shufflesim.protocols.estimators.sum import SumEstimator
from shufflesim.protocols.randomizers import make_randomizer
from shufflesim.protocols.randomizers.duchi import Duchi
from shufflesim.protocols.randomizers.krr import KRR
from shufflesim.protocols.randomizers.laplace import Laplace
from shufflesim.protocols.randomizers.summation import Summation

SIGMAS = 6.0


def _values(r, n, rng):
    domain = r.input_domain
    if hasattr(domain, "size"):
        return rng.integers(0, domain.size, size=n)
    return rng.uniform(domain.low, domain.high, size=n)


def _check_mean(samples, expected, variance):
    """|mean - expected| within SIGMAS standard errors of the exact variance."""
    se = math.sqrt(variance / samples.size)
    assert abs(samples.mean() - expected) <= SIGMAS * se


def _check_variance(samples, variance):
    """Sample variance within SIGMAS standard errors (from the sample fourth moment)."""
    centered = samples - samples.mean()
    s2 = centered.var()
    m4 = np.mean(centered**4)
    se = math.sqrt((m4 - s2**2) / samples.size)
    assert abs(s2 - variance) <= SIGMAS * se
    # The band is informative: it is narrower than a 10 % error.
    assert SIGMAS * se < 0.1 * variance


CONFIGS = [
    ("laplace", {"epsilon0": 1.0}),
    ("laplace_binary", {"epsilon0": 0.5}),
    ("piecewise", {"epsilon0": 2.0}),
    ("duchi", {"epsilon0": 0.8}),
    ("summation", {"epsilon0": 3.0, "precision": 8}),
    ("summation", {"gamma": 0.02, "precision": 2}),
]


@pytest.mark.parametrize(("name", "params"), CONFIGS)
def test_unbiased_and_variance_by_monte_carlo(name, params):
    r = make_randomizer(name, **params)
    rng = np.random.default_rng(11)
    n, reps = 40, 25_000
    values = _values(r, n, rng)
    if name == "summation" and r.precision == 2:
        values = np.full(n, 0.25)  # mid-grid: the randomized-rounding term dominates
    outputs = r.randomize(np.broadcast_to(values, (reps, n)), rng)
    aggregate = r.aggregate(outputs)
    assert aggregate.shape == (reps,)
    for est, truth in [(MeanEstimator(r), values.mean()), (SumEstimator(r), values.sum())]:
        estimates = est.estimate(aggregate, n)
        variance = float(est.variance(values, n))
        _check_mean(estimates, truth, variance)
        _check_variance(estimates, variance)


def test_summation_rounding_term_is_needed():
    """At mid-grid with little randomized response, dropping the rounding variance f (1 - f)
    would be off by a factor > 10: the Monte Carlo test above would catch it."""
    r = Summation(gamma=0.02, precision=2)
    est = MeanEstimator(r)
    total = float(est.per_user_variance(0.25))
    without_rounding = total - (1 - 0.02) * 0.25 / ((1 - 0.02) * 2) ** 2
    assert total > 10 * without_rounding


def _exact_sum_distribution(r, values):
    """Exact pmf of the aggregate (sum of reports) by convolving the per-user pmfs."""
    dist = np.array([1.0])
    for row in r.output_pmf(values):  # loop over the few users of a brute-force oracle
        dist = np.convolve(dist, row)
    count = np.arange(dist.size)  # sum of the users' output indices
    if isinstance(r, Summation):  # reports are the indices 0..k
        return count, dist
    # Duchi: index 1 is +B, 0 is -B, so the sum is B (2 * #plus - n).
    return r.output_bound * (2 * count - len(values)), dist


@pytest.mark.parametrize(
    "r", [Summation(gamma=0.3, precision=4), Summation(2.0, precision=1), Duchi(0.6)], ids=repr
)
def test_exact_moments_by_enumeration(r):
    values = np.array([0.0, 0.13, 0.5, 0.77, 1.0])
    if isinstance(r, Duchi):
        values = 2 * values - 1
    n = values.size
    support, dist = _exact_sum_distribution(r, values)
    assert dist.sum() == pytest.approx(1.0, abs=1e-13)
    for est, truth in [(MeanEstimator(r), values.mean()), (SumEstimator(r), values.sum())]:
        estimates = est.estimate(support, n)
        mean = float(dist @ estimates)
        var = float(dist @ (estimates - mean) ** 2)
        assert mean == pytest.approx(truth, abs=1e-12)
        assert var == pytest.approx(float(est.variance(values, n)), rel=1e-10)


def test_004_debiasing_analyzer():
    """SumEstimator on summation is 004's analyzer z = (S / k - gamma n / 2) / (1 - gamma)."""
    r = Summation(gamma=0.1, precision=16)
    gamma = r.uniform_probability
    aggregate = np.array([0, 100, 977])
    n = 70
    expected = (aggregate / 16 - gamma * n / 2) / (1 - gamma)
    np.testing.assert_allclose(SumEstimator(r).estimate(aggregate, n), expected, rtol=1e-13)
    np.testing.assert_allclose(MeanEstimator(r).estimate(aggregate, n), expected / n, rtol=1e-13)


@pytest.mark.parametrize("eps", [0.3, 1.0, 4.0])
def test_closed_form_per_user_variances(eps):
    x = np.linspace(-1, 1, 9)
    s = math.exp(eps / 2)
    piecewise = MeanEstimator(make_randomizer("piecewise", epsilon0=eps))
    np.testing.assert_allclose(piecewise.per_user_variance(x),
                               x**2 / (s - 1) + (s + 3) / (3 * (s - 1) ** 2), rtol=1e-12)
    b = (math.exp(eps) + 1) / (math.exp(eps) - 1)
    duchi = MeanEstimator(Duchi(eps))
    np.testing.assert_allclose(duchi.per_user_variance(x), b**2 - x**2, rtol=1e-12)
    laplace = MeanEstimator(Laplace(eps))
    np.testing.assert_allclose(laplace.per_user_variance((x + 1) / 2), 2 / eps**2, rtol=1e-14)
    # Var of the mean = 2 / (eps^2 n) for Laplace.
    assert float(laplace.variance(np.full(50, 0.2), 50)) == pytest.approx(2 / (eps**2 * 50))


def test_summation_rounding_variance_bound_of_004():
    """Rounding alone (gamma -> 0) has variance f (1 - f) / k^2 <= 1 / (4 k^2) per user (004
    Sec. 4.1), with equality at mid-grid."""
    k = 12
    r = Summation(40.0, precision=k)  # gamma ~ 13 / e^40: pure rounding up to 1e-16
    est = MeanEstimator(r)
    x = np.linspace(0, 1, 1001)
    v = est.per_user_variance(x)
    assert v.max() <= 1 / (4 * k**2) * (1 + 1e-9)
    assert float(est.per_user_variance(0.5 / k)) == pytest.approx(1 / (4 * k**2), rel=1e-9)
    assert float(est.per_user_variance(3 / k)) == pytest.approx(0.0, abs=1e-15)


def test_personalized_variance_and_unbiasedness():
    r = Laplace(1.0)
    rng = np.random.default_rng(12)
    n, reps = 30, 20_000
    values = rng.uniform(0, 1, n)
    budgets = np.where(np.arange(n) < 20, 0.5, 2.0)
    est = MeanEstimator(r)
    variance = float(est.variance(values, n, epsilon=budgets))
    assert variance == pytest.approx((20 * 2 / 0.25 + 10 * 2 / 4.0) / n**2)
    outputs = r.randomize(np.broadcast_to(values, (reps, n)), rng, epsilon=budgets)
    estimates = est.estimate(r.aggregate(outputs), n)
    _check_mean(estimates, values.mean(), variance)
    _check_variance(estimates, variance)
    with pytest.raises(ParameterError, match="epsilon"):
        MeanEstimator(Summation(1.0)).variance(np.full(3, 0.5), 3, epsilon=np.ones(3))


def test_batched_and_scalar_values():
    est = SumEstimator(make_randomizer("piecewise", epsilon0=1.0))
    values = np.random.default_rng(13).uniform(-1, 1, size=(3, 25))
    batched = est.variance(values, 25)
    assert batched.shape == (3,)
    for row in range(3):
        assert batched[row] == pytest.approx(float(est.variance(values[row], 25)))
    assert float(est.variance(0.4, 25)) == pytest.approx(float(est.variance(np.full(25, 0.4), 25)))
    assert est.estimate(np.array([1.0, 2.0]), np.array([10, 20])).shape == (2,)


def test_errors_name_the_estimator_and_randomizer():
    for cls, name in [(MeanEstimator, "mean"), (SumEstimator, "sum")]:
        with pytest.raises(ParameterError, match="krr") as info:
            cls(KRR(1.0, domain_size=3))
        assert info.value.field == "estimator.name" and info.value.value == name
    est = MeanEstimator(Laplace(1.0))
    with pytest.raises(ParameterError, match="number of users on the last axis") as info:
        est.variance(np.zeros(5), 6)
    assert info.value.field == "n"
    with pytest.raises(ParameterError, match="number of users") as info:
        est.estimate(np.array([1.0]), 0)
    assert info.value.field == "n"
    with pytest.raises(ParameterError, match="values"):
        est.variance(np.array([0.5, 1.5]), 2)
