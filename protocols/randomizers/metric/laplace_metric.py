"""Laplace on R with the l1 metric (001 Table 2, row "Laplace mechanism [2]"; Alvim et al. 2018).

Inputs x in [low, high] (diameter D = high - low); y = x + Lap(1/eps) with eps = epsilon0 / D the
metric budget per unit distance (see protocols.randomizers.metric.base for what epsilon0 means):

    R(x)(y) = (eps/2) exp(-eps |y - x|).

Since |y - a| - |y - b| <= |a - b|, R is eps |a - b| - indistinguishable for every pair, with
equality for y outside (a, b): the metric guarantee is tight, and over the domain R is exactly
epsilon0-LDP. TV(R(a), R(b)) = 1 - e^{-eps d/2} at d = |a - b| (001 Table 2's beta, with d01 in
metric units eps d). The report is unbiased with variance 2/eps^2.

It is the ``laplace`` randomizer of [0, 1] rescaled, so it declares the same LOG_LINEAR
decomposition: the engine's blanket bound and 000 Thm 14's exact lower bound apply to it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from shufflesim.protocols.distributions import laplace
from shufflesim.protocols.errors import require
from shufflesim.protocols.randomizers.analysis import LOG_LINEAR, NeighbourCandidates
from shufflesim.protocols.randomizers.base import Interval
from shufflesim.protocols.randomizers.laplace import LAPLACE_PAIR_GRID, laplace_pair_grid
from shufflesim.protocols.randomizers.metric.base import (
    MetricRandomizer,
    check_finite,
    check_interval,
)
from shufflesim.protocols.randomizers.registry import register


class IntervalPair(MetricRandomizer):
    """Shared geometry of the 1-D metric randomizers: inputs in [low, high], a pair in it."""

    low: float
    high: float
    pair_x0: float | None
    pair_x1: float | None

    def _check_geometry(self) -> None:
        low, high = check_interval(self.low, self.high)
        for field in ("pair_x0", "pair_x1"):
            value = getattr(self, field)
            if value is not None:
                value = check_finite(field, value)
                require(low <= value <= high, field, value, f"must lie in [{low:g}, {high:g}]")
        x0, x1 = self.pair
        require(x0 != x1, "pair_x1", x1, "must differ from pair_x0 (a neighbouring pair)")

    @property
    def input_domain(self) -> Interval:
        return Interval(float(self.low), float(self.high))

    @property
    def diameter(self) -> float:
        return float(self.high) - float(self.low)

    @property
    def pair(self) -> tuple[float, float]:
        x0 = float(self.low) if self.pair_x0 is None else float(self.pair_x0)
        x1 = float(self.high) if self.pair_x1 is None else float(self.pair_x1)
        return x0, x1

    @property
    def pair_reach(self) -> float:
        """The farthest endpoint of [low, high] from either pair input."""
        x0, x1 = self.pair
        return max(abs(x - e) for x in (x0, x1) for e in (float(self.low), float(self.high)))

    def neighbour_candidates(self, pair_grid: int | None = None) -> NeighbourCandidates:
        """The declared pair (default: the interval's ends, the worst pair: TV and the loss grow
        with the distance); not exhaustive over the domain's pairs."""
        x0, x1 = self.pair
        triples = tuple((x0, x1, float(x2)) for x2 in (x0, x1, 0.5 * (x0 + x1)))
        return NeighbourCandidates(((x0, x1),), triples, (x0,), False, f"{self.name}-pair",
                                   "the declared metric pair only")

    def lower_references(self) -> tuple:
        """Both pair inputs, their midpoint and both ends of the interval."""
        x0, x1 = self.pair
        return tuple(dict.fromkeys((x0, x1, 0.5 * (x0 + x1), float(self.low),
                                    float(self.high))))

    def distinguishing_masses(self, x0, x1, reference):
        a_lo, a_hi, b_lo, b_hi = self._events(float(x0), float(x1))

        def mass(x, lo, hi):
            return float(self.cdf(x, hi) - self.cdf(x, lo))

        return tuple((mass(x, a_lo, a_hi), mass(x, b_lo, b_hi)) for x in (x0, x1, reference))

    # -- moments: on the line the mean and sum estimators read them too --------------------------
    @property
    def report_affine(self) -> tuple[float, float]:
        return self.location_affine

    def report_variance(self, x, epsilon=None):
        return self.location_variance(x, epsilon)

    def _events(self, x0: float, x1: float) -> tuple[float, float, float, float]:
        """Intervals (a_lo, a_hi) = {R(x0) > R(x1)} and (b_lo, b_hi) = {R(x1) > R(x0)}."""
        mid = 0.5 * (x0 + x1)
        if x0 < x1:
            return -math.inf, mid, mid, math.inf
        return mid, math.inf, -math.inf, mid


