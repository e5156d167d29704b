"""protocols.distributions gives scipy.stats' values bit for bit, without importing scipy.stats
(issue 18: the import costs about a second of every command's start)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from scipy import stats

from shufflesim.protocols import distributions as dist

RNG = np.random.default_rng(20261127)


def _same(ours, theirs):
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert ours.shape == theirs.shape
    assert ours.dtype == theirs.dtype == np.float64
    np.testing.assert_array_equal(ours, theirs)   # nan == nan here; 0.0 vs -0.0 too


def _binomial_cases():
    """Random and edge (k, n, p): k inside, outside and non-integer; n from 0 to 1e9; p at 0, 1,
    tiny and near 1; invalid n and p (scipy gives nan)."""
    n = np.concatenate([[0, 1, 2, 7, 50, 1000, 10**6, 10**9],
                        RNG.integers(1, 10**7, size=40)]).astype(float)
    p = np.concatenate([[0.0, 1.0, 1e-300, 1e-12, 0.5, 1 - 1e-12, 1 - 2**-53],
                        RNG.random(41)])
    frac = RNG.random(48)
    k = np.floor(frac * (n + 1))
    k[:6] = [-1, 0, np.inf, -np.inf, np.nan, 3.5]
    ks = np.concatenate([k, n, n + 1, np.floor(n * p), np.floor(n * p) + 0.25])
    ns = np.concatenate([n, n, n, n, n])
    ps = np.concatenate([p, p, p, p, p])
    bad_n = np.array([-1.0, 2.5, 10.0, 10.0])
    bad_p = np.array([0.5, 0.5, -0.1, 1.1])
    return (np.concatenate([ks, [1, 1, 1, 1]]), np.concatenate([ns, bad_n]),
            np.concatenate([ps, bad_p]))


@pytest.mark.parametrize("method", ["pmf", "logpmf", "cdf", "sf"])
def test_binomial_functions_equal_scipy_stats(method):
    k, n, p = _binomial_cases()
    _same(getattr(dist.binom, method)(k, n, p), getattr(stats.binom, method)(k, n, p))
    # broadcasting and scalars, as the call sites use them
    _same(getattr(dist.binom, method)(np.arange(12), 11, 0.3),
          getattr(stats.binom, method)(np.arange(12), 11, 0.3))
    ours, theirs = getattr(dist.binom, method)(3, 10, 0.2), getattr(stats.binom, method)(3, 10, 0.2)
    assert type(ours) is type(theirs) and ours == theirs
    column = np.arange(5)[:, None]
    _same(getattr(dist.binom, method)(column, np.array([4, 9]), np.array([0.1, 0.9])),
          getattr(stats.binom, method)(column, np.array([4, 9]), np.array([0.1, 0.9])))


def test_binomial_quantiles_equal_scipy_stats():
    q = np.concatenate([[0.0, 1.0, 1e-300, 1e-16, 0.5, 1 - 1e-16, -0.1, 1.1, np.nan],
                        RNG.random(39)])
    n = np.concatenate([[0, 1, 2, 7, 50, 1000, 10**6, 10**9], RNG.integers(1, 10**7, 40)])
    p = np.concatenate([[0.0, 1.0, 1e-12, 0.5, 1 - 1e-12, 0.3, 0.7, 0.2], RNG.random(40)])
    _same(dist.binom.ppf(q, n, p), stats.binom.ppf(q, n, p))
    _same(dist.binom.ppf(q[:, None], n[None, :8], p[None, :8]),
          stats.binom.ppf(q[:, None], n[None, :8], p[None, :8]))


def test_hypergeometric_pmf_equals_scipy_stats():
    M = np.array([1, 6, 6, 20, 1000, 10**6, 6, 6, 5.5, 0])
    n = np.array([1, 2, 6, 7, 400, 3 * 10**5, 7, 2, 2, 0])
    N = np.array([1, 3, 2, 10, 500, 1000, 2, -1, 2, 0])
    for k in (np.zeros(10), np.ones(10), 2 * np.ones(10), np.full(10, 1.5), np.full(10, -1.0),
              np.floor(np.minimum(n, N) / 2), np.minimum(n, N)):
        _same(dist.hypergeom.pmf(k, M, n, N), stats.hypergeom.pmf(k, M, n, N))


@pytest.mark.parametrize("family", ["norm", "laplace"])
def test_continuous_cdfs_equal_scipy_stats(family):
    x = np.concatenate([[-np.inf, np.inf, np.nan, 0.0, -0.0, 1e-300, -800.0, 800.0],
                        RNG.normal(scale=5, size=200)])
    loc = RNG.normal(size=x.size)
    scale = RNG.random(x.size) * 3
    scale[:3] = [0.0, -1.0, 1.0]
    ours, theirs = getattr(dist, family).cdf, getattr(stats, family).cdf
    _same(ours(x, loc=loc, scale=scale), theirs(x, loc=loc, scale=scale))
    _same(ours(x), theirs(x))
    assert ours(0.3, loc=0.1, scale=2.0) == theirs(0.3, loc=0.1, scale=2.0)


def test_a_bound_evaluation_does_not_import_scipy_stats():
    """The point of the module: computing an amplification bound (engine, clone and
    variation-ratio bounds) and calibrating leaves scipy.stats unimported. Negative control:
    the same check after importing it fails."""
    code = (
        "import sys\n"
        "from shufflesim.protocols.bounds import calibration, catalogue\n"
        "from shufflesim.protocols.randomizers import make_randomizer\n"
        "r = make_randomizer('krr', epsilon0=2.0, domain_size=10)\n"
        "for name in ('optimal-blanket', 'exact-lower', 'fmt21_numerical', 'variation-ratio',\n"
        "             'stronger_clone_numerical', 'blanket_bennett'):\n"
        "    assert catalogue.evaluate(name, r, 1000, 1e-6).ok, name\n"
        "calibration.largest_epsilon0('optimal-blanket', lambda e: make_randomizer('krr',\n"
        "    epsilon0=e, domain_size=10), 1000, 0.5, 1e-6)\n"
        "{extra}"
        "print('scipy.stats' in sys.modules)\n")
    for extra, expected in (("", "False"), ("import scipy.stats\n", "True")):
        done = subprocess.run([sys.executable, "-c", code.format(extra=extra)],
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == expected
