"""Multi-message randomizers: the contract every multi-message protocol of 001 Table 3 follows.

A user with value x sends m = 1 + b messages (001 Sec. 4, "Multi-message protocols"): exactly
one *input message*, drawn from ``message_distribution(x)``, and b *blanket messages*
(input-independent), each drawn independently from ``blanket_distribution()``. The analyzer sees
the multiset of all n m messages. In 001's variation-ratio bound (Thm 4.2) the "n - 1 other
users" become the n' b blanket messages of the other users; (p, beta) come from the input
message and q from the blanket message (001 Table 3).

These are **not** eps0-LDP randomizers: the input message alone can be non-private (p = +inf in
Table 3 for balcer, balls_into_bins, pure_dump). ``epsilon0`` (the first field, validated by the
base class) is the *target central epsilon* eps' of the protocol's original analysis (001 Sec.
8.2 calls it eps'): where the paper gives a formula, the protocol's free parameters (a flip
probability, a number of blanket messages) are derived from it when they are not given
explicitly; where not, they are explicit parameters and ``epsilon0`` only records the design
target. ``local_epsilon`` is the LDP level of one input message, log p (possibly inf).

The contract (names the bounds in protocols/bounds/multi_message.py read)
-------------------------------------------------------------------------
class variables
    ``multi_message = True``; ``decomposition = MULTI_MESSAGE`` (the generic single-message
    engine refuses it: an unknown family); ``has_aggregate_sampler = True``;
    ``estimand`` = "frequency" or "sum" (which estimator of protocols.estimators.multi_message
    fits).
sizes
    ``blanket_messages_per_client`` (b), ``messages_per_client`` (m = 1 + b; the SimPy pipeline
    reads it), ``message_alphabet_size`` (K, number of distinct messages, a Python int),
    ``message_shape`` (trailing shape of one message: () for an index, (d,) for cheu's bit
    vectors), ``aggregate_size`` (length of the aggregate).
one message (exact declared distributions)
    ``message_log_prob(x, messages)``, ``blanket_log_prob(messages)``: log-probability of
    messages (shape (...,) + message_shape), ``x`` broadcasting against the leading axes;
    ``message_index(messages)`` / ``messages_from_index(index)``: the index in [0, K);
    ``message_distribution(x)`` -> (..., K) pmf over the index, ``blanket_distribution()`` ->
    (K,) (both only for K <= MAX_ENUMERABLE_OUTPUTS);
    ``message_groups(anchors)`` -> :class:`MessageGroups`: messages grouped so that inside a
    group every message has the same probability under every anchor input and under the
    blanket (cheu overrides it with a closed form: its alphabet is 2^d).
one user
    ``log_prob(x, y)``: log-probability of the ordered report y (shape (m,) + message_shape;
    position 0 is the input message, 1..b the blanket messages);
    ``multiset_log_prob(x, counts)``: log-probability of one user's message multiset given as
    counts (..., K) over the message index (the shuffler forgets the order):
    P(c) = (b! / prod_k c_k!) prod_k beta_k^c_k * sum_j P_x(j) c_j / beta_j,
    beta the blanket pmf, P_x the input message's pmf.
its analysis
    ``variation_ratio_parameters()`` -> VariationRatioRow(p, beta, q, source): the 001 Table 3
    row (p may be ``math.inf``); ``local_epsilon`` = log p;
    ``message_support()`` -> :class:`MessageSupport` (own, other, blanket): P[an input message
    supports the user's own value / a given other value], P[a blanket message supports a given
    value]; ``support_counts(aggregate)`` -> (..., k) the support count S_v of every value v.
sampling
    ``randomize(values, rng)`` -> values.shape + (m,) + message_shape;
    ``aggregate(outputs)`` (users and messages reduced) and ``aggregate_messages(messages)``
    (a flat array of messages, the pipeline's batches); ``sample_aggregate(input_counts, rng)``
    exact in distribution from the input histogram, without per-user reports.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from dataclasses import dataclass
from typing import ClassVar, NamedTuple

import numpy as np
from scipy.special import gammaln

from shufflesim.protocols.errors import ParameterError
from shufflesim.protocols.randomizers.analysis import DecompositionFamily, VariationRatioRow
from shufflesim.protocols.randomizers.base import MAX_ENUMERABLE_OUTPUTS, Randomizer
from shufflesim.protocols.randomizers.domains import Categorical

#: The multi-message structure: one input message and b input-independent blanket messages per
#: user. protocols.bounds.multi_message reads ``message_groups`` and the blanket count.
MULTI_MESSAGE = DecompositionFamily(
    "multi-message", False,
    "message_groups(anchors), blanket_messages_per_client (protocols.bounds.multi_message)")

#: Largest integer index of an ordered report (int64).
_MAX_INDEX = 1 << 62


@dataclass(frozen=True)
class MessageGroups:
    """One message's distributions grouped relative to anchor inputs.

    mass[a, g]: P[the input message of a user with value anchors[a] lies in group g];
    blanket[g]: P[a blanket message lies in group g]; count[g]: number of messages in group g
    (a float: may be huge). Inside a group every message has the same probability under each
    anchor and under the blanket, so likelihood ratios are constant on groups.
    """

    anchors: tuple
    mass: np.ndarray
    blanket: np.ndarray
    count: np.ndarray

    def __post_init__(self) -> None:
        groups = self.blanket.shape[0]
        if self.mass.shape != (len(self.anchors), groups) or self.count.shape != (groups,):
            raise ValueError("MessageGroups: mass (anchors, groups), blanket and count (groups,)")


class MessageSupport(NamedTuple):
    """Support probabilities of one message (frequency and sum estimation).

    own: P[the input message supports the user's own value]; other: P[it supports a given other
    value]; blanket: P[a blanket message supports a given value]. The support count S_v of value
    v sums over all n m messages, so with n_v users holding v:
    E[S_v] = n_v own + (n - n_v) other + n b blanket, and Var(S_v) sums the messages' Bernoulli
    variances (messages are independent; only each indicator's marginal law enters).
    """

    own: float
    other: float
    blanket: float


class MultiMessageRandomizer(Randomizer):
    """Base class of the multi-message randomizers (module docstring: the contract)."""

    multi_message: ClassVar[bool] = True
    decomposition: ClassVar[DecompositionFamily] = MULTI_MESSAGE
    has_aggregate_sampler: ClassVar[bool] = True
    #: "frequency" (histogram protocols) or "sum" (binary summation).
    estimand: ClassVar[str] = "frequency"

    # -- sizes ---------------------------------------------------------------------------
    @property
    def input_domain(self) -> Categorical:
        """Default: the values {0, ..., domain_size - 1} (a ``domain_size`` field)."""
        return Categorical(self.domain_size)

    @property
    def blanket_messages_per_client(self) -> int:
        """b: the input-independent messages each user sends. Default: the
        ``blanket_messages`` field (protocols that derive b override this)."""
        return int(self.blanket_messages)

    @property
    def messages_per_client(self) -> int:
        """m = 1 + b."""
        return 1 + int(self.blanket_messages_per_client)

    @property
    @abstractmethod
    def message_alphabet_size(self) -> int:
        """K: number of distinct messages."""

    @property
    def message_shape(self) -> tuple[int, ...]:
        return ()

    @property
    def output_shape(self) -> tuple[int, ...]:
        return (self.messages_per_client,) + tuple(self.message_shape)

    @property
    def output_size(self) -> int:
        """Ordered reports: K^m (a Python int, possibly huge)."""
        return int(self.message_alphabet_size) ** self.messages_per_client

    @property
    @abstractmethod
    def aggregate_size(self) -> int:
        """Length of the aggregate (the last axis of ``aggregate``)."""

    @property
    def input_size(self) -> int:
        return self._categorical_input_size()

    # -- one message ---------------------------------------------------------------------
    @abstractmethod
    def message_log_prob(self, x, messages) -> np.ndarray:
        """log P[input message = messages | value x]."""

    @abstractmethod
    def blanket_log_prob(self, messages) -> np.ndarray:
        """log P[blanket message = messages]."""

    @abstractmethod
    def sample_input_messages(self, values: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """One input message per value: values.shape + message_shape."""

    @abstractmethod
    def sample_blanket_messages(self, shape: tuple, rng: np.random.Generator) -> np.ndarray:
        """Blanket messages: shape + message_shape."""

    def message_index(self, messages) -> np.ndarray:
        """Index in [0, K) of each message (scalar messages: the message itself)."""
        return np.asarray(messages, dtype=np.int64)

    def messages_from_index(self, index) -> np.ndarray:
        return np.asarray(index, dtype=np.int64)

    def _alphabet(self) -> np.ndarray:
        size = int(self.message_alphabet_size)
        if size > MAX_ENUMERABLE_OUTPUTS:
            raise ParameterError("message_alphabet_size", size,
                                 f"enumerating messages needs at most {MAX_ENUMERABLE_OUTPUTS}")
        return self.messages_from_index(np.arange(size))

    def message_distribution(self, x) -> np.ndarray:
        """pmf over the message index of the input message of value(s) x: shape x.shape + (K,)."""
        x = np.asarray(x)
        messages = self._alphabet()
        lead = (slice(None),) * x.ndim
        xb = x[lead + (None,)] if x.ndim else x
        return np.exp(self.message_log_prob(xb, messages))

    def blanket_distribution(self) -> np.ndarray:
        """pmf over the message index of one blanket message: shape (K,)."""
        return np.exp(self.blanket_log_prob(self._alphabet()))

    def message_groups(self, anchors: tuple) -> MessageGroups:
        """Group messages relative to ``anchors`` (default: enumerate the alphabet and merge
        messages whose probabilities agree, in log, to 1e-12 relative)."""
        anchors = tuple(int(a) for a in anchors)
        rows = self.message_distribution(np.asarray(anchors))
        blanket = self.blanket_distribution()
        stacked = np.vstack([rows, blanket[None, :]]).T
        with np.errstate(divide="ignore"):
            keys = np.round(np.log(stacked), 12)
        _, inverse = np.unique(keys, axis=0, return_inverse=True)
        inverse = inverse.ravel()
        groups = int(inverse.max()) + 1
        mass = np.vstack([np.bincount(inverse, weights=r, minlength=groups) for r in rows])
        return MessageGroups(anchors, mass, np.bincount(inverse, weights=blanket,
                                                        minlength=groups),
                             np.bincount(inverse, minlength=groups).astype(float))

    # -- one user -------------------------------------------------------------------------
    def randomize(self, values, rng, epsilon=None):
        """values.shape + (m,) + message_shape: position 0 the input message, then the b
        blanket messages (the shuffler forgets the order)."""
        if epsilon is not None:
            raise ParameterError("epsilon", "array",
                                 f"randomizer {self.name} does not support personalized budgets")
        values = self.check_values(values)
        first = self.sample_input_messages(values, rng)
        b = self.blanket_messages_per_client
        blanket = self.sample_blanket_messages(values.shape + (b,), rng)
        return np.concatenate([first[..., None, :] if self.message_shape else first[..., None],
                               blanket.astype(first.dtype, copy=False)], axis=values.ndim)

    def log_prob(self, x, y):
        """log P[ordered report y | x]; y has trailing shape (m,) + message_shape."""
        y = np.asarray(y)
        axis = y.ndim - len(self.message_shape) - 1
        first = np.take(y, 0, axis=axis)
        rest = np.take(y, np.arange(1, y.shape[axis]), axis=axis)
        return (self.message_log_prob(x, first)
                + np.sum(self.blanket_log_prob(rest), axis=-1))

    def output_index(self, outputs):
        """Mixed-radix index of an ordered report: sum_j index(y_j) K^j (K^m <= 2^62)."""
        size = self.output_size
        if size > _MAX_INDEX:
            raise ParameterError("output_size", size, "ordered reports need at most 2^62 outputs")
        index = self.message_index(outputs)  # (..., m)
        weights = np.int64(self.message_alphabet_size) ** np.arange(self.messages_per_client,
                                                                     dtype=np.int64)
        return np.sum(index * weights, axis=-1)

    def outputs_from_index(self, index):
        index = np.asarray(index, dtype=np.int64)
        k = np.int64(self.message_alphabet_size)
        digits = (index[..., None] // k ** np.arange(self.messages_per_client,
                                                     dtype=np.int64)) % k
        return self.messages_from_index(digits)

    def multiset_log_prob(self, x, counts) -> np.ndarray:
        """log P[one user's message multiset has counts ``counts`` (..., K) | x] (module
        docstring formula); -inf where the counts do not sum to m."""
        counts = np.asarray(counts, dtype=float)
        b = self.blanket_messages_per_client
        blanket = self.blanket_distribution()
        x = np.asarray(x)
        p_in = self.message_distribution(x)  # x.shape + (K,)
        with np.errstate(divide="ignore"):
            log_blanket = np.log(blanket)
            base = (gammaln(b + 1) - np.sum(gammaln(counts + 1), axis=-1)
                    + np.sum(np.where(counts > 0, counts * log_blanket, 0.0), axis=-1))
            mix = np.log(np.sum(p_in * counts / blanket, axis=-1))
        valid = np.all(counts >= 0, axis=-1) & (np.sum(counts, axis=-1) == b + 1)
        return np.where(valid, base + mix, -np.inf)

    # -- aggregate ------------------------------------------------------------------------
    @abstractmethod
    def aggregate_messages(self, messages) -> np.ndarray:
        """Statistic of messages (shape (..., N) + message_shape) -> (..., aggregate_size)."""

    def aggregate(self, outputs):
        """Statistic of reports (..., n, m) + message_shape: all n m messages pooled."""
        outputs = np.asarray(outputs)
        tail = len(self.message_shape)
        lead = outputs.shape[:outputs.ndim - tail - 2]
        return self.aggregate_messages(outputs.reshape(lead + (-1,) + tuple(self.message_shape)))

    @abstractmethod
    def sample_aggregate(self, input_counts, rng):
        """Exact sample of ``aggregate(randomize(values))`` from input histograms (..., k)."""

    # -- analysis -------------------------------------------------------------------------
    @abstractmethod
    def variation_ratio_parameters(self) -> VariationRatioRow:
        """The 001 Table 3 row (p, beta, q); p may be math.inf."""

    @property
    def local_epsilon(self) -> float:
        """log p: the LDP level of one input message alone (inf: none)."""
        p = self.variation_ratio_parameters().p
        return math.inf if math.isinf(p) else math.log(p)

    @abstractmethod
    def message_support(self) -> MessageSupport:
        """(own, other, blanket) support probabilities of one message."""

    def support_counts(self, aggregate) -> np.ndarray:
        """S_v for every value v from the aggregate (default: the aggregate itself)."""
        return np.asarray(aggregate)


def message_histogram(messages, size: int) -> np.ndarray:
    """Histogram over [0, size) of integer messages (..., N) -> (..., size), per leading row."""
    messages = np.asarray(messages)
    lead = messages.shape[:-1]
    flat = messages.reshape(-1, messages.shape[-1] if messages.ndim else 1).astype(np.int64)
    offsets = (np.arange(flat.shape[0], dtype=np.int64) * size)[:, None]
    counts = np.bincount((flat + offsets).ravel(), minlength=flat.shape[0] * size)
    return counts.reshape(lead + (size,))


def blanket_count_from_total(total: float, design_users: int) -> int:
    """Blanket messages per user so that design_users users send at least ``total`` of them:
    ceil(total / design_users), at least 1."""
    return max(1, math.ceil(total / design_users))
