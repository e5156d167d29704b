"""The probability functions the bounds and randomizers use (binomial, hypergeometric, normal,
Laplace), with the values of ``scipy.stats`` but without importing it.

Why: ``import scipy.stats`` takes about a second (scipy 1.17 builds every distribution's
docstring at import), more than a whole calibration's arithmetic (issue 18, "Answers in
interactive time"). ``scipy.stats.binom`` and ``hypergeom`` evaluate the Boost ufuncs that
scipy.special carries (``scipy.special._ufuncs._binom_pmf`` etc.), ``norm.cdf`` is
``scipy.special.ndtr``, and ``laplace.cdf`` is a two-branch formula. Each function here calls the
same ufunc on the same arguments and applies scipy.stats' own rules around it (support, integer
arguments, clipping to [0, 1], nan for invalid parameters), so every value is *identical* to
scipy.stats' -- tests/test_distributions.py checks that bit for bit, edges included. A scipy
without those private names falls back to scipy.stats itself (same values, slower import).

Each function broadcasts its arguments and returns a numpy float64 array (a numpy scalar for
scalar arguments), as scipy.stats does.
"""

from __future__ import annotations

import numpy as np
from scipy import special

from shufflesim.protocols.errors import ParameterError

try:
    from scipy.special._ufuncs import (
        _binom_cdf,
        _binom_pmf,
        _binom_ppf,
        _binom_sf,
        _hypergeom_pmf,
    )
except ImportError:  # pragma: no cover - a scipy that moved them: the public (slower) route
    from scipy import stats as _stats

    def _binom_pmf(k, n, p):
        return _stats.binom.pmf(k, n, p)

    def _binom_cdf(k, n, p):
        return _stats.binom.cdf(k, n, p)

    def _binom_sf(k, n, p):
        return _stats.binom.sf(k, n, p)

    def _binom_ppf(q, n, p):
        return _stats.binom.ppf(q, n, p)

    def _hypergeom_pmf(k, n, N, M):  # noqa: N803 - scipy's names
        return _stats.hypergeom.pmf(k, M, n, N)

__all__ = ["binom", "hypergeom", "laplace", "norm"]


def _scalar_or_array(out: np.ndarray):
    return out[()] if out.ndim == 0 else out


def _integral(x) -> np.ndarray:
    return x == np.floor(x)


def _finish(out: np.ndarray, valid: np.ndarray, x: np.ndarray):
    """scipy.stats' last step: nan where the parameters are invalid or the argument is nan."""
    return _scalar_or_array(np.where(valid & ~np.isnan(x), out, np.nan))