@register
@dataclass(frozen=True)
class LaplaceMetric(IntervalPair):
    """eps-d_X-private Laplace on [low, high] (eps = epsilon0 / (high - low))."""

    epsilon0: float
    low: float = 0.0
    high: float = 1.0
    pair_x0: float | None = None
    pair_x1: float | None = None

    name = "laplace_metric"
    #: Example parameters (the conformance suites build it from them).
    example = dict(epsilon0=1.3, low=-1.0, high=2.0)
    decomposition = LOG_LINEAR

    def __post_init__(self) -> None:
        super().__post_init__()
        self._check_geometry()

    @property
    def scale(self) -> float:
        """b = 1/eps = D / epsilon0."""
        return 1.0 / self.metric_epsilon

    def randomize(self, values, rng, epsilon=None):
        values = self.check_values(values)
        self._epsilon_array(values, epsilon)
        return values + rng.laplace(0.0, self.scale, size=np.shape(values))

    def log_prob(self, x, y):
        """log(eps/2) - eps |y - x|."""
        eps = self.metric_epsilon
        return math.log(eps / 2.0) - eps * np.abs(np.asarray(y, float) - np.asarray(x, float))

    def cdf(self, x, t):
        """P[R(x) <= t]."""
        return laplace.cdf(np.asarray(t, dtype=float), loc=np.asarray(x, dtype=float),
                                 scale=self.scale)

    def total_variation(self, distance: float) -> float:
        """1 - e^{-eps d/2} (001 Table 2), rounded up by an ulp's worth."""
        return -math.expm1(-self.metric_epsilon * float(distance) / 2.0) * (1 + 1e-15)

    # -- the engine's LOG_LINEAR family (as laplace.py) ------------------------------------------
    def blanket_inputs(self) -> np.ndarray:
        """inf over x in [low, high] of R(x)(y) is at the endpoint farthest from y."""
        return np.array([float(self.low), float(self.high)])

    def blanket_kinks(self) -> tuple:
        return (float(self.low), 0.5 * (float(self.low) + float(self.high)), float(self.high))

    def log_density_kinks(self, inputs) -> tuple:
        return tuple(float(x) for x in inputs)

    def neighbour_candidates(self, pair_grid: int | None = None) -> NeighbourCandidates:
        """With a declared pair (``pair_x0``/``pair_x1`` set): that pair only (the bound is
        for that pair, not exhaustive over the domain); else the Laplace grid of pairs of
        protocols.randomizers.laplace mapped onto [low, high] (worst pair unknown, 000 Sec. 8)."""
        low, d = float(self.low), self.diameter
        x0, x1 = self.pair
        grid = np.linspace(low, float(self.high), 5)
        if self.pair_x0 is not None or self.pair_x1 is not None:
            triples = tuple((x0, x1, float(x2)) for x2 in (*grid, x0, x1))
            return NeighbourCandidates(((x0, x1),), triples, (x0,), False, "laplace_metric-pair",
                                       "the declared metric pair only")
        pairs = tuple((low + d * a, low + d * b)
                      for a, b in laplace_pair_grid(pair_grid or LAPLACE_PAIR_GRID))
        triples = tuple((x0, x1, float(x2)) for x2 in grid)
        return NeighbourCandidates(pairs, triples, (x0,), False, "laplace_metric",
                                   "worst pair unknown (000 Sec. 8): grid of pairs")

    # -- moments ----------------------------------------------------------------------------------
    @property
    def location_affine(self) -> tuple[float, float]:
        return 0.0, 1.0

    def location_variance(self, x, epsilon=None):
        """2/eps^2 per report, independent of x."""
        return np.zeros(np.shape(x)) + 2.0 * self.scale ** 2
