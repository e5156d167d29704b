"""Location mean of metric-DP reports (001 Table 2's randomizers): unbiased, with exact variance.

Points are real numbers (``laplace_metric``, ``witch_hat``) or complex numbers x + iy
(``planar_laplace``). Each metric randomizer declares ``location_affine = (a, b)`` with
E[y | x] = a + b x and ``location_variance(x)`` = E|y - E[y | x]|^2 (summed over the
coordinates), so
from the aggregate S = sum_i y_i the unbiased estimate of the mean location is (S/n - a)/b, and

    E|estimate - mean|^2 = sum_i location_variance(x_i) / (b^2 n^2),

per coordinate that divided by the dimension (independent, equal coordinates in 2-D). Per user:

* laplace_metric: 2/eps^2 (eps the metric budget per unit distance, epsilon0 / D);
* planar_laplace: E r^2 = 6/eps^2 (r ~ Gamma(2, 1/eps)), i.e. 3/eps^2 per coordinate;
* witch_hat: (|O|^3/12 + H (x - c)^2 + H2)/Z - (H (x - c)/Z)^2 with b = H/Z
  (protocols.randomizers.metric.witch_hat, derived there).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from shufflesim.protocols.estimators.base import Estimator, check_n, user_values
from shufflesim.protocols.estimators.registry import register_estimator
from shufflesim.protocols.randomizers.metric.base import MetricRandomizer
from shufflesim.protocols.randomizers.registry import randomizer_class, randomizer_names


def location_randomizer_names() -> list[str]:
    return [name for name in randomizer_names()
            if issubclass(randomizer_class(name), MetricRandomizer)]


@register_estimator
@dataclass(frozen=True)
class LocationMeanEstimator(Estimator):
    """Mean location of the inputs from the sum of metric-DP reports (module docstring)."""

    randomizer: MetricRandomizer

    name: ClassVar[str] = "location_mean"
    target: ClassVar[str] = "location_mean"

    @classmethod
    def fits(cls, randomizer: object) -> bool:
        return isinstance(randomizer, MetricRandomizer)

    @classmethod
    def needs(cls) -> str:
        return f"a metric-DP randomizer, one of {location_randomizer_names()}"

    def estimate(self, aggregate, n):
        """(S/n - a)/b: complex for planar points, real otherwise."""
        n_arr = check_n(n, dtype=None)
        aggregate = np.asarray(aggregate)
        if not np.iscomplexobj(aggregate):
            aggregate = aggregate.astype(float)
        a, b = self.randomizer.location_affine
        return (aggregate / n_arr - a) / b

    def per_user_variance(self, x, epsilon=None):
        """E|y - E y|^2 / b^2 for one user with input x (all coordinates)."""
        b = self.randomizer.location_affine[1]
        return self.randomizer.location_variance(x, epsilon) / b ** 2

    def variance(self, values, n, epsilon=None):
        """E|estimate - mean|^2 given the true inputs (users on the last axis; a scalar means
        all n users hold it)."""
        values = self.randomizer.check_values(user_values(values, n))
        per_user = np.broadcast_to(self.per_user_variance(values, epsilon), values.shape)
        return per_user.sum(axis=-1) / float(n) ** 2

    def coordinate_variance(self, values, n, epsilon=None):
        """Variance of each coordinate of the estimate (equal in 2-D)."""
        return self.variance(values, n, epsilon) / self.randomizer.dimension
