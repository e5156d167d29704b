"""Binary randomized response over {0, 1}.

R(x) = x with probability e^eps0 / (e^eps0 + 1), else 1 - x (Warner 1965; 000 Example 4.1;
004 Sec. 3 with k = 2; 003 Sec. 5 uses it for frequency estimation under personalized budgets).
It is k-RR with k = 2, kept as its own family because the papers treat it as the canonical binary
mechanism and because personalized budgets are its main use.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from shufflesim.protocols.randomizers.analysis import (
    OUTPUT_GROUPS,
    PERMUTATION,
    VariationRatioRow,
    grr_total_variation,
    ldp_row,
)
from shufflesim.protocols.randomizers.base import Categorical, Randomizer
from shufflesim.protocols.randomizers.krr import weighted_histogram
from shufflesim.protocols.randomizers.registry import register


@register
@dataclass(frozen=True)
class BinaryRR(Randomizer):
    """Binary RR; reports are integers in {0, 1}; the aggregate is the histogram (n_0, n_1)."""

    epsilon0: float

    name = "brr"
    #: Example parameters (the conformance suites build it from them).
    example = dict(epsilon0=0.7)
    supports_personalized = True
    has_aggregate_sampler = True
    decomposition = OUTPUT_GROUPS
    input_symmetry = PERMUTATION

    @property
    def input_domain(self) -> Categorical:
        return Categorical(2)

    @property
    def output_size(self) -> int:
        return 2

    def keep_probability(self, epsilon: np.ndarray | float | None = None) -> np.ndarray | float:
        """P[R(x) = x] = e^eps / (e^eps + 1), computed as 1 / (1 + e^-eps) (no overflow)."""
        eps = self.epsilon0 if epsilon is None else epsilon
        return 1.0 / (1.0 + np.exp(-np.asarray(eps, dtype=float)))

    def support_probabilities(self, epsilon: float | None = None) -> tuple[float, float]:
        """(p*, q*): a report supports its own value w.p. p*, the other value w.p. q* = 1 - p*."""
        p = float(self.keep_probability(epsilon))
        return p, 1.0 - p

    def support_pair_probabilities(self, epsilon: float | None = None) -> tuple[float, float]:
        """P[one report supports two distinct values]: 0 (the supports are disjoint)."""
        return 0.0, 0.0

    def support_arrays(self, epsilon):
        """(p*, q*) at every budget in ``epsilon`` (vectorized ``support_probabilities``)."""
        p = np.asarray(self.keep_probability(np.asarray(epsilon, dtype=float)), dtype=float)
        return p, (1.0 - p) / (2 - 1)

    def weighted_support(self, reports, scale):
        """Weighted histogram of the one-hot supports: sum_i scale_i 1[y_i = v]."""
        return weighted_histogram(reports, scale, 2)

    def variation_ratio_parameters(self) -> VariationRatioRow:
        """001 Table 1, RR on {0,1}: beta = (e^eps0 - 1)/(e^eps0 + 1)."""
        return ldp_row(self.epsilon0, grr_total_variation(self.epsilon0, 2),
                       "001 Table 1, RR on {0,1}")

    def randomize(self, values, rng, epsilon=None):
        values = self.check_values(values)
        eps = self._epsilon_array(values, epsilon)
        flip = rng.random(values.shape) >= self.keep_probability(eps)
        return np.where(flip, 1 - values, values)

    def aggregate(self, outputs):
        outputs = np.asarray(outputs)
        ones = outputs.sum(axis=-1, dtype=np.int64)
        return np.stack([outputs.shape[-1] - ones, ones], axis=-1)

    def sample_aggregate(self, input_counts, rng):
        """Ones = Binomial(c_1, p) + Binomial(c_0, 1 - p); zeros = n - ones (exact)."""
        c = np.asarray(input_counts, dtype=np.int64)
        p = self.keep_probability()
        ones = rng.binomial(c[..., 1], p) + rng.binomial(c[..., 0], 1.0 - p)
        return np.stack([c.sum(axis=-1) - ones, ones], axis=-1)

    def log_prob(self, x, y):
        x = np.asarray(x)
        y = np.asarray(y)
        # log of e^eps/(e^eps+1) and 1/(e^eps+1), via log1p for accuracy at small eps.
        log_keep = -np.log1p(np.exp(-self.epsilon0))
        log_flip = -np.log1p(np.exp(self.epsilon0))
        return np.where(x == y, log_keep, log_flip)

    def output_index(self, outputs):
        return np.asarray(outputs, dtype=np.int64)

    def outputs_from_index(self, index):
        return np.asarray(index, dtype=np.int64)
