"""Hadamard response (HR), as in 000 App. A.4 (after Acharya, Sun and Zhang 2019).

Let D = 2^r and H[r, y] = (-1)^{popcount(r & y)} the Sylvester-Hadamard matrix. Row 0 is all
ones, so 000 excludes it from the inputs. For an input row r != 0,

    P[HR(r) = y] = exp(eps0/2 * H[r, y]) / Z,   Z = (D/2) (e^{eps0/2} + e^{-eps0/2}),

i.e. y is uniform on the D/2 columns where H[r, y] = +1 with total probability
e^eps0 / (e^eps0 + 1), else uniform on the other half; each column has probability
2 e^eps0 / (D (e^eps0 + 1)) or 2 / (D (e^eps0 + 1)), so the mechanism is exactly eps0-LDP.

Input convention (ours): user values v in [0, d) are mapped to rows r = v + 1 and D is the smallest
power of two greater than d (so rows 1..d exist and D/2 <= d). Outputs are integers y in [0, D).

The report y supports v when H[v + 1, y] = +1: p* = e^eps0 / (e^eps0 + 1) and, since two distinct
rows agree on exactly half of the columns, q* = 1/2. Support counts are a Walsh-Hadamard transform
of the output histogram: C_v = (n + sum_y hist[y] H[v + 1, y]) / 2.

Minimum over inputs (000 App. A.4): column 0 has H = +1 for every row; every other column y has
H = -1 on the row lowbit(y) <= D/2 <= d, which is a valid input, so min_x P[HR(x) = y] is the
low level for y != 0 and the high level for y = 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from shufflesim.protocols.randomizers.analysis import (
    OUTPUT_GROUPS,
    NeighbourCandidates,
    VariationRatioRow,
    ldp_row,
)
from shufflesim.protocols.randomizers.anchors import bit_patterns, unique_anchors
from shufflesim.protocols.randomizers.base import CategoricalRandomizer, OutputGroups
from shufflesim.protocols.randomizers.registry import register

#: ``output_groups`` sums over subsets of the distinct anchors (4^m work).
_MAX_GROUP_ANCHORS = 10


def walsh_hadamard(a: np.ndarray) -> np.ndarray:
    """Unnormalized fast Walsh-Hadamard transform over the last axis (length a power of two):
    out[..., r] = sum_y a[..., y] (-1)^{popcount(r & y)}. Exact for integer input."""
    a = np.asarray(a)
    size = a.shape[-1]
    lead = a.shape[:-1]
    h = 1
    while h < size:  # log2(D) butterfly stages, each vectorized
        a = a.reshape(lead + (size // (2 * h), 2, h))
        a = np.stack([a[..., 0, :] + a[..., 1, :], a[..., 0, :] - a[..., 1, :]], axis=-2)
        h *= 2
    return a.reshape(lead + (size,))


def hadamard_sign_bit(rows: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """popcount(r & y) mod 2: 0 where H[r, y] = +1, 1 where H[r, y] = -1 (broadcast)."""
    both = np.bitwise_and(np.asarray(rows, dtype=np.int64), np.asarray(columns, dtype=np.int64))
    return (np.bitwise_count(both) & 1).astype(np.int64)


@register
@dataclass(frozen=True)
class HadamardResponse(CategoricalRandomizer):
    """Hadamard response over user values [0, d) (rows 1..d of the D x D Hadamard matrix)."""

    name = "hr"
    #: Example parameters (the conformance suites build it from them).
    example = dict(epsilon0=1.2, domain_size=5)
    supports_personalized = True
    has_aggregate_sampler = True
    decomposition = OUTPUT_GROUPS

    @property
    def hadamard_size(self) -> int:
        """D: the smallest power of two greater than d."""
        return 1 << self.domain_size.bit_length()

    # -- domains --------------------------------------------------------------------------
    @property
    def output_size(self) -> int:
        return self.hadamard_size

    def positive_probability(self, epsilon=None):
        """P[H[x, y] = +1] = e^eps / (e^eps + 1) = 1 / (1 + e^-eps)."""
        eps = np.asarray(self.epsilon0 if epsilon is None else epsilon, dtype=float)
        return 1.0 / (1.0 + np.exp(-eps))

    def _log_levels(self) -> tuple[float, float]:
        """log of the per-column probabilities 2 e^eps / (D (e^eps + 1)) and 2 / (D (e^eps + 1))."""
        base = math.log(2.0 / self.hadamard_size)
        return (base - float(np.log1p(np.exp(-self.epsilon0))),
                base - float(np.log1p(np.exp(self.epsilon0))))

    # -- estimation -----------------------------------------------------------------------
    def support_probabilities(self, epsilon: float | None = None) -> tuple[float, float]:
        """(p*, q*) = (e^eps / (e^eps + 1), 1/2)."""
        return float(self.positive_probability(epsilon)), 0.5

    def support_arrays(self, epsilon):
        """(p*, q*) at every budget in ``epsilon`` (vectorized ``support_probabilities``)."""
        eps = np.asarray(epsilon, dtype=float)
        return (np.asarray(self.positive_probability(eps), dtype=float),
                np.full(eps.shape, 0.5))

    # -- its own analysis -----------------------------------------------------------------
    def neighbour_candidates(self, pair_grid: int | None = None) -> NeighbourCandidates:
        """The outputs are linear functionals y of the row index (000 App. A.4). For distinct
        nonzero rows the map y -> (x0.y, x1.y) is onto F_2^2, so every pattern holds D/4 outputs
        and the atoms do not depend on the pair; the blanket mass is the same for every y != 0 as
        long as the used rows span F_2^r (rows 1..d with d >= D/2 contain 1, 2, 4, ...). For
        000 Thm 14 the third row matters only through its linear relation with (x0, x1)
        (x2 = x0 ^ x1, independent, or equal to one of them), so x2 runs over the first four
        inputs."""
        triples = tuple((0, 1, x2) for x2 in range(min(self.domain_size, 4)))
        return NeighbourCandidates(((0, 1),), triples, (0,), True, "hadamard",
                                   "Hadamard response: the pair atoms do not depend on the rows "
                                   "(000 App. A.4; module docstring)")

    def variation_ratio_parameters(self) -> VariationRatioRow:
        """Two distinct Hadamard rows disagree on D/2 outputs, half of each sign:
        TV = (D/4)(e^eps - 1) * 2 / (D (e^eps + 1)) = (e^eps - 1)/(2 (e^eps + 1)),
        001 Table 1 Hadamard response with K = D, s = D/2."""
        return ldp_row(self.epsilon0, math.tanh(self.epsilon0 / 2.0) / 2.0,
                       "001 Table 1, Hadamard response (K=D, s=D/2)")

    def support_pair_probabilities(self, epsilon: float | None = None) -> tuple[float, float]:
        """P[H[u, y] = H[v, y] = +1] for u != v: p*/2 if the input is u or v, 1/4 otherwise,
        except for the input w with row(w) = row(u) xor row(v) (see ``support_pair_excess``).
        From 1[H = +1] = (1 + H)/2, H[u, y] H[v, y] = H[u xor v, y] and E[H[s, y] | x] = 1 for
        s = 0, (e^eps - 1)/(e^eps + 1) for s = row(x), 0 otherwise."""
        p, q = self.support_probabilities(epsilon)
        return p * q, q * q

    def support_pair_excess(self, true_counts: np.ndarray, epsilon: float | None = None):
        """E[C_u C_v] excess over the symmetric formula: n_w (e^eps - 1) / (4 (e^eps + 1)) where
        row(w) = row(u) xor row(v), for u != v and w a valid input; shape (..., d, d)."""
        counts = np.asarray(true_counts, dtype=float)
        d = self.domain_size
        c = 2.0 * self.positive_probability(epsilon) - 1.0
        rows = np.arange(1, d + 1)
        w = (rows[:, None] ^ rows[None, :]) - 1
        valid = (w >= 0) & (w < d)
        excess = np.where(valid, counts[..., np.clip(w, 0, d - 1)], 0.0)
        return excess * (c / 4.0)

    # -- sampling -------------------------------------------------------------------------
    def randomize(self, values, rng, epsilon=None):
        """Pick the sign (+1 w.p. e^eps / (e^eps + 1)), then a uniform column of that sign:
        a uniform y whose sign is wrong is moved by y xor lowbit(row), a bijection between the
        two halves."""
        values = self.check_values(values)
        eps = self._epsilon_array(values, epsilon)
        rows = values.astype(np.int64) + 1
        negative = rng.random(values.shape) >= self.positive_probability(eps)
        want_negative = negative.astype(np.int64)
        y = rng.integers(0, self.hadamard_size, size=values.shape, dtype=np.int64)
        wrong = hadamard_sign_bit(rows, y) != want_negative
        return np.where(wrong, y ^ (rows & -rows), y)

    def output_histogram(self, outputs: np.ndarray) -> np.ndarray:
        """Counts of each y in [D] over the user axis, shape (..., D)."""
        outputs = np.asarray(outputs, dtype=np.int64)
        size = self.hadamard_size
        flat = outputs.reshape(-1, outputs.shape[-1])
        offsets = (np.arange(flat.shape[0]) * size)[:, None]
        hist = np.bincount((flat + offsets).ravel(), minlength=flat.shape[0] * size)
        return hist.reshape(outputs.shape[:-1] + (size,))

    def support_counts(self, histogram: np.ndarray) -> np.ndarray:
        """C_v = (n + WHT(hist)[v + 1]) / 2 from output histograms (..., D)."""
        histogram = np.asarray(histogram, dtype=np.int64)
        transform = walsh_hadamard(histogram)
        n = histogram.sum(axis=-1, keepdims=True)
        return (n + transform[..., 1:self.domain_size + 1]) // 2

    def aggregate(self, outputs):
        return self.support_counts(self.output_histogram(outputs))

    def sample_aggregate(self, input_counts, rng):
        """Output histogram = sum over x of Multinomial(c_x, R(x)) (exact; a loop over the
        domain, vectorized over batches, O(d D) work), then the support counts."""
        c = np.asarray(input_counts, dtype=np.int64)
        columns = np.arange(self.hadamard_size)
        histogram = np.zeros(c.shape[:-1] + (self.hadamard_size,), dtype=np.int64)
        for x in range(self.domain_size):  # loop over the domain
            pmf = np.exp(self.log_prob(x, columns))
            histogram += rng.multinomial(c[..., x], pmf / pmf.sum())
        return self.support_counts(histogram)

    # -- declared distribution ------------------------------------------------------------
    def log_prob(self, x, y):
        x = np.asarray(x, dtype=np.int64)
        y = np.asarray(y, dtype=np.int64)
        high, low = self._log_levels()
        log_p = np.where(hadamard_sign_bit(x + 1, y) == 0, high, low)
        return np.where((y >= 0) & (y < self.hadamard_size), log_p, -np.inf)

    def output_index(self, outputs):
        return np.asarray(outputs, dtype=np.int64)

    def outputs_from_index(self, index):
        return np.asarray(index, dtype=np.int64)

    def output_groups(self, anchors: tuple) -> OutputGroups:
        """Closed form: the key is the sign pattern s of the distinct anchor rows at y, with
        y = 0 (the only column whose minimum is the high level) split off. The number of
        columns with pattern s is the character sum
            (D / 2^m) * sum over subsets T of the anchors with xor_T rows = 0 of (-1)^{|s & T|},
        exact in integers (no enumeration of the D columns)."""
        anchors, distinct, position = unique_anchors(anchors, self.domain_size)
        m = distinct.size
        if m > _MAX_GROUP_ANCHORS:
            raise NotImplementedError(f"hr.output_groups: at most {_MAX_GROUP_ANCHORS} anchors")
        rows = distinct + 1
        subsets = bit_patterns(m)                                   # (2^m, m) 0/1
        xor = np.bitwise_xor.reduce(np.where(subsets == 1, rows, 0), axis=1)
        null = subsets[xor == 0]                                    # includes the empty set
        patterns = bit_patterns(m)
        signs = (-1) ** ((patterns @ null.T) & 1)                   # (2^m, |null|)
        count = (signs.sum(axis=1) * self.hadamard_size) >> m     # exact integers
        count[0] -= 1                                               # column 0 split off
        high, low = self._log_levels()
        level = np.where(patterns.T == 0, high, low)                # (m, 2^m)
        mass = np.hstack([count * np.exp(level), np.exp(np.full((m, 1), high))])
        mass_min = np.append(count * math.exp(low), math.exp(high))
        keep = np.append(count > 0, True)
        return OutputGroups(anchors=anchors, mass=mass[position][:, keep], mass_min=mass_min[keep])
