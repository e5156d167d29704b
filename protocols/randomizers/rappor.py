"""Unary encodings and RAPPOR (symmetric unary encoding).

A unary encoding reports a bit vector y in {0,1}^d whose bits are independent, with
P[y_v = 1] = a if v = x and b if v != x (a > b). It is eps0-LDP with
eps0 = log(a (1 - b) / (b (1 - a))) (Wang et al. 2017, "Locally differentially private protocols
for frequency estimation", Sec. 4.3). Hence, with W = |y| the Hamming weight,

    log R(x)(y) = y_x log a + (1 - y_x) log(1 - a) + (W - y_x) log b + (d - 1 - W + y_x) log(1 - b),

which depends on x only through y_x, and, because a > b, the minimum over all inputs is attained
at any x with y_x = 0 (at y = (1, ..., 1) every input gives the same value). 000 App. A.2-A.3
use exactly this structure (the "extreme output" y* = (1, ..., 1)).

RAPPOR (Erlingsson et al. 2014, basic one-time RAPPOR; 000 App. A.2): every bit of the one-hot
encoding goes through eps0/2 binary RR, i.e. a = e^{eps0/2} / (1 + e^{eps0/2}) and b = 1 - a, so
that R(x)(y) = e^{(d - d_H(UE(x), y)) eps0/2} / (1 + e^{eps0/2})^d.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from dataclasses import dataclass

import numpy as np

from shufflesim.protocols.randomizers.analysis import (
    OUTPUT_GROUPS,
    PERMUTATION,
    VariationRatioRow,
    ldp_row,
)
from shufflesim.protocols.randomizers.anchors import bit_patterns, unique_anchors
from shufflesim.protocols.randomizers.base import CategoricalRandomizer, OutputGroups
from shufflesim.protocols.randomizers.registry import register

#: Random numbers drawn per chunk in ``randomize`` (bounds the temporary memory to ~32 MB).
_CHUNK_ELEMENTS = 1 << 22


@dataclass(frozen=True)
class UnaryEncoding(CategoricalRandomizer):
    """Common implementation of unary encodings (see the module docstring); not registered.

    Reports are boolean arrays of shape (d,); the aggregate is the per-bit count (support count).
    Subclasses give the log bit probabilities (log a, log(1 - a), log b, log(1 - b)).
    """

    has_aggregate_sampler = True
    decomposition = OUTPUT_GROUPS
    input_symmetry = PERMUTATION
    report_dtype = np.bool_

    @abstractmethod
    def log_bit_probabilities(self, epsilon=None) -> tuple:
        """(log a, log(1 - a), log b, log(1 - b)) at ``epsilon`` (default epsilon0); arrays
        broadcast with ``epsilon``."""

    def bit_probabilities(self, epsilon=None) -> tuple:
        """(a, b): P[bit x = 1 | input x] and P[bit v = 1 | input x != v]."""
        log_a, _, log_b, _ = self.log_bit_probabilities(epsilon)
        return np.exp(log_a), np.exp(log_b)

    # -- domains --------------------------------------------------------------------------
    @property
    def output_size(self) -> int:
        return 1 << self.domain_size

    @property
    def output_shape(self) -> tuple[int, ...]:
        return (self.domain_size,)

    # -- estimation -----------------------------------------------------------------------
    def support_probabilities(self, epsilon: float | None = None) -> tuple[float, float]:
        """(p*, q*) = (a, b): bit v of a report is the support of v."""
        a, b = self.bit_probabilities(epsilon)
        return float(a), float(b)

    def support_arrays(self, epsilon):
        """(p*, q*) = (a, b) at every budget in ``epsilon`` (vectorized)."""
        eps = np.asarray(epsilon, dtype=float)
        a, b = self.bit_probabilities(eps)
        return np.broadcast_to(a, eps.shape).astype(float), np.broadcast_to(b, eps.shape) + 0.0

    def weighted_support(self, reports, scale):
        """sum_i scale_i y_i: bit v of a report is its support of v."""
        return np.einsum("...n,...nd->...d", scale, np.asarray(reports).astype(float))

    def support_pair_probabilities(self, epsilon: float | None = None) -> tuple[float, float]:
        """P[bits u and v both set] for u != v: a b if the input is u or v, b^2 otherwise
        (the bits are independent)."""
        a, b = self.support_probabilities(epsilon)
        return a * b, b * b

    # -- sampling -------------------------------------------------------------------------
    def randomize(self, values, rng, epsilon=None):
        values = self.check_values(values)
        eps = self._epsilon_array(values, epsilon)
        d = self.domain_size
        a, b = self.bit_probabilities(eps)
        flat = values.reshape(-1)
        a = np.broadcast_to(a, values.shape).reshape(-1)
        b = np.broadcast_to(b, values.shape).reshape(-1)
        out = np.empty((flat.size, d), dtype=bool)
        step = max(1, _CHUNK_ELEMENTS // d)
        for start in range(0, flat.size, step):  # chunks bound the temporary memory
            stop = min(start + step, flat.size)
            rows = np.arange(stop - start)
            u = rng.random((stop - start, d))
            bits = u < b[start:stop, None]
            bits[rows, flat[start:stop]] = u[rows, flat[start:stop]] < a[start:stop]
            out[start:stop] = bits
        return out.reshape(values.shape + (d,))

    def aggregate(self, outputs):
        outputs = np.asarray(outputs)
        return outputs.sum(axis=-2, dtype=np.int64)

    def sample_aggregate(self, input_counts, rng):
        """C_v = Binomial(c_v, a) + Binomial(n - c_v, b), independent over v (the bits of one
        report are independent and users are independent): exact in distribution."""
        c = np.asarray(input_counts, dtype=np.int64)
        a, b = self.bit_probabilities()
        others = c.sum(axis=-1, keepdims=True) - c
        return rng.binomial(c, a) + rng.binomial(others, b)

    # -- declared distribution ------------------------------------------------------------
    def log_prob(self, x, y):
        y = np.asarray(y)
        d = self.domain_size
        x = np.asarray(x, dtype=np.int64)
        lead = np.broadcast_shapes(x.shape, y.shape[:-1])
        log_a, log_1a, log_b, log_1b = self.log_bit_probabilities()
        weight = y.sum(axis=-1, dtype=np.int64)
        own = np.take_along_axis(
            np.broadcast_to(y, lead + (d,)), np.broadcast_to(x, lead)[..., None], axis=-1
        )[..., 0].astype(np.int64)
        return (own * log_a + (1 - own) * log_1a
                + (weight - own) * log_b + (d - 1 - weight + own) * log_1b)

    def output_index(self, outputs):
        """Index sum_v y_v 2^v (needs d <= 62)."""
        self._require_indexable()
        y = np.asarray(outputs).astype(np.int64)
        return (y << np.arange(self.domain_size, dtype=np.int64)).sum(axis=-1)

    def outputs_from_index(self, index):
        self._require_indexable()
        index = np.asarray(index, dtype=np.int64)
        return ((index[..., None] >> np.arange(self.domain_size, dtype=np.int64)) & 1).astype(bool)

    def _require_indexable(self) -> None:
        if self.domain_size > 62:
            raise NotImplementedError(f"{self.name}: output_index needs domain_size <= 62")

    def output_groups(self, anchors: tuple) -> OutputGroups:
        """Closed-form grouping by ratio triple (000 Sec. 4.4: outputs with equal ratios merge).

        With m distinct anchors, the probability of y under an anchor is the law of the m
        anchor bits times a factor F(rest) of the other d - m bits that is the same for every
        anchor; the minimum over all inputs is attained at a non-anchor x with y_x = 0 when the
        weight W < d, i.e. (1 - a) b^{|bits|} (1 - b)^{m - 1 - |bits|} F(rest), and at
        y = 1...1 every input has a b^{d-1}. So the ratios R(anchor)(y) / min_x R(x)(y) depend
        on the anchor bits only, except at y = 1...1 where they are all 1. The groups are:

        * one per anchor-bit pattern (2^m), summed over every rest except the all-ones one:
          the rest carries total mass 1, or 1 - b^{d-m} for the all-ones pattern
          (-expm1((d - m) log b), no cancellation);
        * y = 1...1 when d > m: mass a b^{d-1} under every anchor and as its minimum (the same
          float, so its ratios are exactly 1), dropped when it underflows.

        Every group's masses are products of a few explicit factors (a few ulps each), so the
        ratios stay accurate for any d; the former grouping by (pattern, weight of the rest)
        took ratios of binomial masses that go subnormal for d ~ 10^3 (3.0, 4.0, 73.0 instead
        of e^eps0 at d = 1024)."""
        anchors, distinct, position = unique_anchors(anchors, self.domain_size)
        d, m = self.domain_size, distinct.size
        log_a, log_1a, log_b, log_1b = (float(v) for v in self.log_bit_probabilities())
        bits = bit_patterns(m)                                          # (2^m, m)
        ones = bits.sum(axis=1)
        log_others = ones * log_b + (m - ones) * log_1b
        # Anchor i's own bit has law (a, 1 - a); the other anchors' bits have law (b, 1 - b).
        log_anchor = (bits * (log_a - log_b) + (1 - bits) * (log_1a - log_1b)
                      + log_others[:, None])                            # (2^m, m)
        # Minimum over inputs: at an input x with y_x = 0 (an anchor, or for the all-ones
        # pattern a non-anchor whose rest bit is 0): the same expression for every pattern.
        log_min = log_1a + ones * log_b + (m - 1 - ones) * log_1b
        rest = np.ones(1 << m)
        if d > m:
            rest[-1] = -math.expm1((d - m) * log_b)
        else:  # d == m: the all-ones pattern is y = 1...1 itself
            log_min[-1] = log_a + (m - 1) * log_b
        mass = np.exp(log_anchor.T) * rest                              # (m, 2^m)
        mass_min = np.exp(log_min) * rest
        if d > m:
            top = math.exp(log_a + (d - 1) * log_b)
            mass = np.concatenate([mass, np.full((m, 1), top)], axis=1)
            mass_min = np.append(mass_min, top)
        mass = mass[position]
        keep = mass_min > 0  # drops groups below the float range
        return OutputGroups(anchors=anchors, mass=mass[:, keep], mass_min=mass_min[keep])


@register
@dataclass(frozen=True)
class RAPPOR(UnaryEncoding):
    """Basic one-time RAPPOR / symmetric unary encoding: each one-hot bit through eps0/2 RR."""

    name = "rappor"
    #: Example parameters (the conformance suites build it from them).
    example = dict(epsilon0=1.1, domain_size=4)

    def variation_ratio_parameters(self) -> VariationRatioRow:
        """001 Table 1, binary RR (RAPPOR): beta = tanh(eps0 / 4)."""
        return ldp_row(self.epsilon0, math.tanh(self.epsilon0 / 4.0),
                       "001 Table 1, binary RR (RAPPOR)")

    def log_bit_probabilities(self, epsilon=None):
        """a = e^{eps/2} / (1 + e^{eps/2}), b = 1 - a (000 App. A.2)."""
        half = np.asarray(self.epsilon0 if epsilon is None else epsilon, dtype=float) / 2.0
        log_a = -np.log1p(np.exp(-half))
        log_b = -np.log1p(np.exp(half))
        return log_a, log_b, log_b, log_a
