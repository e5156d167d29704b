"""Duchi et al.'s one-dimensional mechanism (FOCS 2013) for x in [-1, 1].

Listed in 001 (Table 5, row "Duchi et al. for [-1, 1]^d": p = e^eps,
beta = (e^eps - 1) / (e^eps + 1), q = e^eps). The report is +B or -B with

    B = (e^eps + 1) / (e^eps - 1),    P[+B | x] = 1/2 + x (e^eps - 1) / (2 (e^eps + 1)).

Unbiased: E[y | x] = B (2 P[+B | x] - 1) = x; Var[y | x] = B^2 - x^2. The probability ratio is
largest for x = 1 vs x' = -1: (1 + beta) / (1 - beta) = e^eps with beta = (e^eps - 1)/(e^eps + 1),
so the mechanism is exactly eps-LDP. Since P[+B | x] is affine in x, every R(x) is a mixture of
R(-1) and R(1); ``output_pmf`` therefore defaults to these two extreme inputs.

Reports are the reals +-B (so that the plain sum is unbiased, also with per-user budgets, where
B depends on the user's budget); the output index is 0 for -B and 1 for +B.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special

from shufflesim.protocols.randomizers.analysis import (
    DISCRETE_PMF,
    NeighbourCandidates,
    VariationRatioRow,
    ldp_row,
    vertex_candidates,
)
from shufflesim.protocols.randomizers.base import Interval, Randomizer
from shufflesim.protocols.randomizers.numeric import UnbiasedReports
from shufflesim.protocols.randomizers.registry import register


def _beta(eps):
    """(e^eps - 1) / (e^eps + 1) = tanh(eps / 2)."""
    return np.tanh(np.asarray(eps, dtype=float) / 2.0)


@register
@dataclass(frozen=True)
class Duchi(UnbiasedReports, Randomizer):
    """Duchi et al.'s mechanism; inputs in [-1, 1]; reports +-B; sum aggregate."""

    epsilon0: float

    name = "duchi"
    #: Example parameters (the conformance suites build it from them).
    example = dict(epsilon0=0.8)
    supports_personalized = True
    decomposition = DISCRETE_PMF
    report_dtype = np.float64

    @property
    def input_domain(self) -> Interval:
        return Interval(-1.0, 1.0)

    @property
    def output_size(self) -> int:
        return 2

    @property
    def output_bound(self) -> float:
        """B = (e^eps0 + 1) / (e^eps0 - 1)."""
        return float(1.0 / _beta(self.epsilon0))

    def _sign_probabilities(self, x, epsilon=None):
        """(P[-B | x], P[+B | x]) = ((1 - x beta) / 2, (1 + x beta) / 2), each with full relative
        precision: the less likely sign has probability (1 - |x|)/2 + |x| / (e^eps + 1) (as
        1 - beta = 2 expit(-eps)), which 1/2 - tanh(eps/2)/2 loses at large eps (all digits
        beyond eps ~ 37); the other is (1 + |x|)/2 - |x| expit(-eps) >= 1/2."""
        eps = self.epsilon0 if epsilon is None else epsilon
        x = np.asarray(x, dtype=float)
        ax = np.abs(x)
        tail = special.expit(-np.asarray(eps, dtype=float))
        small = 0.5 * (1.0 - ax) + ax * tail
        large = 0.5 * (1.0 + ax) - ax * tail
        return np.where(x >= 0, small, large), np.where(x >= 0, large, small)

    def plus_probability(self, x, epsilon=None):
        """P[+B | x] = (1 + x beta) / 2 (see ``_sign_probabilities``)."""
        return self._sign_probabilities(x, epsilon)[1]

    def randomize(self, values, rng, epsilon=None):
        values = self.check_values(values).astype(float)
        eps = self._epsilon_array(values, epsilon)
        bound = 1.0 / _beta(eps)
        plus = rng.random(values.shape) < self.plus_probability(values, eps)
        return np.where(plus, bound, -bound)

    def aggregate(self, outputs):
        """Sum of the reports over the user (last) axis."""
        return np.asarray(outputs, dtype=float).sum(axis=-1)

    def log_prob(self, x, y):
        """log P[y | x]; a report is identified by its sign (see ``output_index``)."""
        p_minus, p_plus = self._sign_probabilities(x)
        return np.log(np.where(np.asarray(y) > 0, p_plus, p_minus))

    def output_index(self, outputs):
        return (np.asarray(outputs) > 0).astype(np.int64)

    def outputs_from_index(self, index):
        index = np.asarray(index)
        return np.where(index == 1, self.output_bound, -self.output_bound)

    def output_pmf(self, inputs=None):
        """P[i, j] over outputs (-B, +B); ``inputs`` default to the extreme inputs (-1, 1), so the
        anchors of ``output_groups`` index them: 0 -> x = -1, 1 -> x = 1."""
        if inputs is None:
            inputs = np.array([-1.0, 1.0])
        p_minus, p_plus = self._sign_probabilities(np.asarray(inputs, dtype=float).reshape(-1))
        return np.stack([p_minus, p_plus], axis=-1)

    # -- its own analysis -----------------------------------------------------------------
    def blanket_inputs(self) -> np.ndarray:
        """P[+B | x] is affine in x: every R(x) is a mixture of R(-1) and R(1)."""
        domain = self.input_domain
        return np.array([domain.low, domain.high], dtype=float)

    def neighbour_candidates(self, pair_grid: int | None = None) -> NeighbourCandidates:
        """The extreme pair (-1, 1) (vertex argument); x2 on a grid of 9 inputs."""
        return vertex_candidates((-1.0, 1.0), np.linspace(-1.0, 1.0, 9), "vertex:duchi")

    def variation_ratio_parameters(self) -> VariationRatioRow:
        """001 Table 5, Duchi et al.: beta = tanh(eps0 / 2)."""
        return ldp_row(self.epsilon0, math.tanh(self.epsilon0 / 2.0), "001 Table 5, Duchi et al.")

    # -- moments used by the mean and sum estimators ---------------------------------------
    def report_variance(self, x, epsilon=None):
        """Var[report | x] = B^2 - x^2 with B = 1 / tanh(eps / 2)."""
        eps = self.epsilon0 if epsilon is None else epsilon
        return 1.0 / np.square(_beta(eps)) - np.square(np.asarray(x, dtype=float))
