"""Cheu and Zhilyaev's histogram protocol from fake users (001 Table 3 row 3; Cheu and Zhilyaev
2022 [15]).

Values x in [d]. A user sends its one-hot vector e_x with every bit flipped independently with
probability f (the input message) and b fake-user messages: the zero vector with every bit
flipped with probability f (the blanket messages). Messages are bit vectors in {0,1}^d.

001 Table 3: p = (1-f)^2/f^2, beta = 1 - 2f, q = (1-f)/f, f in (0, 1/2). Checks: R(x)(y) /
R(x')(y) = ((1-f)/f)^(flips(x') - flips(x)) with flips differing by at most 2, so p = ((1-f)/f)^2;
TV(R(x), R(x')) = TV of the bits at x and x' = 1 - 2f (with the other d - 2 bits equal); the
ratio to the blanket's mass is ((1-f)/f)^(|y| - flips(x)) <= (1-f)/f.

Flip probability from a target eps' (``flip_probability`` absent): 001's code (Sec. 8.2, the
published implementation of its Fig. 3) takes Cheu and Zhilyaev's condition
N f (1 - f) >= (33/5) ((e^eps' + 1)/(e^eps' - 1))^2 ln(4/delta') with N the number of users
(``design_users``) and the smaller root, f = (1 - sqrt(1 - 4 R / N)) / 2, R the right-hand side;
no root (N < 4 R) is a ParameterError, and f is capped at 1/2 - 1e-8 as in that code.

The aggregate is the count of ones per coordinate over all messages (length d): the sufficient
statistic of the frequency estimator (not of the full message multiset, which lives on 2^d
vectors; ``message_distribution`` and ``multiset_log_prob`` enumerate it for small d only, and
``message_groups`` gives its closed-form grouping for any d).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import product

import numpy as np
from scipy.special import gammaln

from shufflesim.protocols.errors import (
    ParameterError,
    require,
    require_int_at_least,
    require_positive_finite,
)
from shufflesim.protocols.randomizers.analysis import PERMUTATION, VariationRatioRow
from shufflesim.protocols.randomizers.multi_message.base import (
    MessageGroups,
    MessageSupport,
    MultiMessageRandomizer,
)
from shufflesim.protocols.randomizers.registry import register

#: f is capped just below 1/2 (001's code), where beta = 1 - 2f would vanish.
F_CAP = 0.5 - 1e-8
#: Largest d whose messages have an int64 index.
MAX_INDEXED_BITS = 62
#: Most distinct anchors ``message_groups`` splits on (2^r patterns).
MAX_GROUP_ANCHORS = 10


def cheu_flip_probability(epsilon: float, delta: float, users: int) -> float:
    """f from a target (eps', delta') and N users (module docstring; 001's Sec. 8.2 code):
    the smaller root of N f (1 - f) = (33/5) ((e^eps'+1)/(e^eps'-1))^2 ln(4/delta')."""
    right = 33.0 / 5.0 * (1.0 / math.tanh(epsilon / 2.0)) ** 2 * math.log(4.0 / delta)
    discriminant = 1.0 - 4.0 * right / users
    if discriminant < 0:
        raise ParameterError(
            "randomizer.design_users", users,
            f"too few users for eps' = {epsilon:g}, delta' = {delta:g}: Cheu-Zhilyaev's flip "
            f"probability needs N >= 4 (33/5) coth(eps'/2)^2 ln(4/delta') = {4 * right:.6g}")
    return min(F_CAP, (1.0 - math.sqrt(discriminant)) / 2.0)


@register
@dataclass(frozen=True)
class Cheu(MultiMessageRandomizer):
    """Bit vectors with flip probability f; b fake-user (zero-vector) messages per user."""

    epsilon0: float
    domain_size: int
    flip_probability: float | None = None
    blanket_messages: int = 1
    delta: float | None = None
    design_users: int | None = None

    name = "cheu"
    #: Example parameters (the conformance suites build it from them).
    example = dict(epsilon0=1.0, domain_size=3, flip_probability=0.2, blanket_messages=1)
    input_symmetry = PERMUTATION
    report_dtype = np.uint8

    def __post_init__(self) -> None:
        super().__post_init__()
        require_int_at_least("domain_size", self.domain_size, 2)
        require_int_at_least("blanket_messages", self.blanket_messages, 1)
        f = self.flip_probability
        if f is not None:
            require(isinstance(f, (int, float)) and not isinstance(f, bool) and 0 < f < 0.5,
                    "flip_probability", f, "must lie in the open interval (0, 1/2)")
        else:
            if self.delta is None or self.design_users is None:
                raise ParameterError(
                    "randomizer.flip_probability", None,
                    "is required unless delta and design_users are given (f is then derived "
                    "from epsilon0, delta and design_users)")
            require_positive_finite("delta", self.delta)
            require(self.delta < 1, "delta", self.delta, "must lie in (0, 1)")
            require_int_at_least("design_users", self.design_users, 1)
            cheu_flip_probability(self.epsilon0, self.delta, self.design_users)

    @property
    def flip(self) -> float:
        """f: given, or derived from (epsilon0, delta, design_users)."""
        if self.flip_probability is not None:
            return float(self.flip_probability)
        return cheu_flip_probability(self.epsilon0, self.delta, self.design_users)

    @property
    def message_alphabet_size(self) -> int:
        return 2 ** int(self.domain_size)

    @property
    def message_shape(self) -> tuple[int, ...]:
        return (int(self.domain_size),)

    @property
    def aggregate_size(self) -> int:
        return int(self.domain_size)

    # -- one message -------------------------------------------------------------------------
    def _log_flips(self, flips):
        f = self.flip
        d = self.domain_size
        return flips * math.log(f) + (d - flips) * math.log1p(-f)

    def message_log_prob(self, x, messages):
        """Hamming distance to e_x: |y| + 1 - 2 y_x."""
        y = np.asarray(messages)
        x = np.asarray(x)
        weight = y.sum(axis=-1, dtype=np.int64)
        y_x = np.sum(y * (np.arange(self.domain_size) == x[..., None]), axis=-1)
        return self._log_flips(weight + 1 - 2 * y_x)

    def blanket_log_prob(self, messages):
        return self._log_flips(np.asarray(messages).sum(axis=-1, dtype=np.int64))

    def message_index(self, messages):
        d = self.domain_size
        if d > MAX_INDEXED_BITS:
            raise ParameterError("domain_size", d, f"message index needs d <= {MAX_INDEXED_BITS}")
        weights = np.int64(1) << np.arange(d, dtype=np.int64)
        return np.asarray(messages, dtype=np.int64) @ weights

    def messages_from_index(self, index):
        d = self.domain_size
        if d > MAX_INDEXED_BITS:
            raise ParameterError("domain_size", d, f"message index needs d <= {MAX_INDEXED_BITS}")
        index = np.asarray(index, dtype=np.int64)
        return ((index[..., None] >> np.arange(d, dtype=np.int64)) & 1).astype(np.uint8)

    def message_groups(self, anchors: tuple) -> MessageGroups:
        """Closed form for any d: a group is (the bits at the r distinct anchor coordinates,
        the weight w of the other d - r bits), C(d - r, w) messages each; a message's
        probability under anchor a and under the blanket depends only on that."""
        anchors = tuple(int(a) for a in anchors)
        distinct = sorted(set(anchors))
        r = len(distinct)
        if r > MAX_GROUP_ANCHORS:
            raise ParameterError("anchors", r, f"at most {MAX_GROUP_ANCHORS} distinct anchors")
        rest = self.domain_size - r
        patterns = np.array(list(product((0, 1), repeat=r)), dtype=np.int64).reshape(-1, r)
        weights = np.arange(rest + 1)
        log_count = gammaln(rest + 1) - gammaln(weights + 1) - gammaln(rest - weights + 1)
        ones = patterns.sum(axis=1)
        blanket_flips = ones[:, None] + weights[None, :]
        blanket = np.exp(log_count[None, :] + self._log_flips(blanket_flips)).ravel()
        mass = []
        for a in anchors:
            own = patterns[:, distinct.index(a)]
            flips = (ones + 1 - 2 * own)[:, None] + weights[None, :]
            mass.append(np.exp(log_count[None, :] + self._log_flips(flips)).ravel())
        count = np.exp(np.broadcast_to(log_count, (patterns.shape[0], rest + 1))).ravel()
        return MessageGroups(anchors, np.vstack(mass), blanket, count)

    # -- sampling ----------------------------------------------------------------------------
    def sample_input_messages(self, values, rng):
        values = np.asarray(values)
        flips = rng.random(values.shape + (self.domain_size,)) < self.flip
        onehot = np.arange(self.domain_size) == values[..., None]
        return (flips ^ onehot).astype(np.uint8)

    def sample_blanket_messages(self, shape, rng):
        return (rng.random(tuple(shape) + (self.domain_size,)) < self.flip).astype(np.uint8)

    def aggregate_messages(self, messages):
        """Ones per coordinate over the messages (..., N, d) -> (..., d)."""
        return np.asarray(messages).sum(axis=-2, dtype=np.int64)

    def sample_aggregate(self, input_counts, rng):
        """C_v = Binomial(c_v, 1 - f) + Binomial(n - c_v + n b, f), exact (independent bits)."""
        c = np.asarray(input_counts, dtype=np.int64)
        n = c.sum(axis=-1, keepdims=True)
        f = self.flip
        return (rng.binomial(c, 1.0 - f)
                + rng.binomial(n - c + n * self.blanket_messages_per_client, f))

    # -- analysis ----------------------------------------------------------------------------
    def variation_ratio_parameters(self) -> VariationRatioRow:
        f = self.flip
        return VariationRatioRow((1 - f) ** 2 / f ** 2, 1 - 2 * f, (1 - f) / f,
                                 "001 Table 3, Cheu et al. [15] flip probability f on {0,1}^d")

    def message_support(self) -> MessageSupport:
        """Bit v of a message: 1 - f (the input message of a user holding v), f otherwise."""
        f = self.flip
        return MessageSupport(1.0 - f, f, f)
