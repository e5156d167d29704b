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

from shufflesim.protocols.estimators.base import CountEstimator, Estimator, check_counts, check_n
from shufflesim.protocols.estimators.registry import register_estimator
from shufflesim.protocols.randomizers.multi_message.base import MultiMessageRandomizer


def _count_variance(randomizer: MultiMessageRandomizer, owners, n):
    own, other, blanket = randomizer.message_support()
    b = randomizer.blanket_messages_per_client
    return (owners * own * (1 - own) + (n - owners) * other * (1 - other)
            + n * b * blanket * (1 - blanket))


@dataclass(frozen=True)
class _MultiMessageEstimator(Estimator):
    """An estimator for the multi-message randomizers whose ``estimand`` is the class's."""

    randomizer: MultiMessageRandomizer

    estimand: ClassVar[str]

    @classmethod
    def fits(cls, randomizer: object) -> bool:
        return (isinstance(randomizer, MultiMessageRandomizer)
                and randomizer.estimand == cls.estimand)

    @classmethod
    def needs(cls) -> str:
        return f"a multi-message randomizer whose estimand is {cls.estimand!r}"

    def _support(self, aggregate, n):
        """(S_v for every v, n, own, other, b, blanket) for the aggregate of n users' messages
        (module docstring), both checked."""
        aggregate = check_counts("aggregate", aggregate, self.randomizer.aggregate_size)
        n = check_n(n)
        own, other, blanket = self.randomizer.message_support()
        b = self.randomizer.blanket_messages_per_client
        return self.randomizer.support_counts(aggregate), n, own, other, b, blanket


@register_estimator
@dataclass(frozen=True)
class MultiMessageFrequencyEstimator(_MultiMessageEstimator, CountEstimator):
    """f_hat_v = (S_v / n - other - b blanket) / (own - other) (module docstring)."""

    name: ClassVar[str] = "multi_message_frequency"
    target: ClassVar[str] = "frequency"
    estimand: ClassVar[str] = "frequency"

    def estimate(self, aggregate, n):
        """Unbiased estimates (..., k) from the aggregate of n users' messages (``n`` an int or
        an array broadcasting against the leading axes). Not clipped."""
        support, n, own, other, b, blanket = self._support(aggregate, n)
        return (support / n[..., None] - other - b * blanket) / (own - other)

    def per_value_variance(self, true_counts, n):
        """Exact Var(f_hat_v) from the true counts n_v (real-valued allowed) and n."""
        own, other, _ = self.randomizer.message_support()
        n = np.asarray(n, dtype=float)[..., None]
        return (_count_variance(self.randomizer, np.asarray(true_counts, dtype=float), n)
                / (n * n * (own - other) ** 2))


@register_estimator
@dataclass(frozen=True)
class MultiMessageSumEstimator(_MultiMessageEstimator):
    """z = (S_1 - n other - n b blanket) / (own - other): sum of binary inputs."""

    name: ClassVar[str] = "multi_message_sum"
    target: ClassVar[str] = "sum"
    estimand: ClassVar[str] = "sum"

    def estimate(self, aggregate, n):
        """Unbiased estimate of sum_i x_i from the aggregate (..., 2) of n users' messages."""
        support, n, own, other, b, blanket = self._support(aggregate, n)
        return (support[..., 1] - n * other - n * b * blanket) / (own - other)

    def _scaled_count_variance(self, ones, n):
        own, other, _ = self.randomizer.message_support()
        return _count_variance(self.randomizer, ones, n) / (own - other) ** 2

    def per_user_variance(self, x, epsilon=None):
        """Variance contributed by one user with input x in {0, 1} (its input message and its
        b blanket messages)."""
        return self._scaled_count_variance(np.asarray(x, dtype=float), 1.0)

    def variance(self, values, n, epsilon=None):
        """Exact Var(z): ``values`` the true inputs (users on the last axis), or a scalar held
        by all n users."""
        values = np.asarray(values, dtype=float)
        ones = values.sum(axis=-1) if values.ndim else values * float(n)
        return self._scaled_count_variance(ones, float(n))
