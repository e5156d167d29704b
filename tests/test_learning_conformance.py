"""Conformance suite of the gradient randomizers (issue 19): every randomizer of
protocols.learning.randomizers is run through the same three checks, from samples only:

1. unbiasedness: the Monte Carlo mean of the reports equals the input (per coordinate, within
   5 standard errors), for inputs inside and on the clipping ball and per-client budgets;
2. the declared privacy, measured on the worst pair of inputs g = C u, g' = -C u:
   * Gaussian: the empirical hockey-stick divergence of the privacy-loss statistic
     <y, u> at eps0 (a sufficient statistic of the pair) is at most delta0 (plus Monte Carlo
     error) and at the sigma of a smaller budget it is not;
   * Duchi: the two-point output ratio P(<y, u> > 0 | C u) / P(<y, u> > 0 | -C u) equals
     e^eps0 (a Clopper-Pearson interval of each probability);
3. the fit: the projection <y, u> follows the declared distribution (Kolmogorov-Smirnov).

A planted fault (a Gaussian randomizer that uses half its sigma, a Duchi sampler that forgets
the sign flip) fails the checks, so the suite can fail.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pytest
from scipy import special, stats

from shufflesim.protocols.learning import DuchiL2, GaussianGradient
from shufflesim.protocols.randomizers.gaussian import gaussian_delta

D = 6
CLIP = 1.5
N = 60_000


def _unit(d=D):
    u = np.arange(1, d + 1, dtype=float)
    return u / np.linalg.norm(u)


@dataclass(frozen=True)
class HalfSigmaGaussian(GaussianGradient):
    """Planted fault: half the declared noise."""

    def randomize(self, g, rng, epsilon0, delta0):
        g = np.asarray(g, dtype=float)
        sigma = np.broadcast_to(self.sigma(epsilon0, delta0), g.shape[:1])
        return g + 0.5 * sigma[:, None] * rng.standard_normal(g.shape)


@dataclass(frozen=True)
class NoFlipDuchi(DuchiL2):
    """Planted fault: always reports on the input's hemisphere (no randomized sign)."""

    def randomize(self, g, rng, epsilon0):
        y = super().randomize(g, rng, 50.0)
        return y * (self.scale(epsilon0, g.shape[1]) / self.scale(50.0, g.shape[1]))[..., None]


def _report(mech, g, rng, eps, delta0=1e-5):
    if isinstance(mech, GaussianGradient):
        return mech.randomize(g, rng, eps, delta0)
    return mech.randomize(g, rng, eps)


RANDOMIZERS = [GaussianGradient(CLIP), GaussianGradient(CLIP, "classical"), DuchiL2(CLIP)]


# ------------------------------------------------------------------ 1. unbiasedness
def unbiased(mech, rng) -> bool:
    u = _unit()
    ok = True
    for radius in (0.0, 0.6 * CLIP, CLIP):
        g = np.tile(radius * u, (N, 1))
        eps = np.where(np.arange(N) % 3 == 0, 0.5, 2.0)  # per-client budgets
        y = _report(mech, g, rng, eps)
        se = y.std(axis=0) / math.sqrt(N)
        ok &= bool(np.all(np.abs(y.mean(axis=0) - radius * u) < 5 * se))
    return ok


@pytest.mark.parametrize("mech", RANDOMIZERS, ids=lambda m: type(m).__name__ + getattr(
    m, "calibration", ""))
def test_unbiased(mech):
    assert unbiased(mech, np.random.default_rng(11))


def test_unbiasedness_check_catches_a_bias():
    class Shifted(DuchiL2):
        def randomize(self, g, rng, epsilon0):
            return super().randomize(g, rng, epsilon0) + 0.05

    assert not unbiased(Shifted(CLIP), np.random.default_rng(11))


# ------------------------------------------------------------------ 2. declared privacy
def gaussian_empirical_delta(mech, eps0, delta0, rng, n=200_000,
                             threshold=None) -> tuple[float, float]:
    """Monte Carlo hockey-stick divergence at eps0 between the reports of C u and -C u on the
    optimal event of the *declared* mechanism, S = {<y, u> >= eps0 sigma^2 / (2 C)} (its
    log-likelihood ratio is 2 C <y, u> / sigma^2): P(S) - e^eps0 Q(S) estimated from samples
    under both inputs, with 5 standard errors. For the declared law this is its exact delta; for
    any other law it is a lower bound on that law's delta at eps0."""
    u = _unit()
    sigma = float(mech.sigma(eps0, delta0))
    if threshold is None:
        threshold = eps0 * sigma**2 / (2.0 * CLIP)
    hits = []
    for sign in (1.0, -1.0):
        y = _report(mech, np.tile(sign * CLIP * u, (n, 1)), rng, eps0, delta0)
        hits.append((y @ u >= threshold).astype(float))
    est = hits[0].mean() - math.exp(eps0) * hits[1].mean()
    var = hits[0].var() / n + math.exp(2 * eps0) * hits[1].var() / n
    return float(est), float(5 * math.sqrt(var))


