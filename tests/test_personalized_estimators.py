"""Estimators for personalized budgets (protocols/estimators/personalized.py).

Monte Carlo checks use fixed seeds. Means are tested within 6 standard errors (SE from the
exact variance); sample variances within 6 sd of the chi-square law of (R - 1) s^2 / sigma^2
(sd of s^2 / sigma^2 ~ sqrt(2 / (R - 1)) for near-normal estimates: sums of thousands of
independent reports); Monte Carlo MSEs within 6 SE estimated from the squared errors. Under the
normal approximation each band has two-sided level ~2e-9.
"""

import numpy as np
import pytest

from shufflesim.protocols.errors import ParameterError
from shufflesim.protocols.estimators import estimator_names, make_estimator
from shufflesim.protocols.estimators.frequency import FrequencyEstimator
from shufflesim.protocols.estimators.mean import MeanEstimator
from shufflesim.protocols.estimators.personalized import (
    PersonalizedFrequencyEstimator,
    PersonalizedMeanEstimator,
    support_arrays,
)
from shufflesim.protocols.randomizers import make_randomizer

K_SE = 6.0
BUDGETS = {
    "three-groups": ([0.1, 0.5, 1.0], [0.54, 0.37, 0.09]),
    "mixed": ([0.01, 0.5], [0.5, 0.5]),
    "wide": ([0.2, 2.0, 4.0], [0.3, 0.3, 0.4]),
}


def _budget_vector(name, n, rng):
    values, fractions = BUDGETS[name]
    counts = np.floor(np.asarray(fractions) * n).astype(int)
    counts[0] += n - counts.sum()
    eps = np.repeat(values, counts)
    return rng.permutation(eps)


def _freq(randomizer, weighting, **kw):
    return PersonalizedFrequencyEstimator(randomizer, weighting, **kw)


def _mean(randomizer, weighting, **kw):
    return PersonalizedMeanEstimator(randomizer, weighting, **kw)


def _check_variance(sample_var, exact, repetitions):
    band = K_SE * np.sqrt(2.0 / (repetitions - 1))
    np.testing.assert_array_less(np.abs(sample_var / exact - 1.0), band)


def test_registered_names():
    assert {"gspa_frequency", "uniform_frequency", "weighted_frequency", "gspa_mean",
            "weighted_mean"} <= set(estimator_names())
    brr = make_randomizer("brr", epsilon0=1.0)
    est = make_estimator("weighted_frequency", brr)
    assert isinstance(est, PersonalizedFrequencyEstimator) and est.weighting == "inverse_variance"
    assert est.tagged and not make_estimator("gspa_frequency", brr).tagged
    lap = make_randomizer("laplace", epsilon0=1.0)
    assert make_estimator("gspa_mean", lap).weighting == "gspa"


@pytest.mark.parametrize("name,kw", [("brr", {}), ("krr", {"domain_size": 5}),
                                     ("oue", {"domain_size": 4}), ("rappor", {"domain_size": 4}),
                                     ("olh", {"domain_size": 6}), ("blh", {"domain_size": 6}),
                                     ("hr", {"domain_size": 8})])
def test_support_arrays_match_the_scalar_support_probabilities(name, kw):
    r = make_randomizer(name, epsilon0=1.3, **kw)
    eps = np.array([[0.05, 0.7], [1.3, 3.0]])
    p, q = support_arrays(r, eps)
    assert p.shape == q.shape == eps.shape
    for e, pe, qe in zip(eps.ravel(), p.ravel(), q.ravel(), strict=True):
        ps, qs = r.support_probabilities(float(e))
        assert pe == pytest.approx(ps, rel=1e-14) and qe == pytest.approx(qs, rel=1e-14)


def test_gspa_binary_formula_003_alg_2():
    """z = (A - B) / (n - 2B), A = number of ones, B = sum 1/(1 + e^eps_i)."""
    rng = np.random.default_rng(1)
    brr = make_randomizer("brr", epsilon0=1.0)
    n = 1000
    eps = _budget_vector("three-groups", n, rng)
    x = (rng.random(n) < 0.7).astype(np.int64)
    reports = brr.randomize(x, rng, epsilon=eps)
    a = reports.sum()
    b = (1.0 / (1.0 + np.exp(eps))).sum()
    est = _freq(brr, "gspa").estimate_reports(reports, eps)
    assert est[1] == pytest.approx((a - b) / (n - 2 * b), rel=1e-12)
    assert est.sum() == pytest.approx(1.0, rel=1e-12)


