"""Balle et al.'s single-message real summation randomizer (004 Sec. 4.1, Algorithm 2).

A user with x in [0, 1] and precision k

1. encodes x in fixed point by randomized rounding: xbar = floor(x k) + Bernoulli(x k - floor(x k)),
   an integer in {0, ..., k} with E[xbar] = x k and Var[xbar] = f (1 - f), f = x k - floor(x k)
   (so at most 1/4: 004's rounding error 1/(4 k^2) on the scale of x);
2. applies 004's randomized response (Algorithm 1) over the k + 1 values {0, ..., k}: with
   probability gamma it reports a uniform value of {0, ..., k}, otherwise xbar.

Declared distribution (exact, for every real x, not only grid points):

    R(x)(y) = (1 - gamma) [(1 - f) 1{y = floor(xk)} + f 1{y = floor(xk) + 1}] + gamma / (k + 1).

Local budget. R(x)(y) ranges over [gamma/(k+1), 1 - gamma + gamma/(k+1)], both ends attained (at
grid inputs x = j/k), so the randomizer is exactly eps0-LDP with

    e^eps0 = (1 - gamma + gamma/(k+1)) / (gamma/(k+1)) = 1 + (1 - gamma)(k + 1) / gamma,
    gamma  = (k + 1) / (e^eps0 + k)

(004 Sec. 3.2 gives the same relation for randomized response over a domain of size k; here the
domain has size k + 1). The randomizer is parameterised by ``epsilon0`` or, alternatively, by
``gamma`` at construction. The instance always stores ``epsilon0``: a given ``gamma`` is turned
into the largest float ``epsilon0`` whose implied gamma is >= the given one (so rounding never
removes noise) and the field is then reset to None; read the value in force from
``uniform_probability``.

Every R(x) is a mixture of R(floor(xk)/k) and R(ceil(xk)/k), so the grid inputs j/k are the
extreme points: ``output_pmf`` defaults to them and ``output_groups`` anchors are grid indices j.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from shufflesim.protocols.errors import (
    ParameterError,
    require,
    require_int_at_least,
    require_probability_open,
)
from shufflesim.protocols.randomizers.analysis import (
    DISCRETE_PMF,
    NeighbourCandidates,
    VariationRatioRow,
    grr_total_variation,
    ldp_row,
    vertex_candidates,
)
from shufflesim.protocols.randomizers.base import Interval, Randomizer
from shufflesim.protocols.randomizers.registry import register


def gamma_from_epsilon0(epsilon0, precision: int):
    """gamma = (k + 1) / (e^eps0 + k): the uniform-report probability giving eps0-LDP."""
    return (precision + 1) / (np.exp(np.asarray(epsilon0, dtype=float)) + precision)


def epsilon0_from_gamma(gamma, precision: int):
    """eps0 = log(1 + (1 - gamma)(k + 1) / gamma), the exact LDP level of the randomizer."""
    gamma = np.asarray(gamma, dtype=float)
    return np.log1p((1.0 - gamma) * (precision + 1) / gamma)


def shuffle_gamma(n: int, epsilon: float, delta: float, domain_size: int) -> float:
    """004 Thm 3.1: gamma = max{14 k log(2/delta) / ((n-1) eps^2), 27 k / ((n-1) eps)} for
    randomized response over a domain of size k, making the shuffled protocol (eps, delta)-DP
    for eps <= 1."""
    return max(
        14.0 * domain_size * math.log(2.0 / delta) / ((n - 1) * epsilon**2),
        27.0 * domain_size / ((n - 1) * epsilon),
    )


@register
@dataclass(frozen=True)
class Summation(Randomizer):
    """004's summation randomizer; inputs in [0, 1]; integer reports in {0, ..., precision}."""

    epsilon0: float | None = None
    precision: int = 10
    gamma: float | None = None

    name = "summation"
    #: Example parameters (the conformance suites build it from them).
    example = dict(epsilon0=1.7, precision=4)
    decomposition = DISCRETE_PMF

    def __post_init__(self) -> None:
        require_int_at_least("precision", self.precision, 1)
        if self.gamma is not None:
            require(self.epsilon0 is None, "gamma", self.gamma,
                    f"give either epsilon0 or gamma, not both (epsilon0 = {self.epsilon0!r})")
            require_probability_open("gamma", self.gamma)
            object.__setattr__(self, "epsilon0", self._conservative_epsilon0(self.gamma))
            object.__setattr__(self, "gamma", None)
        elif self.epsilon0 is None:
            raise ParameterError("epsilon0", None, "summation needs epsilon0 or gamma")
        super().__post_init__()

    def _conservative_epsilon0(self, gamma: float) -> float:
        """Largest float eps0 with gamma_from_epsilon0(eps0) >= gamma (a few ulps at most)."""
        eps0 = float(epsilon0_from_gamma(gamma, self.precision))
        for _ in range(64):  # the round trip is exact to a few ulps
            if gamma_from_epsilon0(eps0, self.precision) >= gamma:
                return eps0
            eps0 = float(np.nextafter(eps0, 0.0))
        raise RuntimeError(f"summation: cannot invert gamma = {gamma!r} to epsilon0")

    @classmethod
    def for_shuffle(cls, n: int, epsilon: float, delta: float, precision: int) -> Summation:
        """The randomizer with 004's choice of gamma for an (epsilon, delta)-DP shuffled protocol
        over n users: Thm 3.1 applied to the k + 1 = precision + 1 fixed-point values
        (004 Sec. 4.1). Valid for epsilon <= 1 and only when that gamma is < 1."""
        require_int_at_least("n", n, 2)
        require_int_at_least("precision", precision, 1)
        require(isinstance(epsilon, (int, float)) and 0 < epsilon <= 1, "epsilon", epsilon,
                "004 Thm 3.1 needs 0 < epsilon <= 1")
        require_probability_open("delta", delta)
        gamma = shuffle_gamma(n, float(epsilon), float(delta), precision + 1)
        require(gamma < 1.0, "n", n,
                f"too few users for 004 Thm 3.1 at epsilon={epsilon}, delta={delta}, "
                f"precision={precision}: it needs gamma = {gamma:.4g} < 1")
        return cls(gamma=gamma, precision=precision)

    @property
    def uniform_probability(self) -> float:
        """004's gamma: probability of reporting a uniform value of {0, ..., k}."""
        return float(gamma_from_epsilon0(self.epsilon0, self.precision))

    @property
    def input_domain(self) -> Interval:
        return Interval(0.0, 1.0)

    @property
    def output_size(self) -> int:
        return self.precision + 1

    def grid_inputs(self) -> np.ndarray:
        """The fixed-point grid j / k, j = 0..k (the extreme inputs, see module docstring)."""
        return np.arange(self.precision + 1) / self.precision

    def _rounding(self, x):
        """(floor(xk), f = xk - floor(xk)): xbar = floor(xk) + Bernoulli(f)."""
        scaled = np.asarray(x, dtype=float) * self.precision
        low = np.floor(scaled)
        return low.astype(np.int64), scaled - low

    def randomize(self, values, rng, epsilon=None):
        values = self.check_values(values)
        self._epsilon_array(values, epsilon)  # rejects per-user budgets
        low, frac = self._rounding(values)
        encoded = low + (rng.random(values.shape) < frac)
        uniform = rng.integers(0, self.precision + 1, size=values.shape)
        replace = rng.random(values.shape) < self.uniform_probability
        return np.where(replace, uniform, encoded)

    def aggregate(self, outputs):
        """Sum of the integer reports over the user (last) axis."""
        return np.asarray(outputs, dtype=np.int64).sum(axis=-1)

    def log_prob(self, x, y):
        """Exact log R(x)(y) for real x in [0, 1] (-inf for y outside {0, ..., k})."""
        gamma = self.uniform_probability
        low, frac = self._rounding(x)
        y = np.asarray(y)
        encoded = np.where(y == low, 1.0 - frac, 0.0) + np.where(y == low + 1, frac, 0.0)
        prob = (1.0 - gamma) * encoded + gamma / (self.precision + 1)
        return np.where((y >= 0) & (y <= self.precision), np.log(prob), -np.inf)

    def output_index(self, outputs):
        return np.asarray(outputs, dtype=np.int64)

    def outputs_from_index(self, index):
        return np.asarray(index, dtype=np.int64)

    def output_pmf(self, inputs=None):
        """P[i, y] = R(inputs[i])(y); ``inputs`` default to the grid j / k (anchors index j)."""
        if inputs is None:
            inputs = self.grid_inputs()
        inputs = np.asarray(inputs, dtype=float).reshape(-1, 1)
        return np.exp(self.log_prob(inputs, np.arange(self.precision + 1)[None, :]))

    # -- moments used by the mean and sum estimators ---------------------------------------
    # -- its own analysis -----------------------------------------------------------------
    def blanket_inputs(self) -> np.ndarray:
        """Randomized rounding: every R(x) is a mixture of the grid inputs' R(j/k)."""
        return np.asarray(self.grid_inputs(), dtype=float)

    def neighbour_candidates(self, pair_grid: int | None = None) -> NeighbourCandidates:
        """The RR over {0..k} is permutation symmetric, so every pair of distinct grid points
        is equivalent to the extreme pair (0, 1) (vertex argument); x2 on a grid. The label
        carries k: mixtures of summation randomizers with different grids do not share their
        extreme points, so the vertex argument does not transfer to them."""
        k = self.precision
        x2 = np.union1d(np.linspace(0.0, 1.0, 5), [1.0 / k, 0.5 / k])
        return vertex_candidates((0.0, 1.0), x2, f"vertex:summation:{k}")

    def variation_ratio_parameters(self) -> VariationRatioRow:
        """Randomized response over the k + 1 fixed-point values; real inputs are mixtures of
        two neighbouring grid points, so the extreme pair (0, 1) is the worst: 001 Table 1,
        general RR on k + 1 options."""
        return ldp_row(self.epsilon0, grr_total_variation(self.epsilon0, self.precision + 1),
                       "001 Table 1, general RR on k+1 options")

    @property
    def report_affine(self) -> tuple[float, float]:
        """(a, b) with E[y | x] = a + b x: a = gamma k / 2, b = (1 - gamma) k."""
        gamma = self.uniform_probability
        return gamma * self.precision / 2.0, (1.0 - gamma) * self.precision

    def report_variance(self, x, epsilon=None):
        """Exact Var[y | x], as a mixture (prob. 1 - gamma: xbar; gamma: uniform U on {0..k}):
        (1 - gamma) f (1 - f) + gamma k (k + 2) / 12 + gamma (1 - gamma) (k x - k / 2)^2."""
        if epsilon is not None:
            self._epsilon_array(np.asarray(x), epsilon)  # raises: no per-user budgets
        gamma = self.uniform_probability
        k = self.precision
        x = np.asarray(x, dtype=float)
        _, frac = self._rounding(x)
        return ((1.0 - gamma) * frac * (1.0 - frac) + gamma * k * (k + 2) / 12.0
                + gamma * (1.0 - gamma) * np.square(k * x - k / 2.0))
