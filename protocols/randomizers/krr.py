"""k-ary randomized response (generalized randomized response, GRR).

R(x) = x with probability e^eps0 / (e^eps0 + k - 1), otherwise each other value with probability
1 / (e^eps0 + k - 1) (Warner 1965; Wang et al. 2017; 000 Table 2 row k-RR).
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
from shufflesim.protocols.randomizers.anchors import unique_anchors
from shufflesim.protocols.randomizers.base import CategoricalRandomizer, OutputGroups
from shufflesim.protocols.randomizers.registry import register


def weighted_histogram(reports, scale, domain_size: int) -> np.ndarray:
    """sum_i scale_i 1[reports_i = v] for v in [0, domain_size), per leading batch row (users on
    the last axis): the weighted support counts of one-hot (value-naming) reports."""
    reports = np.asarray(reports)
    d = domain_size
    flat = reports.reshape(-1, reports.shape[-1]).astype(np.int64)
    offsets = (np.arange(flat.shape[0]) * d)[:, None]
    weights = np.asarray(scale).reshape(flat.shape).ravel()
    hist = np.bincount((flat + offsets).ravel(), weights=weights, minlength=flat.shape[0] * d)
    return hist.reshape(reports.shape[:-1] + (d,))


@register
@dataclass(frozen=True)
class KRR(CategoricalRandomizer):
    """k-RR over {0, ..., k-1}; reports are integers; the aggregate is the output histogram."""

    name = "krr"
    #: Example parameters (the conformance suites build it from them).
    example = dict(epsilon0=1.3, domain_size=5)
    supports_personalized = True
    has_aggregate_sampler = True
    decomposition = OUTPUT_GROUPS
    input_symmetry = PERMUTATION

    @property
    def output_size(self) -> int:
        return self.domain_size

    def keep_probability(self, epsilon: np.ndarray | float | None = None) -> np.ndarray | float:
        """P[R(x) = x] = e^eps / (e^eps + k - 1)."""
        eps = self.epsilon0 if epsilon is None else epsilon
        return 1.0 / (1.0 + (self.domain_size - 1) * np.exp(-np.asarray(eps, dtype=float)))

    def randomize(self, values, rng, epsilon=None):
        values = self.check_values(values)
        eps = self._epsilon_array(values, epsilon)
        k = self.domain_size
        # Mixture form: report the truth w.p. lam = (e^eps - 1) / (e^eps + k - 1), else a
        # uniform value among all k. P[x] = lam + (1 - lam)/k = e^eps/(e^eps + k - 1) and
        # P[y] = (1 - lam)/k = 1/(e^eps + k - 1) for y != x, as declared; two draws per user,
        # the uniform one in the narrowest integer type.
        lam = -np.expm1(-np.asarray(eps, dtype=float)) * self.keep_probability(eps)
        uniform = rng.integers(0, k, size=values.shape, dtype=np.min_scalar_type(k - 1))
        keep = rng.random(values.shape) < lam
        return np.where(keep, values, uniform)

    def aggregate(self, outputs):
        outputs = np.asarray(outputs)
        k = self.domain_size
        flat = outputs.reshape(-1, outputs.shape[-1])
        offsets = (np.arange(flat.shape[0]) * k)[:, None]
        counts = np.bincount((flat + offsets).ravel(), minlength=flat.shape[0] * k)
        return counts.reshape(outputs.shape[:-1] + (k,))

    def support_probabilities(self, epsilon: float | None = None) -> tuple[float, float]:
        """(p*, q*) = (e^eps / (e^eps + k - 1), 1 / (e^eps + k - 1)): a report supports only
        the value it names (Wang et al. 2017, "pure" protocol view of GRR)."""
        p = float(self.keep_probability(epsilon))
        return p, (1.0 - p) / (self.domain_size - 1)

    def support_pair_probabilities(self, epsilon: float | None = None) -> tuple[float, float]:
        """P[one report supports two distinct values]: 0 (a report names one value)."""
        return 0.0, 0.0

    def support_arrays(self, epsilon):
        """(p*, q*) at every budget in ``epsilon`` (vectorized ``support_probabilities``)."""
        p = np.asarray(self.keep_probability(np.asarray(epsilon, dtype=float)), dtype=float)
        return p, (1.0 - p) / (self.domain_size - 1)

    def weighted_support(self, reports, scale):
        """Weighted histogram of the one-hot supports: sum_i scale_i 1[y_i = v]."""
        return weighted_histogram(reports, scale, self.domain_size)

    def variation_ratio_parameters(self) -> VariationRatioRow:
        """001 Table 1, general RR on d options: beta = (e^eps0 - 1)/(e^eps0 + d - 1)."""
        return ldp_row(self.epsilon0, grr_total_variation(self.epsilon0, self.domain_size),
                       "001 Table 1, general RR on d options")

    def sample_aggregate(self, input_counts, rng):
        """Output histogram = sum over x of Multinomial(c_x, R(x)); sampled as kept counts
        Binomial(c_x, p_keep) plus the flipped users spread uniformly over the other values.

        Exact in distribution. Cost: one multinomial over k - 1 cells per input value (a loop
        over the domain, vectorized over the batch axes), O(k) memory per step.
        """
        c = np.asarray(input_counts, dtype=np.int64)
        k = self.domain_size
        kept = rng.binomial(c, self.keep_probability())
        flipped = c - kept
        spread = np.zeros(c.shape, dtype=np.int64)
        uniform_others = np.full(k - 1, 1.0 / (k - 1))
        for x in range(k):  # loop over the domain, vectorized over batches
            landed = rng.multinomial(flipped[..., x], uniform_others)
            spread[..., :x] += landed[..., :x]
            spread[..., x + 1:] += landed[..., x:]
        return kept + spread

    def log_prob(self, x, y):
        x = np.asarray(x)
        y = np.asarray(y)
        log_denominator = np.logaddexp(self.epsilon0, np.log(self.domain_size - 1))
        return np.where(x == y, self.epsilon0, 0.0) - log_denominator

    def output_index(self, outputs):
        return np.asarray(outputs, dtype=np.int64)

    def outputs_from_index(self, index):
        return np.asarray(index, dtype=np.int64)

    def output_groups(self, anchors: tuple) -> OutputGroups:
        """Closed form (no k x k matrix): one group per distinct anchor a (the output y = a) and
        one for the k - m outputs outside the anchors; every output has minimum 1 / Z over the
        inputs (k >= 2), Z = e^eps0 + k - 1 (000 Table 2 row k-RR)."""
        anchors, distinct, position = unique_anchors(anchors, self.domain_size)
        m = distinct.size
        low = float(np.exp(-np.logaddexp(self.epsilon0, np.log(self.domain_size - 1))))
        high = float(np.exp(self.epsilon0 - np.logaddexp(self.epsilon0,
                                                          np.log(self.domain_size - 1))))
        count = np.append(np.ones(m), self.domain_size - m)
        level = np.hstack([np.where(np.eye(m, dtype=bool), high, low), np.full((m, 1), low)])
        keep = count > 0
        return OutputGroups(anchors=anchors, mass=(level * count)[position][:, keep],
                            mass_min=(low * count)[keep])