@pytest.mark.parametrize("weighting", ["gspa", "uniform", "inverse_variance"])
def test_constant_budgets_give_the_standard_estimators(weighting):
    rng = np.random.default_rng(2)
    krr = make_randomizer("krr", epsilon0=0.8, domain_size=4)
    x = rng.integers(0, 4, size=(3, 300))
    reports = krr.randomize(x, rng)
    ours = _freq(krr, weighting)
    standard = FrequencyEstimator(krr)
    np.testing.assert_allclose(ours.estimate(ours.aggregate(reports)),
                               standard.estimate(krr.aggregate(reports), 300), rtol=1e-10,
                               atol=1e-12)
    counts = np.stack([(x == v).sum(axis=-1) for v in range(4)], axis=-1)
    np.testing.assert_allclose(ours.variance(x, 0.8), standard.variance(counts), rtol=1e-12)
    lap = make_randomizer("laplace", epsilon0=0.8)
    xv = rng.random((3, 300))
    y = lap.randomize(xv, rng)
    mean = _mean(lap, weighting)
    np.testing.assert_allclose(mean.estimate(mean.aggregate(y)),
                               MeanEstimator(lap).estimate(lap.aggregate(y), 300), rtol=1e-12)
    np.testing.assert_allclose(mean.variance(xv, 0.8), MeanEstimator(lap).variance(xv, 300),
                               rtol=1e-12)


FREQUENCY_CASES = [("brr", {}, "three-groups"), ("krr", {"domain_size": 4}, "wide"),
                   ("oue", {"domain_size": 3}, "mixed")]


@pytest.mark.parametrize("name,kw,budgets", FREQUENCY_CASES)
@pytest.mark.parametrize("weighting", ["gspa", "uniform", "inverse_variance"])
def test_frequency_conditional_moments_by_monte_carlo(name, kw, budgets, weighting):
    """Fixed data and fixed assignment: E[T] = sum_i w_i 1[x_i = v], Var[T] exact."""
    if weighting != "gspa" and name not in ("brr", "krr", "oue"):
        pytest.skip("tagged weights need support sets")
    rng = np.random.default_rng(3)
    r = make_randomizer(name, epsilon0=1.0, **kw)
    d = r.input_domain.size
    n, reps = (300, 2000) if name == "oue" else (600, 3000)
    eps = _budget_vector(budgets, n, rng)
    x = rng.integers(0, d, size=n)
    est = _freq(r, weighting)
    sample = est.estimate_reports(r.randomize(np.broadcast_to(x, (reps, n)), rng,
                                              epsilon=np.broadcast_to(eps, (reps, n))), eps)
    mean, var = est.expectation(x, eps), est.variance(x, eps)
    np.testing.assert_array_less(np.abs(sample.mean(axis=0) - mean), K_SE * np.sqrt(var / reps))
    _check_variance(sample.var(axis=0, ddof=1), var, reps)


@pytest.mark.parametrize("name", ["laplace", "piecewise", "duchi"])
@pytest.mark.parametrize("weighting", ["gspa", "inverse_variance"])
def test_mean_conditional_moments_by_monte_carlo(name, weighting):
    rng = np.random.default_rng(4)
    r = make_randomizer(name, epsilon0=1.0)
    n, reps = 500, 3000
    eps = _budget_vector("wide", n, rng)
    domain = r.input_domain
    x = rng.uniform(domain.low, domain.high, size=n)
    est = _mean(r, weighting)
    sample = est.estimate_reports(r.randomize(np.broadcast_to(x, (reps, n)), rng,
                                              epsilon=np.broadcast_to(eps, (reps, n))), eps)
    mean, var = est.expectation(x, eps), est.variance(x, eps)
    assert abs(sample.mean() - mean) < K_SE * np.sqrt(var / reps)
    _check_variance(sample.var(ddof=1), var, reps)


def test_design_mse_by_monte_carlo():
    """Budgets assigned to users uniformly at random in every repetition: every weighting is
    unbiased for the sample's truth and its MSE is design_mse."""
    rng = np.random.default_rng(5)
    krr = make_randomizer("krr", epsilon0=1.0, domain_size=3)
    lap = make_randomizer("laplace", epsilon0=1.0)
    n, reps = 400, 4000
    eps = _budget_vector("wide", n, rng)
    x = rng.integers(0, 3, size=n)
    xv = rng.beta(0.5, 0.5, size=n)
    assigned = rng.permuted(np.broadcast_to(eps, (reps, n)), axis=1)
    cases = [(_freq(krr, w), krr, x) for w in ("gspa", "uniform", "inverse_variance")]
    cases += [(_mean(lap, w), lap, xv) for w in ("gspa", "inverse_variance")]
    for est, r, values in cases:
        reports = r.randomize(np.broadcast_to(values, (reps, n)), rng, epsilon=assigned)
        errors = est.estimate_reports(reports, assigned) - est.truth(values)
        squared = errors**2
        exact = est.design_mse(values, eps)
        se_mean = np.sqrt(exact / reps)
        np.testing.assert_array_less(np.abs(errors.mean(axis=0)), K_SE * se_mean)
        se_mse = squared.std(axis=0, ddof=1) / np.sqrt(reps)
        np.testing.assert_array_less(np.abs(squared.mean(axis=0) - exact), K_SE * se_mse)


