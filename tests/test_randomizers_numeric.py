"""Numeric local randomizers: laplace, laplace_binary, piecewise, duchi, summation.

Statistical tests use fixed seeds. Goodness-of-fit tests reject at significance 1e-6 (so a
correct implementation fails with probability <= 1e-6 per test before the seed is fixed); each
such test is paired with a power check showing that the same sample size rejects a slightly wrong
distribution.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from scipy import integrate, stats

from shufflesim.protocols.errors import ParameterError
from shufflesim.protocols.randomizers import make_randomizer, randomizer_names
from shufflesim.protocols.randomizers.base import Categorical, Interval
from shufflesim.protocols.randomizers.duchi import Duchi
from shufflesim.protocols.randomizers.laplace import Laplace, LaplaceBinary
from shufflesim.protocols.randomizers.piecewise import Piecewise
from shufflesim.protocols.randomizers.summation import Summation, shuffle_gamma

ALPHA = 1e-6
NAMES = ["laplace", "laplace_binary", "piecewise", "duchi", "summation"]
EPSILONS = [0.1, 1.0, 3.7]


def _domain_points(r, count=7):
    domain = r.input_domain
    if isinstance(domain, Categorical):
        return np.arange(domain.size)
    return np.linspace(domain.low, domain.high, count)


def _support(r, x):
    """Integration limits and breakpoints of the density of R(x)."""
    if isinstance(r, Piecewise):
        c = r.output_bound
        left = (c + 1) * x / 2 - (c - 1) / 2
        return -c, c, [left, left + c - 1]
    return -np.inf, np.inf, [float(x)]


def _integrate(f, low, high, points):
    """Integral of f over [low, high] split at the breakpoints (quad on each finite piece)."""
    edges = [low] + sorted(p for p in points if low < p < high) + [high]
    total = 0.0
    for a, b in zip(edges[:-1], edges[1:], strict=True):
        total += integrate.quad(f, a, b, epsabs=1e-13, epsrel=1e-12, limit=200)[0]
    return total


# -- registry, parameters, shapes ------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_registered_with_valid_defaults(name):
    assert name in randomizer_names()
    r = make_randomizer(name, epsilon0=1.0)
    assert dataclasses.fields(r)[0].name == "epsilon0"
    assert r.epsilon0 == 1.0
    assert r.output_kind == ("discrete" if name in ("duchi", "summation") else "continuous")
    if r.output_kind == "continuous":
        assert r.output_size is None and callable(r.cdf)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("bad", [0.0, -1.0, math.inf, math.nan, "1", True])
def test_bad_epsilon0_is_rejected(name, bad):
    with pytest.raises(ParameterError, match="epsilon0"):
        make_randomizer(name, epsilon0=bad)


def test_bad_summation_parameters():
    with pytest.raises(ParameterError, match="precision"):
        Summation(1.0, precision=0)
    with pytest.raises(ParameterError, match="gamma"):
        Summation(gamma=1.0)
    with pytest.raises(ParameterError, match="gamma"):
        Summation(gamma=0.0)
    with pytest.raises(ParameterError, match="not both"):
        Summation(1.0, gamma=0.5)
    with pytest.raises(ParameterError, match="epsilon0"):
        Summation()
    with pytest.raises(ParameterError, match="unknown parameter"):
        make_randomizer("summation", epsilon0=1.0, k=3)


@pytest.mark.parametrize(
    ("name", "bad"),
    [("laplace", 1.5), ("laplace", -0.1), ("piecewise", 1.01), ("piecewise", -2.0),
     ("duchi", 1.2), ("summation", 1.001), ("summation", -0.5), ("laplace_binary", 2),
     ("laplace_binary", 0.5)],
)
def test_out_of_domain_values_are_rejected(name, bad):
    r = make_randomizer(name, epsilon0=1.0)
    with pytest.raises(ParameterError, match="values"):
        r.randomize(np.array([bad]), np.random.default_rng(0))


@pytest.mark.parametrize("name", NAMES)
def test_batched_shapes_and_sum_aggregate(name):
    r = make_randomizer(name, epsilon0=1.0)
    values = np.resize(_domain_points(r), (4, 3, 7))
    out = r.randomize(values, np.random.default_rng(1))
    assert out.shape == values.shape + r.output_shape
    agg = r.aggregate(out)
    assert agg.shape == (4, 3)
    np.testing.assert_allclose(agg, out.sum(axis=-1))
    assert r.log_prob(values[..., None], out[..., None, :]).shape == values.shape + (7,)


# -- declared distributions --------------------------------------------------------------------
@pytest.mark.parametrize("eps", EPSILONS)
@pytest.mark.parametrize("cls", [Laplace, LaplaceBinary, Piecewise])
def test_density_integrates_to_one_and_is_unbiased(cls, eps):
    r = cls(eps)
    for x in _domain_points(r, 5):
        low, high, points = _support(r, x)

        def density(y, x=x):
            return math.exp(r.log_prob(x, y))

        mass = _integrate(density, low, high, points)
        mean = _integrate(lambda y, d=density: y * d(y), low, high, points)
        second = _integrate(lambda y, d=density: y * y * d(y), low, high, points)
        assert mass == pytest.approx(1.0, abs=1e-9)
        assert mean == pytest.approx(float(x), abs=1e-8)
        # The exact per-report variance used by the estimators matches the integral.
        assert second - mean**2 == pytest.approx(float(r.report_variance(x)), rel=1e-8)


@pytest.mark.parametrize("eps", EPSILONS)
@pytest.mark.parametrize("cls", [Laplace, LaplaceBinary, Piecewise])
def test_cdf_is_the_integral_of_the_density(cls, eps):
    r = cls(eps)
    for x in _domain_points(r, 4):
        low, high, points = _support(r, x)
        start = low if np.isfinite(low) else float(x) - 60.0 / eps
        for t in np.linspace(start + 1e-3, (high if np.isfinite(high) else x + 5 / eps), 9):
            expected = _integrate(lambda y, x=x: math.exp(r.log_prob(x, y)), start, t, points)
            assert float(r.cdf(x, t)) == pytest.approx(expected, abs=1e-9)
    # Vectorized: broadcasting x against t.
    xs = _domain_points(r, 3)[:, None]
    ts = np.linspace(-2, 2, 5)[None, :]
    assert r.cdf(xs, ts).shape == (xs.shape[0], 5)
    assert np.all(np.diff(r.cdf(xs, ts), axis=-1) >= 0)


@pytest.mark.parametrize("eps", EPSILONS)
def test_piecewise_density_values(eps):
    """The two density levels of 001 / Wang et al.: p = (e^eps - e^{eps/2}) / (2 e^{eps/2} + 2)
    and p / e^eps, on [-C, C] with C = (e^{eps/2} + 1) / (e^{eps/2} - 1)."""
    r = Piecewise(eps)
    c = (math.exp(eps / 2) + 1) / (math.exp(eps / 2) - 1)
    p = (math.exp(eps) - math.exp(eps / 2)) / (2 * math.exp(eps / 2) + 2)
    assert r.output_bound == pytest.approx(c, rel=1e-13)
    assert math.exp(r.log_prob(1.0, (1 + c) / 2)) == pytest.approx(p, rel=1e-12)
    assert math.exp(r.log_prob(1.0, -c / 2 - 0.5)) == pytest.approx(p / math.exp(eps), rel=1e-12)
    assert r.log_prob(0.0, c * 1.0001) == -np.inf


@pytest.mark.parametrize("eps", EPSILONS)
def test_discrete_pmfs_are_distributions(eps):
    rng = np.random.default_rng(2)
    for r in [Duchi(eps), Summation(eps, precision=7), Summation(eps, precision=1)]:
        inputs = rng.uniform(r.input_domain.low, r.input_domain.high, size=50)
        pmf = r.output_pmf(inputs)
        assert pmf.shape == (50, r.output_size)
        np.testing.assert_allclose(pmf.sum(axis=1), 1.0, atol=1e-14)
        outputs = r.outputs_from_index(np.arange(r.output_size))
        np.testing.assert_array_equal(r.output_index(outputs), np.arange(r.output_size))
        # Conditional mean and variance by enumeration match the declared moments.
        a, b = r.report_affine
        mean = pmf @ outputs
        np.testing.assert_allclose(mean, a + b * inputs, rtol=1e-12, atol=1e-12)
        var = pmf @ outputs.astype(float) ** 2 - mean**2
        np.testing.assert_allclose(var, r.report_variance(inputs), rtol=1e-9, atol=1e-12)


def test_duchi_probabilities():
    eps = 0.8
    r = Duchi(eps)
    e = math.exp(eps)
    assert r.output_bound == pytest.approx((e + 1) / (e - 1), rel=1e-14)
    for x in [-1.0, -0.3, 0.0, 0.6, 1.0]:
        p_plus = 0.5 + x * (e - 1) / (2 * (e + 1))
        assert math.exp(r.log_prob(x, r.output_bound)) == pytest.approx(p_plus, rel=1e-14)
        assert math.exp(r.log_prob(x, -r.output_bound)) == pytest.approx(1 - p_plus, rel=1e-14)


def test_summation_pmf_off_grid():
    """R(x) for x between grid points: randomized rounding then randomized response."""
    r = Summation(gamma=0.25, precision=4)
    x = 0.3  # x k = 1.2: rounds to 1 w.p. 0.8, to 2 w.p. 0.2
    expected = np.full(5, 0.25 / 5)
    expected[1] += 0.75 * 0.8
    expected[2] += 0.75 * 0.2
    np.testing.assert_allclose(r.output_pmf([x])[0], expected, rtol=1e-12)
    np.testing.assert_allclose(r.output_pmf()[4], [0.05, 0.05, 0.05, 0.05, 0.8], rtol=1e-12)
    assert r.log_prob(x, 5) == -np.inf and r.log_prob(x, -1) == -np.inf


# -- goodness of fit of randomize against the declared distribution -----------------------------
@pytest.mark.parametrize("cls", [Laplace, LaplaceBinary, Piecewise])
def test_ks_goodness_of_fit(cls):
    r = cls(1.3)
    rng = np.random.default_rng(3)
    size = 20_000
    for x in _domain_points(r, 3):
        samples = r.randomize(np.full(size, x), rng)
        assert stats.kstest(samples, lambda t, x=x: r.cdf(x, t)).pvalue > ALPHA
        # Power: the same sample size rejects the distribution of a shifted input.
        if isinstance(r.input_domain, Interval):
            domain = r.input_domain
            shift = 0.15 * (domain.high - domain.low)
            other = x + shift if x + shift <= domain.high else x - shift
        else:
            other = 1 - x
        assert stats.kstest(samples, lambda t, o=other: r.cdf(o, t)).pvalue < ALPHA


@pytest.mark.parametrize(
    "r", [Duchi(0.7), Summation(1.5, precision=6), Summation(gamma=0.6, precision=3)],
    ids=repr,
)
def test_chi_square_goodness_of_fit(r):
    rng = np.random.default_rng(4)
    size = 40_000
    low, high = r.input_domain.low, r.input_domain.high
    for x in [low, low + 0.37 * (high - low), high]:
        index = r.output_index(r.randomize(np.full(size, x), rng))
        counts = np.bincount(index, minlength=r.output_size)
        pmf = r.output_pmf([x])[0]
        assert stats.chisquare(counts, size * pmf).pvalue > ALPHA
        # Power: the distribution of a nearby input is rejected.
        wrong = r.output_pmf([x + (0.1 if x < high else -0.1) * (high - low)])[0]
        assert stats.chisquare(counts, size * wrong).pvalue < ALPHA


# -- epsilon0 is tight ----------------------------------------------------------------------
def _max_log_ratio(r, inputs, outputs):
    logp = r.log_prob(np.asarray(inputs)[:, None], np.asarray(outputs)[None, :])
    finite = np.isfinite(logp).all(axis=0)
    assert finite.any()
    logp = logp[:, finite]
    return float((logp.max(axis=0) - logp.min(axis=0)).max())


@pytest.mark.parametrize("eps", EPSILONS)
@pytest.mark.parametrize("name", NAMES)
def test_epsilon0_is_tight(name, eps):
    r = make_randomizer(name, epsilon0=eps)
    inputs = _domain_points(r, 21)
    if r.output_size is not None:
        outputs = r.outputs_from_index(np.arange(r.output_size))
        extra = np.random.default_rng(5).uniform(r.input_domain.low, r.input_domain.high, 200)
        inputs = np.concatenate([inputs, extra])
    elif name == "piecewise":
        c = r.output_bound
        outputs = np.linspace(-c, c, 2001)
    else:
        outputs = np.linspace(-3.0, 4.0, 1401)
    ratio = _max_log_ratio(r, inputs, outputs)
    assert ratio == pytest.approx(eps, rel=1e-9)
    assert ratio <= eps * (1 + 1e-12)


@pytest.mark.parametrize("gamma", [0.01, 0.3, 0.95])
@pytest.mark.parametrize("k", [1, 5, 64])
def test_summation_gamma_epsilon0_relation(gamma, k):
    """004: e^eps0 = (1 - gamma + gamma/(k+1)) / (gamma/(k+1)) over k + 1 values; the stored
    epsilon0 never yields less noise than the gamma given."""
    r = Summation(gamma=gamma, precision=k)
    assert r.gamma is None
    assert r.uniform_probability >= gamma
    assert r.uniform_probability == pytest.approx(gamma, rel=1e-14)
    expected = math.log((1 - gamma + gamma / (k + 1)) / (gamma / (k + 1)))
    assert r.epsilon0 == pytest.approx(expected, rel=1e-13)
    assert _max_log_ratio(r, r.grid_inputs(), np.arange(k + 1)) == pytest.approx(r.epsilon0)
    # From epsilon0 back: gamma = (k + 1) / (e^eps0 + k); replace() keeps working.
    s = Summation(r.epsilon0, precision=k)
    assert s.uniform_probability == pytest.approx(gamma, rel=1e-13)
    assert dataclasses.replace(r, epsilon0=2.0).epsilon0 == 2.0


def test_summation_for_shuffle():
    """004 Thm 3.1 with a domain of k + 1 values (Sec. 4.1)."""
    n, eps, delta, k = 10**6, 0.5, 1e-6, 20
    expected = max(14 * (k + 1) * math.log(2 / delta) / ((n - 1) * eps**2),
                   27 * (k + 1) / ((n - 1) * eps))
    assert shuffle_gamma(n, eps, delta, k + 1) == pytest.approx(expected, rel=1e-15)
    r = Summation.for_shuffle(n, eps, delta, k)
    assert r.precision == k
    assert expected <= r.uniform_probability <= expected * (1 + 1e-13)
    # The 27 k / ((n - 1) eps) branch wins for large delta.
    assert shuffle_gamma(1001, 1.0, 0.9, 3) == pytest.approx(27 * 3 / 1000)
    with pytest.raises(ParameterError, match="n = 1000"):
        Summation.for_shuffle(1000, 1.0, 1e-6, 10)
    with pytest.raises(ParameterError, match="epsilon"):
        Summation.for_shuffle(n, 1.5, delta, k)
    with pytest.raises(ParameterError, match="delta"):
        Summation.for_shuffle(n, eps, 0.0, k)


# -- total variation and blanket mass against the papers -----------------------------------
@pytest.mark.parametrize("eps", EPSILONS)
def test_total_variation_matches_001_table_1(eps):
    """beta = 1 - e^{-eps/2} for Laplace on [0, 1] and piecewise; (e^eps-1)/(e^eps+1) for Duchi."""
    for r, x0, x1 in [(Laplace(eps), 0.0, 1.0), (Piecewise(eps), -1.0, 1.0)]:
        low, high, points = _support(r, x0)
        points = points + _support(r, x1)[2]

        def positive_part(y, r=r, x0=x0, x1=x1):
            return max(math.exp(r.log_prob(x0, y)) - math.exp(r.log_prob(x1, y)), 0.0)

        tv = _integrate(positive_part, low, high, points)
        assert tv == pytest.approx(1 - math.exp(-eps / 2), abs=1e-9)
    pmf = Duchi(eps).output_pmf()
    assert np.abs(pmf[0] - pmf[1]).sum() / 2 == pytest.approx(math.tanh(eps / 2), rel=1e-13)


@pytest.mark.parametrize("eps", EPSILONS)
def test_laplace_binary_blanket_mass_matches_000_app_b(eps):
    """int min(R(0)(y), R(1)(y)) dy = gamma = e^{-eps0/2} (000 App. B)."""
    r = LaplaceBinary(eps)
    mass = _integrate(lambda y: math.exp(min(r.log_prob(0, y), r.log_prob(1, y))),
                      -np.inf, np.inf, [0.0, 0.5, 1.0])
    assert mass == pytest.approx(math.exp(-eps / 2), abs=1e-9)


def test_output_groups_of_discrete_numeric_randomizers():
    d = Duchi(1.1)
    groups = d.output_groups((0, 1))
    np.testing.assert_allclose(groups.mass.sum(axis=1), 1.0)
    assert groups.mass_min.sum() == pytest.approx(1 - math.tanh(1.1 / 2))
    s = Summation(gamma=0.2, precision=5)
    groups = s.output_groups((0, 5))
    np.testing.assert_allclose(groups.mass.sum(axis=1), 1.0)
    assert groups.mass_min.sum() == pytest.approx(0.2)


# -- personalized budgets ---------------------------------------------------------------------
def test_personalized_laplace_and_piecewise():
    rng = np.random.default_rng(6)
    size = 20_000
    budgets = np.repeat([0.4, 2.5], size)
    for r, x in [(Laplace(1.0), 0.3), (Piecewise(1.0), -0.4), (LaplaceBinary(1.0), 1)]:
        out = r.randomize(np.full(2 * size, x), rng, epsilon=budgets)
        for group, eps in enumerate([0.4, 2.5]):
            ref = dataclasses.replace(r, epsilon0=eps)
            samples = out[group * size:(group + 1) * size]
            assert stats.kstest(samples, lambda t, ref=ref, x=x: ref.cdf(x, t)).pvalue > ALPHA
            assert stats.kstest(samples, lambda t, r=r, x=x: r.cdf(x, t)).pvalue < ALPHA


def test_personalized_duchi():
    rng = np.random.default_rng(7)
    size = 40_000
    budgets = np.repeat([0.3, 3.0], size)
    out = Duchi(1.0).randomize(np.full(2 * size, 0.5), rng, epsilon=budgets)
    for group, eps in enumerate([0.3, 3.0]):
        ref = Duchi(eps)
        samples = out[group * size:(group + 1) * size]
        assert set(np.unique(samples)) <= {ref.output_bound, -ref.output_bound}
        p = float(ref.plus_probability(0.5))
        plus = int((samples > 0).sum())
        assert abs(plus - size * p) <= 6 * math.sqrt(size * p * (1 - p))


def test_personalized_budget_validation():
    rng = np.random.default_rng(8)
    with pytest.raises(ParameterError, match="epsilon"):
        Laplace(1.0).randomize(np.array([0.2, 0.4]), rng, epsilon=np.array([1.0, -1.0]))
    with pytest.raises(ParameterError, match="epsilon"):
        Summation(1.0).randomize(np.array([0.2]), rng, epsilon=np.array([1.0]))
    assert not Summation.supports_personalized
    assert all(c.supports_personalized for c in (Laplace, LaplaceBinary, Piecewise, Duchi))


# -- issue 14: declared probabilities keep full relative precision at large and tiny eps0 -----
@pytest.mark.parametrize("eps0", [1e-6, 0.01, 8.0, 12.0, 16.0, 20.0])
def test_duchi_output_pmf_against_mpmath(eps0):
    """Duchi's P[y | x] = (1 +- x tanh(eps0/2)) / 2 in 60-digit arithmetic; relative error
    <= 1e-12 for every entry (1 - p_plus lost digits of 1/(e^eps0 + 1) at large eps0)."""
    import mpmath as mp

    from shufflesim.protocols.randomizers import make_randomizer
    r = make_randomizer("duchi", epsilon0=eps0)
    xs = np.array([-1.0, -0.75, -0.1, 0.0, 0.3, 1.0])
    pmf = r.output_pmf(xs)
    logp = np.stack([r.log_prob(xs, np.full(xs.shape, -1.0)),
                     r.log_prob(xs, np.full(xs.shape, 1.0))], axis=-1)
    mp.mp.dps = 60
    beta = mp.tanh(mp.mpf(eps0) / 2)
    for i, x in enumerate(xs):
        for j, sign in enumerate((-1, 1)):
            exact = (1 + sign * mp.mpf(float(x)) * beta) / 2
            assert abs(pmf[i, j] - exact) <= 1e-12 * exact, (x, sign, pmf[i, j], exact)
            assert abs(logp[i, j] - mp.log(exact)) <= 1e-12 * max(1.0, abs(mp.log(exact)))


PIECEWISE_EPS0 = [1e-6, 0.01, 8.0, 12.0, 16.0, 20.0, 50.0]


def _mp_piecewise(eps0):
    """(s, C - 1, hi, lo) of Wang et al. (ICDE 2019) in 400-digit arithmetic."""
    import mpmath as mp

    mp.mp.dps = 400
    s = mp.exp(mp.mpf(eps0) / 2)
    gap = 2 / (s - 1)
    hi = s * (s - 1) / (2 * (s + 1))
    lo = (s - 1) / (2 * s * (s + 1))
    return s, gap, hi, lo


@pytest.mark.parametrize("eps0", PIECEWISE_EPS0)
def test_piecewise_geometry_against_mpmath(eps0):
    """C - 1, the masses s / (s + 1) and 1 / (s + 1), log_prob inside and outside the high
    interval, and the interval ends against 400-digit arithmetic: relative error <= 1e-12 (the
    ends: a few ulps of the coordinate). The old code had only ``output_bound - 1`` for C - 1
    (1e-5 relative at eps0 = 50) and (C + 1) x / 2 - (C - 1) / 2 for the ends."""
    import mpmath as mp

    r = Piecewise(eps0)
    s, gap, hi, lo = _mp_piecewise(eps0)
    assert abs(float(r.high_interval_length()) - gap) <= 1e-12 * gap
    assert abs(float(r.high_mass()) - s / (s + 1)) <= 1e-12 * s / (s + 1)
    assert abs(float(r.low_mass()) - 1 / (s + 1)) <= 1e-12 / (s + 1)
    xs = np.array([-1.0, -0.4, 0.0, 0.3, 1.0])
    left, right = r.high_interval(xs)
    for x, lf, rt in zip(xs, left, right, strict=True):
        exact_l = mp.mpf(float(x)) + gap * (mp.mpf(float(x)) - 1) / 2
        exact_r = exact_l + gap
        for got, exact in ((lf, exact_l), (rt, exact_r)):
            assert abs(got - exact) <= 4 * np.spacing(max(abs(got), 1.0)), (x, got, exact)
    assert left[-1] == 1.0 and right[0] == -1.0
    # log density in the middle of the high interval and at -C for x = 1
    mid = 0.5 * (left + right)
    lp_hi = r.log_prob(xs, mid)
    lp_lo = r.log_prob(np.ones(1), np.array([-float(r.output_bound)]))
    for v in lp_hi:
        assert abs(v - mp.log(hi)) <= 1e-12 * max(1.0, abs(mp.log(hi)))
    assert abs(lp_lo[0] - mp.log(lo)) <= 1e-12 * max(1.0, abs(mp.log(lo)))


@pytest.mark.parametrize("eps0", [1e-6, 0.01, 8.0])
def test_piecewise_cdf_against_mpmath(eps0):
    """P[R(x) <= t] in the middle of the high interval: lo (t + C) + (hi - lo)(t - l(x)) in
    400 digits; relative error <= 1e-12. The old code formed
    hi - lo as a difference (1e-10 relative at eps0 = 1e-6)."""
    import mpmath as mp

    r = Piecewise(eps0)
    s, gap, hi, lo = _mp_piecewise(eps0)
    c = (s + 1) / (s - 1)
    xs = np.array([-0.4, 0.0, 0.3])
    for x in xs:
        exact_l = mp.mpf(float(x)) + gap * (mp.mpf(float(x)) - 1) / 2
        t = float(exact_l + gap / 2)   # inside the high interval (its width is >= 2e-11)
        got = float(r.cdf(np.array([x]), np.array([t]))[0])
        exact = lo * (mp.mpf(t) + c) + (hi - lo) * (mp.mpf(t) - exact_l)
        assert abs(got - exact) <= 1e-12 * exact, (x, got, exact)
