"""k-subset selection (Wang et al. 2016, "Mutual information optimally local private discrete
distribution estimation"; Ye and Barg 2018, "Optimal schemes for discrete distribution estimation
under locally differential privacy").

The report is a subset S of [d] of fixed size k, drawn with probability proportional to e^eps0 if
x is in S and to 1 otherwise:

    R(x)(S) = e^{eps0 [x in S]} / Z,   Z = C(d-1, k-1) e^eps0 + C(d-1, k),

so P[x in S] = k e^eps0 / (k e^eps0 + d - k), and given whether x is in S, the other members are
a uniform subset of the remaining d - 1 values. With k = 1 this is k-RR. Ye and Barg show that
k near d / (e^eps0 + 1) is order-optimal for the l2 / l1 risk; that is the default here.

Reports are boolean membership vectors of shape (d,); output indices enumerate the k-subsets with
the combinatorial number system (index = sum_i C(c_i, i) over the sorted members c_1 < ... < c_k).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import gammaln

from shufflesim.protocols.distributions import hypergeom
from shufflesim.protocols.errors import require, require_int_at_least
from shufflesim.protocols.randomizers.analysis import (
    OUTPUT_GROUPS,
    PERMUTATION,
    VariationRatioRow,
    ldp_row,
)
from shufflesim.protocols.randomizers.anchors import bit_patterns, unique_anchors
from shufflesim.protocols.randomizers.base import CategoricalRandomizer, OutputGroups
from shufflesim.protocols.randomizers.registry import register

#: Random numbers drawn per chunk in ``randomize`` (bounds the temporary memory).
_CHUNK_ELEMENTS = 1 << 22
#: Largest output space that ``output_index`` enumerates (int64 indices).
_MAX_INDEXABLE = 1 << 62


def _log_comb(n, k):
    """log C(n, k) via gammaln (n, k broadcast; k in [0, n])."""
    return gammaln(np.asarray(n) + 1.0) - gammaln(np.asarray(k) + 1.0) - gammaln(
        np.asarray(n) - np.asarray(k) + 1.0
    )


def optimal_subset_size(epsilon0: float, domain_size: int) -> int:
    """Default k = round(d / (e^eps0 + 1)), clipped to [1, d - 1] (Ye and Barg 2018)."""
    k = round(domain_size / (math.exp(min(epsilon0, 700.0)) + 1.0))
    return int(min(max(k, 1), domain_size - 1))


@register
@dataclass(frozen=True)
class SubsetSelection(CategoricalRandomizer):
    """k-subset selection; ``subset_size`` defaults to the order-optimal d / (e^eps0 + 1)."""

    subset_size: int | None = None

    name = "subset"
    #: Example parameters (the conformance suites build it from them).
    example = dict(epsilon0=0.9, domain_size=6)
    decomposition = OUTPUT_GROUPS
    input_symmetry = PERMUTATION

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.subset_size is None:
            object.__setattr__(
                self, "subset_size", optimal_subset_size(self.epsilon0, self.domain_size)
            )
        require_int_at_least("subset_size", self.subset_size, 1)
        require(
            self.subset_size <= self.domain_size - 1, "subset_size", self.subset_size,
            f"must be at most domain_size - 1 = {self.domain_size - 1}",
        )

    # -- domains --------------------------------------------------------------------------
    @property
    def output_size(self) -> int:
        return math.comb(self.domain_size, self.subset_size)

    @property
    def output_shape(self) -> tuple[int, ...]:
        return (self.domain_size,)

    def _log_normalizer(self) -> float:
        """log Z = log(C(d-1, k-1) e^eps0 + C(d-1, k))."""
        d, k = self.domain_size, self.subset_size
        return float(np.logaddexp(self.epsilon0 + _log_comb(d - 1, k - 1), _log_comb(d - 1, k)))

    def inclusion_probability(self) -> float:
        """P[x in S] = k e^eps0 / (k e^eps0 + d - k), computed as 1 / (1 + (d-k)/k e^-eps0)."""
        d, k = self.domain_size, self.subset_size
        return 1.0 / (1.0 + (d - k) / k * math.exp(-self.epsilon0))

    # -- estimation -----------------------------------------------------------------------
    def support_probabilities(self) -> tuple[float, float]:
        """(p*, q*): p* = P[x in S]; q* = P[v in S] for v != x
        = (p* (k - 1) + (1 - p*) k) / (d - 1)."""
        d, k = self.domain_size, self.subset_size
        p = self.inclusion_probability()
        return p, (p * (k - 1) + (1.0 - p) * k) / (d - 1)

    def variation_ratio_parameters(self) -> VariationRatioRow:
        """001 Table 1, k-subset."""
        d, k, e = self.domain_size, self.subset_size, math.exp(self.epsilon0)
        top = math.comb(d - 1, k - 1) - (math.comb(d - 2, k - 2) if k >= 2 else 0)
        return ldp_row(self.epsilon0,
                       (e - 1.0) * top / (e * math.comb(d - 1, k - 1) + math.comb(d - 1, k)),
                       "001 Table 1, k-subset")

    def support_pair_probabilities(self) -> tuple[float, float]:
        """P[u, v both in S] for u != v: p* (k-1)/(d-1) if the input is u or v; otherwise
        (p* (k-1)(k-2) + (1 - p*) k (k-1)) / ((d-1)(d-2))."""
        d, k = self.domain_size, self.subset_size
        p = self.inclusion_probability()
        own = p * (k - 1) / (d - 1)
        other = 0.0 if d < 3 else (p * (k - 1) * (k - 2) + (1 - p) * k * (k - 1)) / (
            (d - 1) * (d - 2)
        )
        return own, other

    # -- sampling -------------------------------------------------------------------------
    def randomize(self, values, rng, epsilon=None):
        """Uniform random keys rank the d - 1 other values; the k smallest form the subset, and
        with probability P[x in S] the largest of them is replaced by x, leaving a uniform
        (k-1)-subset of the others plus x. Vectorized per chunk of users (O(d) per user)."""
        values = self.check_values(values)
        self._epsilon_array(values, epsilon)  # rejects an override (not personalized)
        d, k = self.domain_size, self.subset_size
        p_in = self.inclusion_probability()
        flat = values.reshape(-1).astype(np.int64)
        out = np.zeros((flat.size, d), dtype=bool)
        step = max(1, _CHUNK_ELEMENTS // d)
        for start in range(0, flat.size, step):  # chunks bound the temporary memory
            stop = min(start + step, flat.size)
            x = flat[start:stop]
            rows = np.arange(stop - start)
            keys = rng.random((stop - start, d))
            keys[rows, x] = 2.0  # never among the k smallest: d - 1 >= k others lie in [0, 1)
            chosen = np.argpartition(keys, k - 1, axis=1)[:, :k]
            largest = np.argmax(np.take_along_axis(keys, chosen, axis=1), axis=1)
            include = rng.random(stop - start) < p_in
            chosen[rows[include], largest[include]] = x[include]
            block = out[start:stop]
            np.put_along_axis(block, chosen, True, axis=1)
        return out.reshape(values.shape + (d,))

    def aggregate(self, outputs):
        return np.asarray(outputs).sum(axis=-2, dtype=np.int64)

    # -- declared distribution ------------------------------------------------------------
    def log_prob(self, x, y):
        y = np.asarray(y)
        x = np.asarray(x, dtype=np.int64)
        lead = np.broadcast_shapes(x.shape, y.shape[:-1])
        member = np.take_along_axis(
            np.broadcast_to(y, lead + (self.domain_size,)),
            np.broadcast_to(x, lead)[..., None], axis=-1,
        )[..., 0]
        size_ok = y.sum(axis=-1) == self.subset_size
        log_p = np.where(member, self.epsilon0, 0.0) - self._log_normalizer()
        return np.where(size_ok, log_p, -np.inf)

    def _comb_table(self) -> np.ndarray:
        """T[j, r] = C(j, r) for j < d, r <= k, as int64."""
        d, k = self.domain_size, self.subset_size
        if self.output_size > _MAX_INDEXABLE:
            raise NotImplementedError(f"{self.name}: C(d, k) too large for an int64 index")
        return np.array(
            [[math.comb(j, r) for r in range(k + 1)] for j in range(d)], dtype=np.int64
        )

    def output_index(self, outputs):
        """Combinatorial number system: sum over members c (sorted, rank i = 1..k) of C(c, i)."""
        table = self._comb_table()
        y = np.asarray(outputs, dtype=bool)
        rank = np.cumsum(y, axis=-1)
        columns = np.arange(self.domain_size)
        terms = table[columns, np.minimum(rank, self.subset_size)]
        return np.where(y, terms, 0).sum(axis=-1)

    def outputs_from_index(self, index):
        table = self._comb_table()
        remaining = np.asarray(index, dtype=np.int64).copy()
        out = np.zeros(remaining.shape + (self.domain_size,), dtype=bool)
        for i in range(self.subset_size, 0, -1):  # loop over the k members (greedy decoding)
            member = np.searchsorted(table[:, i], remaining, side="right") - 1
            remaining -= table[member, i]
            np.put_along_axis(out, member[..., None], True, axis=-1)
        return out

    def output_groups(self, anchors: tuple) -> OutputGroups:
        """Closed form: key = membership pattern b of the distinct anchors (the other k - |b|
        members are any of C(d - m, k - |b|) subsets); the minimum over inputs is 1 / Z for every
        S because k < d leaves some input outside S. With C(d, k) / Z = d / (k e^eps0 + d - k),
        the blanket mass of a group is
            C(d - m, k - |b|) / Z = hypergeom.pmf(|b|; d, m, k) / C(m, |b|) * d / (k e^eps0 + d - k)
        (scipy.stats.hypergeom.pmf: accurate also for huge d)."""
        anchors, distinct, position = unique_anchors(anchors, self.domain_size)
        d, k, m = self.domain_size, self.subset_size, distinct.size
        bits = bit_patterns(m)
        ones = bits.sum(axis=1)
        valid = (ones <= k) & (k - ones <= d - m)
        bits, ones = bits[valid], ones[valid]
        log_scale = math.log(d) - float(np.logaddexp(math.log(k) + self.epsilon0, math.log(d - k)))
        mass_min = hypergeom.pmf(ones, d, m, k) * np.exp(log_scale - _log_comb(m, ones))
        mass = (mass_min[None, :] * np.exp(self.epsilon0 * bits.T))[position]
        keep = mass_min > 0  # drops groups below the float range (< 1e-307)
        return OutputGroups(anchors=anchors, mass=mass[:, keep], mass_min=mass_min[keep])
