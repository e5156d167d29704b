"""The piecewise mechanism of Wang et al. (ICDE 2019) for one number x in [-1, 1].

Described in 001 (Table 1, row "piecewise mechanism for [-1, 1]": p = e^eps, beta = 1 - e^{-eps/2},
q = e^eps). With s = e^{eps/2} and C = (s + 1) / (s - 1), the report lies in [-C, C] with density

    f(y | x) = hi = s (s - 1) / (2 (s + 1))      for y in [l(x), r(x)],
               lo = hi / e^eps = (s - 1) / (2 s (s + 1))   elsewhere in [-C, C],

    l(x) = (C + 1) x / 2 - (C - 1) / 2,   r(x) = l(x) + C - 1.

Derivation checks (also verified numerically in the tests):

* mass: hi (C - 1) + lo (C + 1) = s / (s + 1) + 1 / (s + 1) = 1;
* unbiased: E[y | x] = (hi - lo)(C - 1)(l + r) / 2 = ((s - 1) / s) (s / (s - 1)) x = x;
* variance: Var[y | x] = x^2 / (s - 1) + (s + 3) / (3 (s - 1)^2);
* privacy: the density ratio is at most hi / lo = e^eps, attained (x = 1, x' = -1, y in [1, C]),
  so the mechanism is exactly eps-LDP; TV(R(-1), R(1)) = (hi - lo)(C - 1) = 1 - e^{-eps/2}
  (001 Table 1, beta).

Numerics (issue 14). Every small quantity is computed directly, never as a difference of
numbers near each other: C - 1 = 2 / (s - 1) with s - 1 = expm1(eps/2) (the high interval's
length, ~4 e^{-eps/2} at large eps: as ``output_bound - 1`` it kept only ~e^{-eps/2} / ulp
digits, 1e-5 relative at eps = 50); the masses s / (s + 1) = expit(eps/2) and
1 / (s + 1) = expit(-eps/2); hi - lo = hi (1 - e^-eps) = -hi expm1(-eps) (cancelled at tiny
eps: 1e-10 relative at eps = 1e-6); the interval ends l(x) = x + (C - 1)(x - 1)/2 and
r(x) = x + (C - 1)(x + 1)/2 (no (C + 1) x / 2 - (C - 1) / 2 cancellation; l(1) = 1 and
r(-1) = -1 exactly).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special

from shufflesim.protocols.randomizers.analysis import (
    PIECEWISE_CONSTANT,
    NeighbourCandidates,
    VariationRatioRow,
    ldp_row,
)
from shufflesim.protocols.randomizers.base import Interval, Randomizer
from shufflesim.protocols.randomizers.numeric import UnbiasedReports
from shufflesim.protocols.randomizers.registry import register


def _shape_parameters(eps):
    """(s, C, hi, lo) for budget(s) ``eps`` (arrays broadcast); products and quotients only."""
    eps = np.asarray(eps, dtype=float)
    s = np.exp(eps / 2.0)
    sm1 = np.expm1(eps / 2.0)
    c = (s + 1.0) / sm1
    hi = s * sm1 / (2.0 * (s + 1.0))
    lo = sm1 / (2.0 * s * (s + 1.0))
    return s, c, hi, lo


def _gap(eps):
    """C - 1 = 2 / (e^{eps/2} - 1), computed directly (module docstring)."""
    return 2.0 / np.expm1(np.asarray(eps, dtype=float) / 2.0)


@register
@dataclass(frozen=True)
class Piecewise(UnbiasedReports, Randomizer):
    """Piecewise mechanism; inputs in [-1, 1]; real reports in [-C, C]; sum aggregate."""

    epsilon0: float

    name = "piecewise"
    #: Example parameters (the conformance suites build it from them).
    example = dict(epsilon0=1.3)
    output_kind = "continuous"
    supports_personalized = True
    decomposition = PIECEWISE_CONSTANT

    @property
    def input_domain(self) -> Interval:
        return Interval(-1.0, 1.0)

    @property
    def output_bound(self) -> float:
        """C = (e^{eps0/2} + 1) / (e^{eps0/2} - 1): reports lie in [-C, C]."""
        return float(_shape_parameters(self.epsilon0)[1])

    @property
    def output_domain(self) -> Interval:
        c = self.output_bound
        return Interval(-c, c)

    @staticmethod
    def _interval(x, c, gap=None):
        """(l(x), r(x)) = (x + (C - 1)(x - 1)/2, x + (C - 1)(x + 1)/2) (module docstring);
        ``gap`` = C - 1 computed directly (default: from ``c``)."""
        g = c - 1.0 if gap is None else gap
        return x + g * (x - 1.0) / 2.0, x + g * (x + 1.0) / 2.0

    def high_interval(self, x, epsilon=None):
        """(l(x), r(x)): the high-density interval of input(s) ``x``."""
        eps = self.epsilon0 if epsilon is None else epsilon
        x = np.asarray(x, dtype=float)
        return self._interval(x, None, _gap(eps))

    def high_interval_length(self, epsilon=None):
        """C - 1 = 2 / (e^{eps/2} - 1), with full relative precision at any eps."""
        return _gap(self.epsilon0 if epsilon is None else epsilon)

    def high_mass(self, epsilon=None):
        """P[report in [l(x), r(x)]] = hi (C - 1) = s / (s + 1) = expit(eps/2)."""
        return special.expit(np.asarray(self.epsilon0 if epsilon is None else epsilon) / 2.0)

    def low_mass(self, epsilon=None):
        """P[report outside [l(x), r(x)]] = lo (C + 1) = 1 / (s + 1) = expit(-eps/2), computed
        directly (not 1 - high_mass: ~e^{-eps/2} / ulp digits at large eps)."""
        return special.expit(-np.asarray(self.epsilon0 if epsilon is None else epsilon) / 2.0)

    def randomize(self, values, rng, epsilon=None):
        values = self.check_values(values).astype(float)
        eps = self._epsilon_array(values, epsilon)
        _, c, _, _ = _shape_parameters(eps)
        gap = _gap(eps)
        left, right = self._interval(values, c, gap)
        # The high-density interval [l, r] (length C - 1) has mass s / (s + 1); the rest of
        # [-C, C] (length C + 1) is uniform: place u in [0, C + 1) and skip over [l, r].
        in_high = rng.random(values.shape) < special.expit(eps / 2.0)
        u = rng.random(values.shape)
        high = left + u * gap
        v = u * (c + 1.0)
        low = np.where(v < left + c, v - c, right + (v - (left + c)))
        return np.where(in_high, high, low)

    def aggregate(self, outputs):
        """Sum of the reports over the user (last) axis."""
        return np.asarray(outputs, dtype=float).sum(axis=-1)

    def log_prob(self, x, y):
        """Exact log density (-inf outside [-C, C])."""
        x = np.asarray(x, dtype=float)
        y = np.asarray(y, dtype=float)
        _, c, hi, lo = _shape_parameters(self.epsilon0)
        left, right = self._interval(x, c, _gap(self.epsilon0))
        inside = (y >= left) & (y <= right)
        log_density = np.where(inside, np.log(hi), np.log(lo))
        return np.where(np.abs(y) <= c, log_density, -np.inf)

    def cdf(self, x, t):
        """P[R(x) <= t] = lo (t + C) + (hi - lo)(clip(t, l, r) - l) for t clipped to [-C, C],
        with hi - lo = -hi expm1(-eps) (no cancellation at tiny eps)."""
        x = np.asarray(x, dtype=float)
        _, c, hi, lo = _shape_parameters(self.epsilon0)
        t = np.clip(np.asarray(t, dtype=float), -c, c)
        left, right = self._interval(x, c, _gap(self.epsilon0))
        jump = -hi * np.expm1(-float(self.epsilon0))
        value = lo * (t + c) + jump * (np.clip(t, left, right) - left)
        return np.clip(value, 0.0, 1.0)

    # -- its own analysis -----------------------------------------------------------------
    def blanket_inputs(self) -> np.ndarray:
        """inf_x R(x)(y) = min(R(-1)(y), R(1)(y)): the high intervals [-C, -1] and [1, C] of
        the two extreme inputs are disjoint, and every density is >= lo."""
        return np.array([-1.0, 1.0])

    def density_breakpoints(self, inputs) -> np.ndarray:
        """Where the densities R(x), x in ``inputs``, jump: +-C and the ends l(x), r(x) of
        the high-density intervals (clipped to [-C, C])."""
        c = self.output_bound
        edges = [(c + 1.0) * x / 2.0 - (c - 1.0) / 2.0 for x in inputs]
        points = np.array([-c, c] + edges + [e + c - 1.0 for e in edges])
        return np.clip(points, -c, c)

    def neighbour_candidates(self, pair_grid: int | None = None) -> NeighbourCandidates:
        """With s(x0, x1) = overlap length of the two high-density intervals, going from s to
        s - t moves blanket mass t*lo from the (e^eps0, e^eps0) and (1, 1) atoms to the
        (e^eps0, 1) and (1, e^eps0) atoms. Both pairs of values have the same sum
        (1 + e^eps0)(1 - e^eps) and the new pair brackets the old one, so the GPARV at overlap
        s - t is a mean-preserving spread of the one at s (convex order), which survives i.i.d.
        sums and the convex map (.)_+: the smaller the overlap, the larger delta. (-1, 1) has
        overlap 0 and is worst (also inside joint compositions)."""
        triples = tuple((-1.0, 1.0, float(x2)) for x2 in np.linspace(-1.0, 1.0, 9))
        return NeighbourCandidates(((-1.0, 1.0),), triples, (-1.0,), True, "piecewise",
                                   "piecewise: smaller overlap of the high-density intervals is "
                                   "a mean-preserving spread of the GPARV; (-1, 1) has none")

    def variation_ratio_parameters(self) -> VariationRatioRow:
        """001 Table 1, piecewise mechanism: beta = 1 - e^{-eps0/2}."""
        return ldp_row(self.epsilon0, -math.expm1(-self.epsilon0 / 2.0),
                       "001 Table 1, piecewise mechanism")

    # -- moments used by the mean and sum estimators ---------------------------------------
    def report_variance(self, x, epsilon=None):
        """Var[report | x] = x^2 / (s - 1) + (s + 3) / (3 (s - 1)^2), s = e^{eps/2}."""
        eps = self.epsilon0 if epsilon is None else epsilon
        s, _, _, _ = _shape_parameters(eps)
        sm1 = np.expm1(np.asarray(eps, dtype=float) / 2.0)
        x = np.asarray(x, dtype=float)
        return np.square(x) / sm1 + (s + 3.0) / (3.0 * np.square(sm1))