@pytest.mark.parametrize("eps0", [0.5, 2.0])
def test_gaussian_declared_privacy(eps0):
    rng = np.random.default_rng(12)
    mech, delta0 = GaussianGradient(CLIP), 0.02
    est, err = gaussian_empirical_delta(mech, eps0, delta0, rng)
    exact = float(gaussian_delta(mech.sigma(eps0, delta0), eps0, mech.sensitivity))
    assert exact == pytest.approx(delta0, rel=1e-6)  # the analytic condition, tight
    assert abs(est - exact) <= err and err < delta0 / 2
    # the planted fault (half the noise) violates it: the best event S_t = {<y, u> >= t} of a
    # grid, chosen on one sample, evaluated on another (a lower bound on the fault's delta)
    fault = HalfSigmaGaussian(CLIP)
    grid = np.linspace(0.0, 2.0 * CLIP, 21)
    chosen = max(grid, key=lambda t: gaussian_empirical_delta(fault, eps0, delta0, rng, 50_000,
                                                              t)[0])
    bad, bad_err = gaussian_empirical_delta(fault, eps0, delta0, rng, threshold=chosen)
    assert bad - bad_err > delta0


def two_point_ratio(mech, eps0, rng, n=N) -> tuple[float, float]:
    """Clopper-Pearson (99.99%) interval of P(<y,u> > 0 | C u) / P(<y,u> > 0 | -C u)."""
    u = _unit()
    hits = []
    for sign in (1.0, -1.0):
        y = _report(mech, np.tile(sign * CLIP * u, (n, 1)), rng, eps0)
        hits.append(int(np.sum(y @ u > 0)))
    alpha = 1e-4

    def interval(k):
        lo = stats.beta.ppf(alpha / 2, k, n - k + 1) if k > 0 else 0.0
        hi = stats.beta.ppf(1 - alpha / 2, k + 1, n - k) if k < n else 1.0
        return lo, hi

    (p_lo, p_hi), (q_lo, q_hi) = interval(hits[0]), interval(hits[1])
    return p_lo / q_hi, (p_hi / q_lo if q_lo > 0 else math.inf)


@pytest.mark.parametrize("eps0", [0.5, 1.0, 2.5])
def test_duchi_two_point_ratio_is_e_to_the_eps0(eps0):
    rng = np.random.default_rng(13)
    lo, hi = two_point_ratio(DuchiL2(CLIP), eps0, rng)
    assert lo <= math.exp(eps0) <= hi
    assert hi / lo < 1.2  # the interval is informative
    lo, hi = two_point_ratio(NoFlipDuchi(CLIP), eps0, rng)
    assert lo > math.exp(eps0)  # the planted fault is caught


# ------------------------------------------------------------------ 3. fit
def projection_fit_pvalue(mech, eps0, rng, n=20_000) -> float:
    u = _unit()
    g = 0.7 * CLIP * u
    y = _report(mech, np.tile(g, (n, 1)), rng, eps0)
    t = y @ u
    if isinstance(mech, GaussianGradient):
        sigma = float(mech.sigma(eps0, 1e-5))
        return float(stats.kstest(t, stats.norm(0.7 * CLIP, sigma).cdf).pvalue)
    scale = float(mech.scale(eps0, D))
    return float(stats.kstest(t / scale, lambda s: mech.projection_cdf(s, g, eps0, D)).pvalue)


@pytest.mark.parametrize("mech", RANDOMIZERS, ids=lambda m: type(m).__name__ + getattr(
    m, "calibration", ""))
def test_fit(mech):
    assert projection_fit_pvalue(mech, 1.0, np.random.default_rng(14)) > 1e-4


def test_fit_check_catches_planted_faults():
    rng = np.random.default_rng(15)
    assert projection_fit_pvalue(HalfSigmaGaussian(CLIP), 1.0, rng) < 1e-6
    assert projection_fit_pvalue(NoFlipDuchi(CLIP), 1.0, rng) < 1e-6


def test_duchi_hemisphere_probability_is_declared():
    """The sign probability the density declares: q pi + (1 - q)(1 - pi), pi = expit(eps)."""
    mech, eps0 = DuchiL2(CLIP), 1.0
    g = 0.7 * CLIP * _unit()
    q = 0.5 + 0.7 / 2
    pi = float(special.expit(eps0))
    assert float(mech.projection_cdf(0.0, g, eps0, D)) == pytest.approx(
        1 - (q * pi + (1 - q) * (1 - pi)))
