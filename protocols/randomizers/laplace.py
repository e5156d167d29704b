"""The Laplace mechanism with sensitivity 1: y = x + Lap(1 / eps0).

Two input domains are offered:

* ``laplace``: x in the interval [0, 1] (001 Table 1, row "Laplace mechanism for [0, 1]";
  000 Sec. 6 notes that this version is not input-symmetric).
* ``laplace_binary``: x in {0, 1} (000 App. B), the version for which 000 derives the GPARV.

For both, R(x) has density (eps0 / 2) exp(-eps0 |y - x|) on the real line. Since
|y - x'| - |y - x| <= |x - x'| <= 1, the log-ratio of densities is at most eps0, attained for
x = 0, x' = 1 and any y outside (0, 1): the mechanism is exactly eps0-LDP. The report is unbiased,
E[y | x] = x, with variance 2 / eps0^2 (the variance of Lap(b) is 2 b^2).
The total variation distance between R(0) and R(1) is 1 - e^{-eps0/2} (001 Table 1, beta), and
the blanket mass int min_x R(x)(y) dy is e^{-eps0/2} (000 App. B, gamma).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from shufflesim.protocols.distributions import laplace
from shufflesim.protocols.errors import require
from shufflesim.protocols.randomizers.analysis import (
    LOG_LINEAR,
    NeighbourCandidates,
    VariationRatioRow,
    ldp_row,
)
from shufflesim.protocols.randomizers.base import Categorical, Interval, Randomizer
from shufflesim.protocols.randomizers.numeric import UnbiasedReports
from shufflesim.protocols.randomizers.registry import register


class _LaplaceNoise(UnbiasedReports, Randomizer):
    """Shared implementation: additive Lap(1/eps) noise, sum aggregate, exact density and cdf."""

    output_kind = "continuous"
    supports_personalized = True
    decomposition = LOG_LINEAR

    @property
    def output_domain(self) -> Interval:
        return Interval(-np.inf, np.inf)

    def randomize(self, values, rng, epsilon=None):
        values = self.check_values(values)
        eps = self._epsilon_array(values, epsilon)
        return values + rng.laplace(0.0, 1.0 / np.asarray(eps, dtype=float), size=values.shape)

    def aggregate(self, outputs):
        """Sum of the reports over the user (last) axis."""
        return np.asarray(outputs, dtype=float).sum(axis=-1)

    def log_prob(self, x, y):
        """log density: log(eps0 / 2) - eps0 |y - x|."""
        x = np.asarray(x, dtype=float)
        y = np.asarray(y, dtype=float)
        return np.log(self.epsilon0 / 2.0) - self.epsilon0 * np.abs(y - x)

    def cdf(self, x, t):
        """P[R(x) <= t], broadcast over ``x`` and ``t``."""
        return laplace.cdf(
            np.asarray(t, dtype=float), loc=np.asarray(x, dtype=float), scale=1.0 / self.epsilon0
        )

    # -- its own analysis -----------------------------------------------------------------
    def blanket_inputs(self) -> np.ndarray:
        """A location family with density decreasing in |y - x|: inf over x in [0, 1] is
        attained at the endpoint farthest from y, min(R(0)(y), R(1)(y)) (000 App. B)."""
        return np.array([0.0, 1.0])

    def blanket_kinks(self) -> tuple:
        """Kinks of log min(R(0), R(1)): 0, 1 and the crossing 1/2."""
        return (0.0, 0.5, 1.0)

    def log_density_kinks(self, inputs) -> tuple:
        """log R(x)(y) = log(eps0/2) - eps0 |y - x| has its one kink at y = x."""
        return tuple(float(x) for x in inputs)

    def variation_ratio_parameters(self) -> VariationRatioRow:
        """001 Table 1, Laplace mechanism: beta = 1 - e^{-eps0/2}."""
        return ldp_row(self.epsilon0, -math.expm1(-self.epsilon0 / 2.0),
                       "001 Table 1, Laplace mechanism")

    # -- moments used by the mean and sum estimators ---------------------------------------
    def report_variance(self, x, epsilon=None):
        """Var[report | x] = 2 / eps^2, independent of x (``epsilon``: per-user budgets)."""
        eps = self.epsilon0 if epsilon is None else np.asarray(epsilon, dtype=float)
        return np.zeros(np.shape(x)) + 2.0 / np.square(eps)


@register
@dataclass(frozen=True)
class Laplace(_LaplaceNoise):
    """Laplace mechanism on x in [0, 1]; continuous real-valued reports."""

    epsilon0: float

    name = "laplace"
    #: Example parameters (the conformance suites build it from them).
    example = dict(epsilon0=0.9)

    @property
    def input_domain(self) -> Interval:
        return Interval(0.0, 1.0)

    def neighbour_candidates(self, pair_grid: int | None = None) -> NeighbourCandidates:
        """The worst pair is unknown (000 Sec. 8): a grid of ``pair_grid`` points per axis
        (default LAPLACE_PAIR_GRID), reduced by the reflection x -> 1 - x, y -> 1 - y; the bound
        built on it is labelled as such (optimal.py can add the cover slack)."""
        pairs = laplace_pair_grid(pair_grid or LAPLACE_PAIR_GRID)
        triples = tuple((0.0, 1.0, float(x2)) for x2 in np.linspace(0.0, 1.0, 5))
        return NeighbourCandidates(pairs, triples, (0.0,), False, "laplace",
                                   "worst pair unknown (000 Sec. 8): grid of pairs")


@register
@dataclass(frozen=True)
class LaplaceBinary(_LaplaceNoise):
    """Laplace mechanism on x in {0, 1} (000 App. B); continuous real-valued reports."""

    epsilon0: float

    name = "laplace_binary"
    #: Example parameters (the conformance suites build it from them).
    example = dict(epsilon0=1.1)

    @property
    def input_domain(self) -> Categorical:
        return Categorical(2)

    def neighbour_candidates(self, pair_grid: int | None = None) -> NeighbourCandidates:
        """Pairs (0, 1) and (1, 0): the reflection y -> 1 - y maps one to the other."""
        return NeighbourCandidates(((0, 1),), ((0, 1, 1), (0, 1, 0)), (0,), True,
                                   "laplace_binary",
                                   "two inputs, exchanged by the reflection y -> 1 - y")


#: Default number of grid points per axis for the Laplace-on-[0, 1] pair search.
LAPLACE_PAIR_GRID = 6


def laplace_pair_grid(points: int) -> tuple:
    """Pairs (u, v), u < v, from ``points`` equally spaced inputs of [0, 1], one per orbit of the
    reflection x -> 1 - x (which maps {u, v} to {1 - v, 1 - u}); (0, 1) first."""
    require(isinstance(points, int) and points >= 2, "pair_grid", points,
            "must be an integer >= 2")
    grid = np.linspace(0.0, 1.0, points)
    pairs = []
    for i in range(points):
        for j in range(i + 1, points):
            mirror = (points - 1 - j, points - 1 - i)
            if (i, j) <= mirror:
                pairs.append((float(grid[i]), float(grid[j])))
    pairs.sort(key=lambda p: (-(p[1] - p[0]), p[0]))
    return tuple(pairs)
