"""Unbiased estimation of sum_i x_i, with its exact variance.

For 004's summation randomizer this is the debiasing analyzer of 004 Sec. 4.1 (Algorithm 3):
with S = sum_i y_i the sum of the n integer reports,

    z = (S / k - gamma n / 2) / (1 - gamma),

unbiased because E[y_i / k] = (1 - gamma) x_i + gamma / 2. Its exact variance is
sum_i Var[y_i | x_i] / ((1 - gamma) k)^2 with (mixture of the rounded value and a uniform value)

    Var[y | x] = (1 - gamma) f (1 - f) + gamma k (k + 2) / 12 + gamma (1 - gamma) (k x - k / 2)^2,

f = x k - floor(x k). The first term is the randomized-rounding error (at most 1/4, i.e. 004's
1/(4 k^2) on the scale of x); the others come from the uniform reports. For the mean mechanisms
(laplace, laplace_binary, piecewise, duchi) the estimate is n times the unbiased mean, i.e. the
plain sum of the reports, and the variance is the sum of the per-user variances.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from shufflesim.protocols.estimators.mean import MeanEstimator, NumericEstimator
from shufflesim.protocols.estimators.registry import register_estimator


@register_estimator
@dataclass(frozen=True)
class SumEstimator(NumericEstimator):
    """Sum of the inputs from the sum of the reports (n times :class:`MeanEstimator`)."""

    name: ClassVar[str] = "sum"
    target: ClassVar[str] = "sum"

    @property
    def _mean(self) -> MeanEstimator:
        return MeanEstimator(self.randomizer)

    def estimate(self, aggregate, n):
        """Unbiased estimate of sum_i x_i from ``aggregate`` (shape (...,)) and ``n`` users."""
        return np.asarray(n, dtype=float) * self._mean.estimate(aggregate, n)

    def per_user_variance(self, x, epsilon=None):
        """Exact variance contributed to the sum estimate by one user with input x."""
        return self._mean.per_user_variance(x, epsilon)

    def variance(self, values, n, epsilon=None):
        """Exact variance of ``estimate``: same arguments as :meth:`MeanEstimator.variance`
        (true inputs with users on the last axis, or a scalar held by all n users)."""
        return float(n) ** 2 * self._mean.variance(values, n, epsilon)
