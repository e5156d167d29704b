"""Unbiased frequency and sum estimators for the multi-message randomizers, with exact variance
(protocols.randomizers.multi_message; 001 Sec. 4, Table 3 protocols).

Every multi-message randomizer declares ``message_support() = (own, other, blanket)`` and
``support_counts(aggregate)`` -> S_v (base.py): S_v sums, over the n (1 + b) messages, the
indicator that a message supports v; the input message of a user holding v supports v w.p.
``own``, that of any other user w.p. ``other``, and each blanket message w.p. ``blanket``
(Cheu-Zhilyaev [15]: bit v of a vector, own = 1 - f, other = blanket = f; balls-into-bins [42]:
the ball lands in S(v), 1, 0, s/d; DUMP [41]: the message equals v, (1 - f, f/(d-1), 1/d),
pureDUMP f = 0; Balcer et al. [4, 5]: the bit is 1, own = 1, other = 0, blanket = p). Messages are
independent, so with n_v users holding v

    E[S_v]   = n_v own + (n - n_v) other + n b blanket,
    Var[S_v] = n_v own(1-own) + (n - n_v) other(1-other) + n b blanket(1-blanket)

exactly (only each indicator's marginal law enters). Hence the unbiased estimates

    frequency:  f_hat_v = (S_v / n - other - b blanket) / (own - other),
    sum:        z = (S_1 - n other - n b blanket) / (own - other)      (binary x, S_1: ones),

with Var(f_hat_v) = Var[S_v] / (n (own - other))^2 and Var(z) = Var[S_1] / (own - other)^2.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from shufflesim.protocols.errors import ParameterError
from shufflesim.protocols.estimators.frequency import _check_counts, _check_n
from shufflesim.protocols.estimators.registry import register_estimator
from shufflesim.protocols.randomizers.multi_message.base import MultiMessageRandomizer


def _check(name: str, randomizer, estimand: str) -> None:
    if not (isinstance(randomizer, MultiMessageRandomizer)
            and randomizer.estimand == estimand):
        label = getattr(randomizer, "name", type(randomizer).__name__)
        raise ParameterError(
            "estimator.name", name,
            f"does not fit randomizer {label!r}; it needs a multi-message randomizer whose "
            f"estimand is {estimand!r}")


def _count_variance(randomizer: MultiMessageRandomizer, owners, n):
    own, other, blanket = randomizer.message_support()
    b = randomizer.blanket_messages_per_client
    return (owners * own * (1 - own) + (n - owners) * other * (1 - other)
            + n * b * blanket * (1 - blanket))


@register_estimator
@dataclass(frozen=True)
class MultiMessageFrequencyEstimator:
    """f_hat_v = (S_v / n - other - b blanket) / (own - other) (module docstring)."""

    randomizer: MultiMessageRandomizer

    name: ClassVar[str] = "multi_message_frequency"

    def __post_init__(self) -> None:
        _check(self.name, self.randomizer, "frequency")

    @property
    def domain_size(self) -> int:
        return self.randomizer.input_domain.size

    def estimate(self, aggregate, n):
        """Unbiased estimates (..., k) from the aggregate of n users' messages (``n`` an int or
        an array broadcasting against the leading axes). Not clipped."""
        aggregate = _check_counts("aggregate", aggregate, self.randomizer.aggregate_size)
        n = _check_n(n)[..., None]
        own, other, blanket = self.randomizer.message_support()
        b = self.randomizer.blanket_messages_per_client
        support = self.randomizer.support_counts(aggregate)
        return (support / n - other - b * blanket) / (own - other)

    def per_value_variance(self, true_counts, n):
        """Exact Var(f_hat_v) from the true counts n_v (real-valued allowed) and n."""
        own, other, _ = self.randomizer.message_support()
        n = np.asarray(n, dtype=float)[..., None]
        return (_count_variance(self.randomizer, np.asarray(true_counts, dtype=float), n)
                / (n * n * (own - other) ** 2))

    def variance(self, true_counts):
        """Exact Var(f_hat_v) given the true counts (..., k) of the n = sum_v n_v users."""
        true_counts = _check_counts("true_counts", true_counts, self.domain_size)
        return self.per_value_variance(true_counts, _check_n(true_counts.sum(axis=-1)))

    def variance_from_frequencies(self, frequencies, n):
        """Exact Var(f_hat_v) given the true frequencies f_v (n_v = f_v n) and n."""
        frequencies = _check_counts("frequencies", frequencies, self.domain_size)
        n = _check_n(n)
        return self.per_value_variance(frequencies * n[..., None], n)


@register_estimator
@dataclass(frozen=True)
class MultiMessageSumEstimator:
    """z = (S_1 - n other - n b blanket) / (own - other): sum of binary inputs."""

    randomizer: MultiMessageRandomizer

    name: ClassVar[str] = "multi_message_sum"

    def __post_init__(self) -> None:
        _check(self.name, self.randomizer, "sum")

    def estimate(self, aggregate, n):
        """Unbiased estimate of sum_i x_i from the aggregate (..., 2) of n users' messages."""
        aggregate = _check_counts("aggregate", aggregate, self.randomizer.aggregate_size)
        n = _check_n(n)
        own, other, blanket = self.randomizer.message_support()
        b = self.randomizer.blanket_messages_per_client
        ones = self.randomizer.support_counts(aggregate)[..., 1]
        return (ones - n * other - n * b * blanket) / (own - other)

    def per_user_variance(self, x, epsilon=None):
        """Variance contributed by one user with input x in {0, 1} (its input message and its
        b blanket messages)."""
        x = np.asarray(x, dtype=float)
        own, other, _ = self.randomizer.message_support()
        return _count_variance(self.randomizer, x, 1.0) / (own - other) ** 2

    def variance(self, values, n, epsilon=None):
        """Exact Var(z): ``values`` the true inputs (users on the last axis), or a scalar held
        by all n users."""
        values = np.asarray(values, dtype=float)
        ones = values.sum(axis=-1) if values.ndim else values * float(n)
        own, other, _ = self.randomizer.message_support()
        return _count_variance(self.randomizer, ones, float(n)) / (own - other) ** 2