def test_design_mse_matches_exhaustive_assignments():
    """n = 5: average the conditional MSE over all 120 assignments."""
    import itertools

    krr = make_randomizer("krr", epsilon0=1.0, domain_size=3)
    lap = make_randomizer("piecewise", epsilon0=1.0)
    eps = np.array([0.1, 0.5, 0.5, 1.0, 3.0])
    x = np.array([0, 0, 1, 2, 2])
    xv = np.array([-1.0, -0.2, 0.3, 0.9, 1.0])
    perms = np.array(list(itertools.permutations(range(5))))
    for est, values in [(_freq(krr, "inverse_variance"), x), (_freq(krr, "gspa"), x),
                        (_mean(lap, "inverse_variance", data_variance=0.3), xv)]:
        brute = est.mse(np.broadcast_to(values, (len(perms), 5)), eps[perms]).mean(axis=0)
        np.testing.assert_allclose(est.design_mse(values, eps), brute, rtol=1e-12)


def test_weighted_never_worse_than_unweighted_over_a_grid():
    """Inverse-variance weights: (a) with data_variance = 0 the noise variance sum w_i^2 nu_i is
    at most that of the equal and of 003's weights (brr and Laplace: nu_i does not depend on the
    data); (b) with the reference set to the truth (f0 = f_v, tau = n f (1 - f) / (n - 1); for
    means tau = S_xx / (n - 1)) the design MSE is at most every other weighting's."""
    rng = np.random.default_rng(6)
    brr = make_randomizer("brr", epsilon0=1.0)
    krr = make_randomizer("krr", epsilon0=1.0, domain_size=5)
    lap = make_randomizer("laplace", epsilon0=1.0)
    for _ in range(60):
        n = int(rng.integers(10, 400))
        groups = int(rng.integers(1, 5))
        values = np.exp(rng.uniform(np.log(0.01), np.log(5.0), size=groups))
        eps = values[rng.integers(0, groups, size=n)]
        x = (rng.random(n) < rng.random()).astype(np.int64)
        xv = rng.random(n) ** rng.uniform(0.2, 5)
        slack = 1 + 1e-12
        for r, values_, freq in ((brr, x, True), (lap, xv, False)):
            ctor = _freq if freq else _mean
            weighted = ctor(r, "inverse_variance").variance(values_, eps)
            for other in ("uniform", "gspa") if freq else ("gspa",):
                assert np.all(weighted <= ctor(r, other).variance(values_, eps) * slack)
        xk = rng.integers(0, 5, size=n)
        f = np.bincount(xk, minlength=5) / n
        for v in range(5):
            best = _freq(krr, "inverse_variance", reference_frequency=float(f[v]),
                         data_variance=float(n * f[v] * (1 - f[v]) / (n - 1)))
            mse = best.design_mse(xk, eps)[v]
            for other in ("uniform", "gspa", "inverse_variance"):
                assert mse <= _freq(krr, other).design_mse(xk, eps)[v] * slack
        tau = float(np.var(xv, ddof=1))
        best = _mean(lap, "inverse_variance", data_variance=tau).design_mse(xv, eps)
        for other in ("gspa", "inverse_variance"):
            assert best <= _mean(lap, other).design_mse(xv, eps) * slack


def test_tagged_unary_aggregate_matches_a_direct_sum():
    rng = np.random.default_rng(7)
    oue = make_randomizer("oue", epsilon0=1.0, domain_size=4)
    eps = rng.uniform(0.2, 2.0, size=(2, 50))
    x = rng.integers(0, 4, size=(2, 50))
    bits = oue.randomize(x, rng, epsilon=eps)
    est = _freq(oue, "inverse_variance")
    p, q = support_arrays(oue, eps)
    w = est.weights(eps)
    direct = (w[..., None] * (bits - q[..., None]) / (p - q)[..., None]).sum(axis=1)
    np.testing.assert_allclose(est.estimate_reports(bits, eps), direct, rtol=1e-10)


def test_bad_inputs_name_the_field():
    brr = make_randomizer("brr", epsilon0=1.0)
    with pytest.raises(ParameterError, match="weighting"):
        PersonalizedFrequencyEstimator(brr, "optimal")
    with pytest.raises(ParameterError, match="estimator.name"):
        PersonalizedFrequencyEstimator(make_randomizer("laplace", epsilon0=1.0))
    with pytest.raises(ParameterError, match="support set"):
        make_estimator("weighted_frequency", make_randomizer("olh", epsilon0=1.0,
                                                             domain_size=8))
    with pytest.raises(ParameterError, match="estimator.name"):
        make_estimator("weighted_mean", brr)
    with pytest.raises(ParameterError, match="epsilon"):
        _freq(brr, "gspa").variance(np.array([0, 1]), np.array([0.5, -1.0]))
    with pytest.raises(ParameterError, match="reference_frequency"):
        _freq(brr, "inverse_variance", reference_frequency=1.5)
