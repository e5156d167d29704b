"""Balls-into-bins (Luo, Wang and Yi 2022 [42]; 001 Table 3 row 4 and Sec. 8.2, Fig. 4).

d bins; each value v in [k] owns s special bins S(v). A user with value x throws its ball (the
input message) into a uniformly random bin of S(x), and b blanket balls, each into a uniformly
random bin of [d]. The analyzer sees the bins' loads.

001 gives the protocol only through (d, s) and its Table 3 row p = +inf, beta = 1, q = d/s,
which holds exactly when the special sets of different values are disjoint (then beta = TV = 1
and the ratio to the blanket is (1/s)/(1/d) = d/s). [42] draws S(v) with public hashing; here
S(v) = {v s, ..., v s + s - 1} (disjoint blocks), so k = ``domain_size`` <= d / s (default
floor(d / s)); the bins past k s are special for no value. 001 Sec. 5's tightness claim for
d >= 3s needs three values with disjoint special sets: k >= 3.

Blanket count from a target eps' (``blanket_messages`` absent): 001 Sec. 8.2 (Fig. 4 caption)
takes the total number of blanket balls of [42], N_b = 32 ln(2/delta') d / (eps'^2 s); with
``design_users`` users each sends ceil(N_b / design_users) (at least N_b in total).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from shufflesim.protocols.errors import (
    ParameterError,
    require,
    require_int_at_least,
    require_positive_finite,
)
from shufflesim.protocols.randomizers.analysis import PERMUTATION, VariationRatioRow
from shufflesim.protocols.randomizers.domains import Categorical
from shufflesim.protocols.randomizers.multi_message.base import (
    MessageSupport,
    MultiMessageRandomizer,
    blanket_count_from_total,
    message_histogram,
)
from shufflesim.protocols.randomizers.registry import register


def balls_into_bins_blanket_total(epsilon: float, delta: float, bins: int,
                                  special_bins: int) -> float:
    """N_b = 32 ln(2/delta') d / (eps'^2 s): [42]'s number of blanket balls (001 Fig. 4)."""
    return 32.0 * math.log(2.0 / delta) * bins / (epsilon ** 2 * special_bins)


@register
@dataclass(frozen=True)
class BallsIntoBins(MultiMessageRandomizer):
    """d bins, s special bins per value, b uniform blanket balls per user."""

    epsilon0: float
    bins: int
    special_bins: int = 1
    domain_size: int | None = None
    blanket_messages: int | None = None
    delta: float | None = None
    design_users: int | None = None

    name = "balls_into_bins"
    #: Example parameters (the conformance suites build it from them).
    example = dict(epsilon0=1.0, bins=7, special_bins=2, blanket_messages=1)
    input_symmetry = PERMUTATION

    def __post_init__(self) -> None:
        super().__post_init__()
        require_int_at_least("bins", self.bins, 2)
        require_int_at_least("special_bins", self.special_bins, 1)
        require(self.special_bins * 2 <= self.bins, "special_bins", self.special_bins,
                f"must be at most bins / 2 = {self.bins // 2} (two values, disjoint sets)")
        if self.domain_size is not None:
            require_int_at_least("domain_size", self.domain_size, 2)
            require(self.domain_size * self.special_bins <= self.bins, "domain_size",
                    self.domain_size,
                    f"must be at most bins / special_bins = {self.bins // self.special_bins}")
        if self.blanket_messages is not None:
            require_int_at_least("blanket_messages", self.blanket_messages, 1)
        else:
            if self.delta is None or self.design_users is None:
                raise ParameterError(
                    "randomizer.blanket_messages", None,
                    "is required unless delta and design_users are given (then derived from "
                    "epsilon0, delta, bins and special_bins, 001 Fig. 4)")
            require_positive_finite("delta", self.delta)
            require(self.delta < 1, "delta", self.delta, "must lie in (0, 1)")
            require_int_at_least("design_users", self.design_users, 1)

    @property
    def values(self) -> int:
        """k: the number of values (each owning s bins)."""
        return int(self.domain_size if self.domain_size is not None
                   else self.bins // self.special_bins)

    @property
    def input_domain(self) -> Categorical:
        return Categorical(self.values)

    @property
    def blanket_messages_per_client(self) -> int:
        if self.blanket_messages is not None:
            return int(self.blanket_messages)
        total = balls_into_bins_blanket_total(self.epsilon0, self.delta, self.bins,
                                              self.special_bins)
        return blanket_count_from_total(total, self.design_users)

    @property
    def message_alphabet_size(self) -> int:
        return int(self.bins)

    @property
    def aggregate_size(self) -> int:
        return int(self.bins)

    def message_log_prob(self, x, messages):
        y = np.asarray(messages)
        s = self.special_bins
        inside = (y // s == np.asarray(x)) & (y < self.values * s)
        return np.where(inside, -math.log(s), -np.inf)

    def blanket_log_prob(self, messages):
        return np.full(np.shape(messages), -math.log(self.bins))

    def sample_input_messages(self, values, rng):
        values = np.asarray(values, dtype=np.int64)
        s = self.special_bins
        if s == 1:
            return values.copy()
        return values * s + rng.integers(0, s, size=values.shape, dtype=np.int64)

    def sample_blanket_messages(self, shape, rng):
        return rng.integers(0, self.bins, size=shape, dtype=np.int64)

    def aggregate_messages(self, messages):
        return message_histogram(messages, self.bins)

    def sample_aggregate(self, input_counts, rng):
        """Loads: the c_v balls of value v spread by a multinomial over S(v), plus
        Multinomial(n b, uniform on d) blanket balls. Exact."""
        c = np.asarray(input_counts, dtype=np.int64)
        s, d, k = self.special_bins, self.bins, self.values
        lead = c.shape[:-1]
        if s == 1:
            special = c
        else:
            special = rng.multinomial(c, np.full(s, 1.0 / s)).reshape(lead + (k * s,))
        loads = np.zeros(lead + (d,), dtype=np.int64)
        loads[..., :k * s] = special
        n = c.sum(axis=-1)
        return loads + rng.multinomial(n * self.blanket_messages_per_client, np.full(d, 1.0 / d))

    def support_counts(self, aggregate):
        """S_v: the load of v's special bins."""
        a = np.asarray(aggregate)
        k, s = self.values, self.special_bins
        return a[..., :k * s].reshape(a.shape[:-1] + (k, s)).sum(axis=-1)

    def variation_ratio_parameters(self) -> VariationRatioRow:
        return VariationRatioRow(float("inf"), 1.0, self.bins / self.special_bins,
                                 "001 Table 3, balls-into-bins [42] with d bins, s special bins")

    def message_support(self) -> MessageSupport:
        """A ball supports v when it lands in S(v): the input ball of v always, of another
        value never (disjoint sets), a blanket ball w.p. s/d."""
        return MessageSupport(1.0, 0.0, self.special_bins / self.bins)
