"""pureDUMP and mixDUMP (Li et al., "Privacy enhancement via dummy points in the shuffle model"
[41]; 001 Table 3 row 5 and Sec. 4).

Values x in [d]. A user sends one input message and b dummy points, each uniform on [d] (the
blanket messages).

* ``pure_dump``: the input message is x itself (no local randomization). As the f -> 0 end of
  the mixDUMP row: p = +inf, beta = 1, q = d (the input message is a point mass; a dummy has
  mass 1/d).
* ``mix_dump``: the input message is d-ary randomized response with flip probability f: x with
  probability 1 - f, each other value with probability f/(d-1). 001 Table 3:
  p = (1-f)(d-1)/f, beta = ((1-f)(d-1) - f)/(d-1) = (1 - f) - f/(d-1), q = (1-f) d
  (ratios (1-f)/(f/(d-1)), total variation of two GRR rows, (1-f)/(1/d)); f in (0, (d-1)/d)
  (at f = (d-1)/d the input message is uniform and beta = 0).

001 does not state DUMP's number of dummies (nor mixDUMP's f) as a function of a target
epsilon: ``blanket_messages`` (and ``flip_probability``) are explicit parameters and
``epsilon0`` only records the design target (base.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from shufflesim.protocols.errors import require, require_int_at_least
from shufflesim.protocols.randomizers.analysis import PERMUTATION, VariationRatioRow
from shufflesim.protocols.randomizers.multi_message.base import (
    MessageSupport,
    MultiMessageRandomizer,
    message_histogram,
)
from shufflesim.protocols.randomizers.registry import register


class _Dump(MultiMessageRandomizer):
    """Shared by pureDUMP and mixDUMP: d bins, b uniform dummies per user."""

    input_symmetry = PERMUTATION

    def _check(self) -> None:
        require_int_at_least("domain_size", self.domain_size, 2)
        require_int_at_least("blanket_messages", self.blanket_messages, 1)

    @property
    def message_alphabet_size(self) -> int:
        return int(self.domain_size)

    @property
    def aggregate_size(self) -> int:
        return int(self.domain_size)

    def blanket_log_prob(self, messages):
        return np.full(np.shape(messages), -np.log(self.domain_size))

    def sample_blanket_messages(self, shape, rng):
        return rng.integers(0, self.domain_size, size=shape, dtype=np.int64)

    def aggregate_messages(self, messages):
        return message_histogram(messages, self.domain_size)

    def _sample_blanket_aggregate(self, n, rng):
        d = self.domain_size
        return rng.multinomial(n * self.blanket_messages_per_client, np.full(d, 1.0 / d))


@register
@dataclass(frozen=True)
class PureDump(_Dump):
    """pureDUMP: the value itself plus b uniform dummies."""

    epsilon0: float
    domain_size: int
    blanket_messages: int

    name = "pure_dump"
    #: Example parameters (the conformance suites build it from them).
    example = dict(epsilon0=1.0, domain_size=4, blanket_messages=2)

    def __post_init__(self) -> None:
        super().__post_init__()
        self._check()

    def message_log_prob(self, x, messages):
        return np.where(np.asarray(x) == np.asarray(messages), 0.0, -np.inf)

    def sample_input_messages(self, values, rng):
        return np.asarray(values, dtype=np.int64)

    def sample_aggregate(self, input_counts, rng):
        c = np.asarray(input_counts, dtype=np.int64)
        return c + self._sample_blanket_aggregate(c.sum(axis=-1), rng)

    def variation_ratio_parameters(self) -> VariationRatioRow:
        return VariationRatioRow(float("inf"), 1.0, float(self.domain_size),
                                 "001 Table 3, mixDUMP [41] row at f = 0 (pureDUMP)")

    def message_support(self) -> MessageSupport:
        return MessageSupport(1.0, 0.0, 1.0 / self.domain_size)


@register
@dataclass(frozen=True)
class MixDump(_Dump):
    """mixDUMP: d-ary randomized response with flip probability f plus b uniform dummies."""

    epsilon0: float
    domain_size: int
    flip_probability: float
    blanket_messages: int

    name = "mix_dump"
    #: Example parameters (the conformance suites build it from them).
    example = dict(epsilon0=1.0, domain_size=4, flip_probability=0.3, blanket_messages=2)

    def __post_init__(self) -> None:
        super().__post_init__()
        self._check()
        f = self.flip_probability
        d = self.domain_size
        require(isinstance(f, (int, float)) and not isinstance(f, bool)
                and 0 < f < (d - 1) / d, "flip_probability", f,
                f"must lie in the open interval (0, (d-1)/d) = (0, {(d - 1) / d:g})")

    @property
    def flip(self) -> float:
        return float(self.flip_probability)

    def message_log_prob(self, x, messages):
        f = self.flip
        return np.where(np.asarray(x) == np.asarray(messages), np.log1p(-f),
                        np.log(f / (self.domain_size - 1)))

    def sample_input_messages(self, values, rng):
        values = np.asarray(values, dtype=np.int64)
        d = self.domain_size
        flipped = rng.random(values.shape) < self.flip
        other = (values + rng.integers(1, d, size=values.shape)) % d
        return np.where(flipped, other, values)

    def sample_aggregate(self, input_counts, rng):
        """Kept: Binomial(c_x, 1 - f); the flipped users of value x spread by a multinomial over
        the d - 1 other values (x + 1 + j mod d, j < d - 1); plus the dummies. Exact."""
        c = np.asarray(input_counts, dtype=np.int64)
        d = self.domain_size
        kept = rng.binomial(c, 1.0 - self.flip)
        landed = rng.multinomial(c - kept, np.full(d - 1, 1.0 / (d - 1)))  # (..., d, d-1)
        # value t receives landed[v, (t - v - 1) mod d] from every v != t (integer gather)
        t, v = np.meshgrid(np.arange(d), np.arange(d), indexing="ij")
        j = (t - v - 1) % d
        gathered = landed[..., v, np.minimum(j, d - 2)]  # (..., t, v)
        spread = np.where(v != t, gathered, 0).sum(axis=-1)
        return kept + spread + self._sample_blanket_aggregate(c.sum(axis=-1), rng)

    def variation_ratio_parameters(self) -> VariationRatioRow:
        f = self.flip
        d = self.domain_size
        return VariationRatioRow((1 - f) * (d - 1) / f, ((1 - f) * (d - 1) - f) / (d - 1),
                                 (1 - f) * d, "001 Table 3, mixDUMP [41] flip probability f")

    def message_support(self) -> MessageSupport:
        f = self.flip
        return MessageSupport(1.0 - f, f / (self.domain_size - 1), 1.0 / self.domain_size)