class binom:  # noqa: N801 - read as scipy.stats.binom at the call sites
    """Binomial(n, p): support {0, ..., n}; parameters valid for integer n >= 0, p in [0, 1]."""

    @staticmethod
    def _args(k, n, p):
        k, n, p = np.broadcast_arrays(np.asarray(k, dtype=float), np.asarray(n, dtype=float),
                                      np.asarray(p, dtype=float))
        valid = (n >= 0) & _integral(n) & (p >= 0) & (p <= 1)
        return k, n, p, valid

    @staticmethod
    def pmf(k, n, p):
        k, n, p, valid = binom._args(k, n, p)
        inside = valid & (k >= 0) & (k <= n) & _integral(k)
        with np.errstate(all="ignore"):
            value = np.clip(_binom_pmf(np.where(inside, k, 0.0), n, np.where(valid, p, 0.5)),
                            0.0, 1.0)
        out = np.where(inside, value, 0.0)
        return _finish(out, valid, k)

    @staticmethod
    def logpmf(k, n, p):
        """scipy's own formula: ln C(n, k) by gammaln, plus xlogy(k, p) + xlog1py(n - k, -p)."""
        k, n, p, valid = binom._args(k, n, p)
        inside = valid & (k >= 0) & (k <= n) & _integral(k)
        kk = np.floor(np.where(inside, k, 0.0))
        nn = np.where(valid, n, 0.0)
        pp = np.where(valid, p, 0.5)
        with np.errstate(all="ignore"):
            combiln = special.gammaln(nn + 1) - (special.gammaln(kk + 1)
                                                 + special.gammaln(nn - kk + 1))
            value = combiln + special.xlogy(kk, pp) + special.xlog1py(nn - kk, -pp)
        out = np.where(inside, value, -np.inf)
        return _finish(out, valid, k)

    @staticmethod
    def _tail(ufunc, k, n, p, below_support: float):
        """cdf (below_support 0) or sf (below_support 1): the ufunc at floor(k) on the support
        minus its top, ``below_support`` below it and 1 - ``below_support`` from n on."""
        k, n, p, valid = binom._args(k, n, p)
        inside = valid & (k >= 0) & (k < n)
        with np.errstate(all="ignore"):
            value = np.clip(ufunc(np.floor(np.where(inside, k, 0.0)), np.where(valid, n, 1.0),
                                  np.where(valid, p, 0.5)), 0.0, 1.0)
        out = np.where(inside, value, np.where(k < 0, below_support, 1.0 - below_support))
        return _finish(out, valid, k)

    @staticmethod
    def cdf(k, n, p):
        return binom._tail(_binom_cdf, k, n, p, 0.0)

    @staticmethod
    def sf(k, n, p):
        return binom._tail(_binom_sf, k, n, p, 1.0)

    @staticmethod
    def ppf(q, n, p):
        """The smallest k with cdf(k) >= q; -1 at q = 0 and n at q = 1, as scipy.stats. An n
        beyond :data:`PPF_MAX_N` is a ParameterError on ``n`` (the special function's search
        does not end there: issue 26, n = 1e29 ran for minutes)."""
        if np.any(np.asarray(n, dtype=float) > PPF_MAX_N):
            raise ParameterError("n", _plain_max(n), f"beyond {PPF_MAX_N:.0e} users, which the "
                                 "numerical bounds' binomial windows do not reach; use a "
                                 "closed-form bound")
        q, n, p, valid = binom._args(q, n, p)
        inside = valid & (q > 0) & (q < 1)
        with np.errstate(all="ignore"):
            value = _binom_ppf(np.where(inside, q, 0.5), np.where(valid, n, 1.0),
                               np.where(valid, p, 0.5))
        out = np.where(inside, value, np.where(valid & (q == 0), -1.0,
                                               np.where(valid & (q == 1), n, np.nan)))
        return _scalar_or_array(out)


#: Largest n binom.ppf accepts (beyond it the search of the special function does not end).
PPF_MAX_N = 1e18


def _plain_max(n):
    largest = np.max(np.asarray(n, dtype=float))
    return int(largest) if largest < 2**63 else float(largest)


class hypergeom:  # noqa: N801 - read as scipy.stats.hypergeom at the call sites
    """Hypergeometric(M, n, N) in scipy's order: N draws from M items of which n are marked."""

    @staticmethod
    def pmf(k, M, n, N):  # noqa: N803 - scipy's names
        k, M, n, N = np.broadcast_arrays(*(np.asarray(a, dtype=float) for a in (k, M, n, N)))
        valid = ((M > 0) & (n >= 0) & (N >= 0) & (n <= M) & (N <= M) & _integral(M)
                 & _integral(n) & _integral(N))
        low = np.maximum(N - (M - n), 0.0)
        high = np.minimum(n, N)
        inside = valid & (k >= low) & (k <= high) & _integral(k)
        with np.errstate(all="ignore"):
            value = np.clip(_hypergeom_pmf(np.where(inside, k, 0.0), np.where(valid, n, 0.0),
                                           np.where(valid, N, 0.0), np.where(valid, M, 1.0)),
                            0.0, 1.0)
        out = np.where(inside, value, 0.0)
        return _finish(out, valid, k)


def _standardised(x, loc, scale):
    x = np.asarray(x)
    x = np.asarray((x - loc) / scale, dtype=np.promote_types(x.dtype, np.float64))
    scale = np.asarray(scale)
    return x, scale > 0


class norm:  # noqa: N801 - read as scipy.stats.norm at the call sites
    @staticmethod
    def cdf(x, loc=0.0, scale=1.0):
        x, valid = _standardised(x, loc, scale)
        return _scalar_or_array(np.where(valid, special.ndtr(x), np.nan))


class laplace:  # noqa: N801 - read as scipy.stats.laplace at the call sites
    @staticmethod
    def cdf(x, loc=0.0, scale=1.0):
        x, valid = _standardised(x, loc, scale)
        with np.errstate(over="ignore"):
            value = np.where(x > 0, 1.0 - 0.5 * np.exp(-x), 0.5 * np.exp(x))
        value = np.where(np.isposinf(x), 1.0, np.where(np.isneginf(x), 0.0, value))
        return _finish(value, valid, x)
