"""The Gaussian local randomizer for bounded means, (eps0, delta0)-LDP, and the analytic Gaussian
calibration (the one home of both; protocols.learning's gradient randomizer imports it).

Calibration (Balle and Wang, "Improving the Gaussian mechanism for differential privacy:
analytical calibration and optimal denoising", ICML 2018, Theorem 8). The mechanism
M(x) = f(x) + N(0, sigma^2) with L2 sensitivity Delta is (eps, delta)-DP if and only if

    Phi(Delta / (2 sigma) - eps sigma / Delta) - e^eps Phi(-Delta / (2 sigma) - eps sigma / Delta)
        <= delta.

The left side (:func:`gaussian_delta`) is the hockey-stick divergence
E_{e^eps}(N(0, sigma^2) || N(Delta, sigma^2)); it decreases strictly in sigma (from 1 to 0), so
the smallest admissible sigma is one root-find (:func:`analytic_gaussian_sigma`), landed on the
feasible side of the computed condition with a relative margin of 1e-12 (far above the few ulps
of the log-Phi evaluation). This replaces the classical sigma = Delta sqrt(2 log(1.25/delta)) /
eps of Dwork and Roth (Thm A.1), valid for eps < 1 only and larger everywhere.

The randomizer (issue 15, item 4): an input x in [low, high] is reported as y = x + N(0, sigma^2)
with sigma the analytic sigma at sensitivity Delta = high - low (replacement LDP: any two inputs
differ by at most Delta), so R is (eps0, delta0)-LDP and not eps0-LDP for any finite eps0 (the
log density ratio (y - x')^2 - (y - x)^2 over 2 sigma^2 is unbounded in y). Its report is
unbiased, E[y | x] = x, with Var[y | x] = sigma^2; the sum of n reports is exactly
N(sum_i x_i, n sigma^2) (:meth:`Gaussian.sample_sum`).

Bounds: it is the local randomizer of 002 Thm 3.8 (shuffling (eps0, delta0)-LDP randomizers,
protocols.bounds.closed_form.fmt21.fmt21_approx_dp); every bound that needs a pure eps0-LDP
randomizer refuses it (BoundSpec.accepts_delta0). It declares no decomposition, so the engine's
exact lower bound (000 Thm 14) does not exist for it: that engine needs a finite privacy-loss
range (pure LDP) to build its atoms.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from scipy import special

from shufflesim.protocols.distributions import norm
from shufflesim.protocols.errors import ParameterError, require
from shufflesim.protocols.lazy import lazy_module
from shufflesim.protocols.randomizers.analysis import NeighbourCandidates
from shufflesim.protocols.randomizers.base import Interval, Randomizer
from shufflesim.protocols.randomizers.numeric import UnbiasedReports
from shufflesim.protocols.randomizers.registry import register

optimize = lazy_module("scipy.optimize")  # a root finder, loaded on first use (issue 32)

#: Relative margin by which the calibrated sigma's computed delta stays below the target.
CALIBRATION_MARGIN = 1e-12


# ---------------------------------------------------------------- analytic Gaussian mechanism
def _log_delta_terms(sigma, epsilon, sensitivity):
    """(log Phi(a - b), eps + log Phi(-a - b)) with a = Delta / (2 sigma), b = eps sigma / Delta:
    delta = exp(first) - exp(second) (Balle and Wang 2018, Theorem 8), broadcast."""
    sigma, epsilon, sensitivity = np.broadcast_arrays(
        np.asarray(sigma, float), np.asarray(epsilon, float), np.asarray(sensitivity, float))
    a = sensitivity / (2.0 * sigma)
    b = epsilon * sigma / sensitivity
    return special.log_ndtr(a - b), epsilon + special.log_ndtr(-a - b)


def gaussian_delta(sigma, epsilon, sensitivity=1.0):
    """The exact delta of the Gaussian mechanism N(0, sigma^2) with L2 sensitivity Delta at eps
    (Balle and Wang 2018, Theorem 8; see the module docstring).

    Evaluated with log Phi so that e^eps Phi(.) neither overflows nor loses digits. Vectorized.
    """
    first, second = _log_delta_terms(sigma, epsilon, sensitivity)
    # Phi(a-b) - e^eps Phi(-a-b) = exp(first) (1 - exp(second - first)), second <= first.
    return np.exp(first) * -np.expm1(np.minimum(second - first, 0.0))


def log_gaussian_delta(sigma, epsilon, sensitivity=1.0):
    """log of :func:`gaussian_delta`, finite far into the tail (no underflow to 0)."""
    first, second = _log_delta_terms(sigma, epsilon, sensitivity)
    with np.errstate(divide="ignore"):
        return first + np.log(-np.expm1(np.minimum(second - first, 0.0)))


def _analytic_sigma_one(epsilon: float, delta: float, sensitivity: float) -> float:
    """Smallest sigma with gaussian_delta(sigma) <= delta: brentq on log sigma (delta(sigma) is
    strictly decreasing from 1 at sigma -> 0 to 0 at sigma -> infinity), then moved up until the
    computed delta is below delta (1 - CALIBRATION_MARGIN)."""
    target = delta * (1.0 - CALIBRATION_MARGIN)

    def f(log_sigma):
        return float(log_gaussian_delta(math.exp(log_sigma), epsilon, sensitivity)) \
            - math.log(target)

    lo = math.log(sensitivity) - 5.0
    while f(lo) < 0:
        lo -= 5.0
    hi = math.log(sensitivity) + 5.0
    while f(hi) > 0:
        hi += 5.0
    root = optimize.brentq(f, lo, hi, xtol=1e-14, rtol=1e-14, maxiter=500)
    sigma = math.exp(root)
    while gaussian_delta(sigma, epsilon, sensitivity) > target:  # the feasible side
        sigma = math.nextafter(sigma, math.inf) * (1 + 1e-15)
    return sigma


def analytic_gaussian_sigma(epsilon, delta, sensitivity=1.0) -> np.ndarray:
    """The smallest sigma for which N(0, sigma^2) noise at L2 sensitivity Delta is (eps, delta)-DP
    (Balle and Wang 2018, Thm 8; a root-find of the exact condition rather than their Algorithm
    1's closed-form case split).

    ``epsilon``, ``delta`` and ``sensitivity`` broadcast to one shape; the root-find runs once
    per *distinct* (eps, delta, Delta) triple, not per element.
    """
    e, d, s = np.broadcast_arrays(np.asarray(epsilon, float), np.asarray(delta, float),
                                  np.asarray(sensitivity, float))
    require(bool(np.all((e > 0) & np.isfinite(e))), "epsilon0", epsilon,
            "must be finite and > 0")
    require(bool(np.all((d > 0) & (d < 1))), "delta0", delta, "must be in (0, 1)")
    require(bool(np.all((s > 0) & np.isfinite(s))), "sensitivity", sensitivity,
            "must be finite and > 0")
    triples = np.stack([e.ravel(), d.ravel(), s.ravel()], axis=1)
    unique, inverse = np.unique(triples, axis=0, return_inverse=True)
    sigmas = np.array([_analytic_sigma_one(*row) for row in unique])
    return sigmas[inverse.ravel()].reshape(e.shape)


# ---------------------------------------------------------------- the local randomizer
@register
@dataclass(frozen=True)
class Gaussian(UnbiasedReports, Randomizer):
    """y = x + N(0, sigma^2) on x in [low, high], sigma the analytic-Gaussian sigma for
    (eps0, delta0) at sensitivity high - low: (eps0, delta0)-LDP (see the module docstring).

    Per-user budgets are not supported: each distinct budget needs its own root-find, and the
    personalized bounds assume pure LDP.
    """

    epsilon0: float
    delta0: float
    low: float = 0.0
    high: float = 1.0

    name = "gaussian"
    #: Example parameters (the conformance suites build it from them).
    example = dict(epsilon0=1.1, delta0=1e-3, low=-0.5, high=1.5)
    output_kind = "continuous"

    def __post_init__(self) -> None:
        super().__post_init__()
        require(isinstance(self.delta0, (int, float)) and not isinstance(self.delta0, bool)
                and 0 < self.delta0 < 1, "delta0", self.delta0,
                "must lie in the open interval (0, 1) (an (eps0, delta0)-LDP randomizer)")
        for field in ("low", "high"):
            value = getattr(self, field)
            require(isinstance(value, (int, float)) and not isinstance(value, bool)
                    and math.isfinite(value), field, value, "must be a finite number")
        require(self.low < self.high, "high", self.high,
                f"must be greater than low = {self.low}")

    # -- calibration ----------------------------------------------------------------------
    @property
    def sensitivity(self) -> float:
        """high - low: the largest change of one user's input (replacement)."""
        return float(self.high) - float(self.low)

    @cached_property
    def sigma(self) -> float:
        """The analytic-Gaussian sigma for (eps0, delta0) at sensitivity high - low."""
        return float(analytic_gaussian_sigma(self.epsilon0, self.delta0, self.sensitivity))

    def delta_at(self, epsilon) -> np.ndarray:
        """The exact delta(eps) of this randomizer between the worst inputs low and high (the
        hockey-stick divergence; at eps = eps0 it is at most delta0)."""
        return gaussian_delta(self.sigma, epsilon, self.sensitivity)

    # -- domains --------------------------------------------------------------------------
    @property
    def input_domain(self) -> Interval:
        return Interval(float(self.low), float(self.high))

    @property
    def output_domain(self) -> Interval:
        return Interval(-np.inf, np.inf)

    # -- sampling -------------------------------------------------------------------------
    def randomize(self, values, rng, epsilon=None):
        values = self.check_values(values)
        self._epsilon_array(values, epsilon)  # refuses per-user budgets
        return values + self.sigma * rng.standard_normal(np.shape(values))

    def aggregate(self, outputs):
        """Sum of the reports over the user (last) axis."""
        return np.asarray(outputs, dtype=float).sum(axis=-1)

    def sample_sum(self, input_sums, n, rng) -> np.ndarray:
        """Exactly ``aggregate(randomize(values))`` from the inputs' sums alone: the sum of n
        reports is N(sum_i x_i, n sigma^2). ``input_sums`` (any shape) and ``n`` broadcast.

        (``sample_aggregate`` is the histogram interface of categorical randomizers; inputs here
        are real numbers, so the exact sufficient statistic is their sum.)"""
        input_sums = np.asarray(input_sums, dtype=float)
        n = np.asarray(n)
        require(bool(np.all(n >= 0)), "n", n, "must be >= 0")
        scale = self.sigma * np.sqrt(n.astype(float))
        shape = np.broadcast_shapes(input_sums.shape, n.shape)
        return input_sums + scale * rng.standard_normal(shape)

    # -- declared distribution ------------------------------------------------------------
    def log_prob(self, x, y):
        """log density of N(x, sigma^2) at y."""
        x = np.asarray(x, dtype=float)
        y = np.asarray(y, dtype=float)
        z = (y - x) / self.sigma
        return -0.5 * z * z - math.log(self.sigma) - 0.5 * math.log(2.0 * math.pi)

    def cdf(self, x, t):
        """P[R(x) <= t], broadcast over ``x`` and ``t``."""
        return norm.cdf(np.asarray(t, dtype=float), loc=np.asarray(x, dtype=float),
                              scale=self.sigma)

    # -- its own analysis -----------------------------------------------------------------
    def neighbour_candidates(self, pair_grid: int | None = None) -> NeighbourCandidates:
        """(low, high): the hockey-stick divergence of N(x, sigma^2) from N(x', sigma^2) depends
        on |x - x'| alone and increases in it, so the ends are the worst pair (the audit's
        inputs; no bound of the engine uses them, since it needs pure LDP)."""
        low, high = float(self.low), float(self.high)
        return NeighbourCandidates(
            ((low, high),), ((low, high, low), (low, high, high)), (low,), True, "gaussian",
            "location family: delta(eps) depends on |x - x'| alone, increasing in it")

    def variation_ratio_parameters(self):
        """001's (p, beta, q) rows are for eps0-LDP randomizers; this one is not pure LDP."""
        raise ParameterError(
            "randomizer.delta0", self.delta0,
            "001's variation-ratio parameters need a pure eps0-LDP randomizer (delta0 = 0)")

    # -- moments used by the mean and sum estimators ---------------------------------------
    def report_variance(self, x, epsilon=None):
        """Var[report | x] = sigma^2, independent of x."""
        if epsilon is not None:
            self._epsilon_array(np.asarray(x), epsilon)  # refuses per-user budgets
        return np.zeros(np.shape(x)) + self.sigma ** 2
