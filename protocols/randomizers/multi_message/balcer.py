"""Balcer et al. binary summation with blanket coins (001 Table 3 rows 1-2; Balcer and Cheu
2020 [4] with a coin of probability p, Balcer, Cheu, Joseph and Mao 2021 [5] with a uniform
coin).

A user with x in {0, 1} sends its bit x (the input message, not randomized: p = +inf in
001 Table 3) and b blanket bits, each Bernoulli(p) (``coin = "biased"``, p =
``coin_probability``) or Bernoulli(1/2) (``coin = "uniform"``). The analyzer sees the number of
ones among the n (1 + b) messages; the sum estimate subtracts the blanket's mean n b p.

001 Table 3: p = +inf, beta = 1, q = max(1/p, 1/(1 - p)) (the input message is a point mass; a
blanket bit has probability at least min(p, 1 - p) on either value). Neither 001 nor its text of
[4], [5] gives the number of blanket bits as a function of a target epsilon: ``blanket_messages``
is an explicit parameter and ``epsilon0`` only records the design target (base.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from shufflesim.protocols.errors import ParameterError, require, require_int_at_least
from shufflesim.protocols.randomizers.analysis import VariationRatioRow
from shufflesim.protocols.randomizers.domains import Categorical
from shufflesim.protocols.randomizers.multi_message.base import (
    MessageSupport,
    MultiMessageRandomizer,
)
from shufflesim.protocols.randomizers.registry import register

COINS = ("biased", "uniform")


@register
@dataclass(frozen=True)
class Balcer(MultiMessageRandomizer):
    """Binary summation: the bit x plus b Bernoulli(p) blanket bits (module docstring)."""

    epsilon0: float
    blanket_messages: int
    coin: str = "biased"
    coin_probability: float | None = None

    name = "balcer"
    #: Example parameters (the conformance suites build it from them).
    example = dict(epsilon0=1.0, blanket_messages=2, coin_probability=0.3)
    estimand = "sum"

    def __post_init__(self) -> None:
        super().__post_init__()
        require_int_at_least("blanket_messages", self.blanket_messages, 1)
        require(self.coin in COINS, "coin", self.coin, f"must be one of {list(COINS)}")
        p = self.coin_probability
        if self.coin == "uniform":
            require(p is None or p == 0.5, "coin_probability", p,
                    "must be 0.5 or absent for the uniform coin")
        else:
            if p is None:
                raise ParameterError("coin_probability", None, "is required for coin = 'biased'")
            require(isinstance(p, (int, float)) and not isinstance(p, bool) and 0 < p < 1,
                    "coin_probability", p, "must lie in the open interval (0, 1)")

    @property
    def probability(self) -> float:
        """The blanket coin's P[1]."""
        return 0.5 if self.coin == "uniform" else float(self.coin_probability)

    @property
    def input_domain(self) -> Categorical:
        return Categorical(2)

    @property
    def message_alphabet_size(self) -> int:
        return 2

    @property
    def aggregate_size(self) -> int:
        return 2

    def message_log_prob(self, x, messages):
        return np.where(np.asarray(x) == np.asarray(messages), 0.0, -np.inf)

    def blanket_log_prob(self, messages):
        p = self.probability
        return np.where(np.asarray(messages) == 1, np.log(p), np.log1p(-p))

    def sample_input_messages(self, values, rng):
        return np.asarray(values, dtype=np.int64)

    def sample_blanket_messages(self, shape, rng):
        return (rng.random(shape) < self.probability).astype(np.int64)

    def aggregate_messages(self, messages):
        """(number of 0-messages, number of 1-messages)."""
        messages = np.asarray(messages)
        ones = np.sum(messages, axis=-1, dtype=np.int64)
        return np.stack([messages.shape[-1] - ones, ones], axis=-1)

    def sample_aggregate(self, input_counts, rng):
        """Ones = c_1 + Binomial(n b, p), exact."""
        c = np.asarray(input_counts, dtype=np.int64)
        n = c.sum(axis=-1)
        ones = c[..., 1] + rng.binomial(n * self.blanket_messages_per_client, self.probability)
        return np.stack([n * self.messages_per_client - ones, ones], axis=-1)

    def variation_ratio_parameters(self) -> VariationRatioRow:
        p = self.probability
        source = ("001 Table 3, Balcer et al. [5] uniform coin" if self.coin == "uniform"
                  else "001 Table 3, Balcer et al. [4] coin probability p")
        return VariationRatioRow(float("inf"), 1.0, max(1.0 / p, 1.0 / (1.0 - p)), source)

    def message_support(self) -> MessageSupport:
        """Support of the value 1 (the sum estimand reads the count of ones): the input message
        is 1 iff x = 1; a blanket bit is 1 w.p. p."""
        return MessageSupport(1.0, 0.0, self.probability)
