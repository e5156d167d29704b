"""Local hashing: binary (BLH) and optimized (OLH) local hash.

A user draws a hash function h: [d] -> [g] uniformly at random and reports (h, RR_g(h(x))),
where RR_g is g-ary randomized response: the bucket h(x) is kept with probability
e^eps0 / (e^eps0 + g - 1) and otherwise replaced by a uniform other bucket (Wang et al. 2017,
Sec. 4.4; 000 App. A.1 for BLH, g = 2). OLH uses g = round(e^eps0) + 1, which minimises the
estimator's variance.

The report (h, b) supports every value v with h(v) = b. Under a uniformly random h,
P[h(v) = b] = 1/g for v != x independently of everything else, so the support indicators of one
report are independent across v: p* = e^eps0 / (e^eps0 + g - 1), q* = 1/g.

Hash representation (reports are int64 arrays (..., 2) = [hash id, bucket]):

* Exact mode, when g^d * g <= 2^20: the hash id is the full function table as an integer in
  [0, g^d), h(v) = digit v of the id in base g. The hash is then exactly a uniform random
  function, and ``output_index``, ``output_pmf`` and every derived quantity are exact.
* Seeded mode, otherwise: the hash id is a uniform 64-bit seed s (stored as the int64 with the
  same bits) and h_s(v) = splitmix64(s + (v + 1) * 0x9E3779B97F4A7C15) mod g, where splitmix64 is
  Steele, Lea and Flood's finalizer (xor-shift 30, multiply 0xBF58476D1CE4E5B9, xor-shift 27,
  multiply 0x94D049BB133111EB, xor-shift 31). ``log_prob`` is still the exact probability of a
  report (2^-64 for the seed times the RR probability given h_s(x)); but ``output_groups``,
  ``support_probabilities`` (q* = 1/g) and ``sample_aggregate`` describe the idealized uniformly
  random function, which the seeded family only approximates.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from dataclasses import dataclass

import numpy as np

from shufflesim.protocols.errors import require, require_int_at_least
from shufflesim.protocols.randomizers.analysis import (
    OUTPUT_GROUPS,
    PERMUTATION,
    VariationRatioRow,
    grr_total_variation,
    ldp_row,
)
from shufflesim.protocols.randomizers.anchors import bit_patterns, unique_anchors
from shufflesim.protocols.randomizers.base import (
    MAX_ENUMERABLE_OUTPUTS,
    CategoricalRandomizer,
    OutputGroups,
)
from shufflesim.protocols.randomizers.registry import register

#: Hash evaluations per chunk in ``aggregate`` (bounds the temporary memory).
_CHUNK_ELEMENTS = 1 << 21
#: Largest number of buckets accepted (keeps buckets and the RR arithmetic comfortably in int64).
MAX_HASH_RANGE = 1 << 31

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


def splitmix_hash(seeds: np.ndarray, values: np.ndarray, buckets: int) -> np.ndarray:
    """h_s(v) = splitmix64(s + (v + 1) * golden) mod g, broadcast over seeds (uint64) and
    values (integers in [0, d)); returns int64 buckets."""
    seeds, values = np.broadcast_arrays(np.asarray(seeds, dtype=np.uint64),
                                        np.asarray(values).astype(np.uint64))
    shape = seeds.shape
    # 1-d arrays, in place: uint64 array arithmetic wraps modulo 2^64 silently, as intended.
    z = values.reshape(-1) + np.uint64(1)
    z *= _GOLDEN
    z += seeds.reshape(-1)
    shifted = np.empty_like(z)
    for shift, multiplier in ((30, _MIX1), (27, _MIX2)):
        np.right_shift(z, np.uint64(shift), out=shifted)
        z ^= shifted
        z *= multiplier
    np.right_shift(z, np.uint64(31), out=shifted)
    z ^= shifted
    z %= np.uint64(buckets)
    return z.astype(np.int64).reshape(shape)


@dataclass(frozen=True)
class LocalHash(CategoricalRandomizer):
    """Common implementation of local hashing (module docstring); not registered."""

    supports_personalized = True
    has_aggregate_sampler = True
    decomposition = OUTPUT_GROUPS
    input_symmetry = PERMUTATION

    @property
    @abstractmethod
    def buckets(self) -> int:
        """The hash range g."""

    @property
    def exact_hash(self) -> bool:
        """True when hashes are full function tables (g^d * g <= 2^20)."""
        g, d = self.buckets, self.domain_size
        # The log test short-circuits before the exact integer power gets large.
        return (d + 1) * math.log2(g) < 21 and g ** (d + 1) <= MAX_ENUMERABLE_OUTPUTS

    @property
    def hash_count(self) -> int:
        """Number of hash ids: g^d (exact mode) or 2^64 (seeded mode)."""
        return self.buckets ** self.domain_size if self.exact_hash else 1 << 64

    # -- domains --------------------------------------------------------------------------
    @property
    def output_size(self) -> int:
        return self.hash_count * self.buckets

    @property
    def output_shape(self) -> tuple[int, ...]:
        return (2,)

    # -- hashing --------------------------------------------------------------------------
    def hash_values(self, hash_ids: np.ndarray, values: np.ndarray) -> np.ndarray:
        """h(v) for hash ids (int64 column 0 of the reports) and inputs v, broadcast."""
        hash_ids = np.asarray(hash_ids, dtype=np.int64)
        values = np.asarray(values, dtype=np.int64)
        g = self.buckets
        if self.exact_hash:
            return (hash_ids // np.power(np.int64(g), values)) % g
        return splitmix_hash(hash_ids.view(np.uint64), values, g)

    def _draw_hash_ids(self, shape: tuple, rng: np.random.Generator) -> np.ndarray:
        if self.exact_hash:
            return rng.integers(0, self.hash_count, size=shape, dtype=np.int64)
        return rng.integers(0, 1 << 64, size=shape, dtype=np.uint64).view(np.int64)

    def keep_probability(self, epsilon=None):
        """P[reported bucket = h(x)] = e^eps / (e^eps + g - 1) = 1 / (1 + (g - 1) e^-eps)."""
        eps = np.asarray(self.epsilon0 if epsilon is None else epsilon, dtype=float)
        return 1.0 / (1.0 + (self.buckets - 1) * np.exp(-eps))

    # -- estimation -----------------------------------------------------------------------
    def support_probabilities(self, epsilon: float | None = None) -> tuple[float, float]:
        """(p*, q*) = (e^eps / (e^eps + g - 1), 1/g) under a uniformly random hash."""
        return float(self.keep_probability(epsilon)), 1.0 / self.buckets

    def support_arrays(self, epsilon):
        """(p*, q*) at every budget in ``epsilon`` (vectorized ``support_probabilities``)."""
        eps = np.asarray(epsilon, dtype=float)
        return (np.asarray(self.keep_probability(eps), dtype=float),
                np.full(eps.shape, 1.0 / self.buckets))

    def variation_ratio_parameters(self) -> VariationRatioRow:
        """001 Table 1 gives (e^eps - 1)/(e^eps + l - 1) for a hash that separates x0 and x1;
        with the declared uniformly random hash the two hash values differ w.p. 1 - 1/l, so the
        exact TV of the declared distribution is (1 - 1/l) times that (the table value is an
        upper bound)."""
        g = int(self.buckets)
        return ldp_row(self.epsilon0, (1.0 - 1.0 / g) * grr_total_variation(self.epsilon0, g),
                       "001 Table 1, local hash (random hash)")

    def support_pair_probabilities(self, epsilon: float | None = None) -> tuple[float, float]:
        """P[h(u) = h(v) = b] for u != v: p*/g if the input is u or v, 1/g^2 otherwise
        (independent support indicators under a uniformly random hash)."""
        p, q = self.support_probabilities(epsilon)
        return p * q, q * q

    # -- sampling -------------------------------------------------------------------------
    def randomize(self, values, rng, epsilon=None):
        values = self.check_values(values)
        eps = self._epsilon_array(values, epsilon)
        g = self.buckets
        ids = self._draw_hash_ids(values.shape, rng)
        hashed = self.hash_values(ids, values)
        other = rng.integers(0, g - 1, size=values.shape)
        other = other + (other >= hashed)
        keep = rng.random(values.shape) < self.keep_probability(eps)
        return np.stack([ids, np.where(keep, hashed, other)], axis=-1)

    def aggregate(self, outputs):
        """Support counts C_v = #{reports (h, b) : h(v) = b}, shape (..., d); O(n d) hash
        evaluations, vectorized over chunks of reports."""
        outputs = np.asarray(outputs, dtype=np.int64)
        d = self.domain_size
        n = outputs.shape[-2]
        lead = outputs.shape[:-2]
        flat = outputs.reshape(-1, 2)
        counts = np.zeros((math.prod(lead), d), dtype=np.int64)
        if n == 0:
            return counts.reshape(lead + (d,))
        domain = np.arange(d, dtype=np.int64)
        step = max(1, _CHUNK_ELEMENTS // d)
        for start in range(0, flat.shape[0], step):  # chunks bound the temporary memory
            stop = min(start + step, flat.shape[0])
            match = self.hash_values(flat[start:stop, 0, None], domain) == flat[start:stop, 1, None]
            batch = np.arange(start, stop) // n
            first = np.flatnonzero(np.r_[True, batch[1:] != batch[:-1]])
            counts[batch[first]] += np.add.reduceat(match, first, axis=0, dtype=np.int64)
        return counts.reshape(lead + (d,))

    def sample_aggregate(self, input_counts, rng):
        """C_v = Binomial(c_v, p*) + Binomial(n - c_v, 1/g), independent over v: exact under a
        uniformly random hash (exact mode), the idealized model otherwise."""
        c = np.asarray(input_counts, dtype=np.int64)
        p, q = self.support_probabilities()
        return rng.binomial(c, p) + rng.binomial(c.sum(axis=-1, keepdims=True) - c, q)

    # -- declared distribution ------------------------------------------------------------
    def _log_rr_denominator(self) -> float:
        return float(np.logaddexp(self.epsilon0, math.log(self.buckets - 1)))

    def log_prob(self, x, y):
        y = np.asarray(y, dtype=np.int64)
        x = np.asarray(x, dtype=np.int64)
        hashed = self.hash_values(y[..., 0], x)
        log_hash = -math.log(self.hash_count)
        in_range = (y[..., 1] >= 0) & (y[..., 1] < self.buckets)
        log_p = np.where(hashed == y[..., 1], self.epsilon0, 0.0) - self._log_rr_denominator()
        return np.where(in_range, log_hash + log_p, -np.inf)

    def output_index(self, outputs):
        """Exact mode only: hash id * g + bucket."""
        self._require_exact()
        outputs = np.asarray(outputs, dtype=np.int64)
        return outputs[..., 0] * self.buckets + outputs[..., 1]

    def outputs_from_index(self, index):
        self._require_exact()
        index = np.asarray(index, dtype=np.int64)
        return np.stack([index // self.buckets, index % self.buckets], axis=-1)

    def _require_exact(self) -> None:
        if not self.exact_hash:
            raise NotImplementedError(
                f"{self.name}: output_index needs g^d * g <= {MAX_ENUMERABLE_OUTPUTS} (exact mode)"
            )

    def output_groups(self, anchors: tuple) -> OutputGroups:
        """Closed form under a uniformly random hash. An output (h, b) has probability
        (e^eps0 if h(a) = b else 1) / (|H| (e^eps0 + g - 1)) under anchor a, so the key is the
        match pattern s_a = [h(a) = b] over the m distinct anchors; the minimum over all inputs is
        the "1" level unless h maps every input to b (the extreme outputs of 000 App. A.1), which
        splits the all-match pattern in two. Fractions of (h, b) pairs, per bucket b:
        pattern s: (g-1)^{m-|s|} g^{d-m} / g^d; of which "all of [d] -> b": g^{-d}."""
        anchors, distinct, position = unique_anchors(anchors, self.domain_size)
        d, g, m = self.domain_size, self.buckets, distinct.size
        log_rr = self._log_rr_denominator()
        bits = bit_patterns(m)
        matches = bits.sum(axis=1)
        # log of the probability of drawing (h, b) in the group: sum over the g buckets b.
        log_frac = (m - matches) * math.log(g - 1) - (m - 1) * math.log(g)
        log_frac = np.where(matches == m, -(m - 1) * math.log(g), log_frac)
        log_level = self.epsilon0 * bits.T - log_rr                      # (m, 2^m)
        log_min = np.full(bits.shape[0], -log_rr)
        # Split the all-match pattern: all of [d] hashes to b (fraction g^{1-d}) or not.
        full = int(np.flatnonzero(matches == m)[0])
        log_all = -(d - 1) * math.log(g)
        rest_fraction = -math.expm1(-(d - m) * math.log(g))              # 1 - g^{m-d}
        log_frac = log_frac.astype(float)
        if rest_fraction > 0:
            log_frac[full] += math.log(rest_fraction)
        else:
            log_frac[full] = -np.inf
        log_frac = np.append(log_frac, log_all)
        log_level = np.hstack([log_level, np.full((m, 1), self.epsilon0 - log_rr)])
        log_min = np.append(log_min, self.epsilon0 - log_rr)
        mass = np.exp(log_frac[None, :] + log_level)[position]
        mass_min = np.exp(log_frac + log_min)
        keep = mass_min > 0  # drops empty groups and those below the float range (< 1e-307)
        return OutputGroups(anchors=anchors, mass=mass[:, keep], mass_min=mass_min[keep])


@register
@dataclass(frozen=True)
class BinaryLocalHash(LocalHash):
    """BLH: local hashing into g = 2 buckets (000 App. A.1)."""

    name = "blh"
    #: Example parameters (the conformance suites build it from them).
    example = dict(epsilon0=0.8, domain_size=4)

    @property
    def buckets(self) -> int:
        return 2


@register
@dataclass(frozen=True)
class OptimizedLocalHash(LocalHash):
    """OLH: ``hash_range`` g defaults to round(e^eps0) + 1 (Wang et al. 2017, Sec. 4.4),
    capped at 2^31."""

    hash_range: int | None = None

    name = "olh"
    #: Example parameters (the conformance suites build it from them).
    example = dict(epsilon0=1.5, domain_size=4)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.hash_range is None:
            default = round(math.exp(min(self.epsilon0, 30.0))) + 1
            object.__setattr__(self, "hash_range", int(min(default, MAX_HASH_RANGE)))
        require_int_at_least("hash_range", self.hash_range, 2)
        require(self.hash_range <= MAX_HASH_RANGE, "hash_range", self.hash_range,
                f"must be at most {MAX_HASH_RANGE}")

    @property
    def buckets(self) -> int:
        return self.hash_range
