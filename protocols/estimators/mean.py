"""Unbiased mean estimation from the sum of numeric reports, with its exact variance.

Every numeric randomizer (laplace, laplace_binary, piecewise, duchi, summation) declares

* ``report_affine = (a, b)``: E[report | x] = a + b x (a = 0, b = 1 except for 004's summation,
  where a = gamma k / 2 and b = (1 - gamma) k, 004 Sec. 4.1), and
* ``report_variance(x, epsilon=None)``: the exact Var[report | x].

From the aggregate S = sum_i y_i of n independent reports the unbiased estimate of the mean of the
inputs is (S / n - a) / b, and its variance is sum_i Var[y_i | x_i] / (b^2 n^2). Per user:

* laplace, laplace_binary: 2 / eps^2 (independent of x);
* piecewise (001 Table 1; Wang et al. ICDE 2019): x^2 / (s - 1) + (s + 3) / (3 (s - 1)^2),
  s = e^{eps/2};
* duchi: B^2 - x^2, B = (e^eps + 1) / (e^eps - 1);
* summation: [(1 - g) f (1 - f) + g k (k + 2) / 12 + g (1 - g) (k x - k/2)^2] / ((1 - g) k)^2
  with g = gamma, f = x k - floor(x k) (randomized-rounding term included).

Personalized budgets (``epsilon`` per user, for randomizers that support them) leave the
estimate unchanged, because those reports are unbiased for every budget; only the variance
depends on them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from shufflesim.protocols.estimators.base import Estimator, check_n, refusal, user_values
from shufflesim.protocols.estimators.registry import register_estimator
from shufflesim.protocols.randomizers.base import Randomizer
from shufflesim.protocols.randomizers.registry import randomizer_class, randomizer_names


def numeric_randomizer_names() -> list[str]:
    """Registered randomizers the numeric estimators accept (for error messages): those that
    declare ``report_affine`` and ``report_variance``."""
    return [name for name in randomizer_names()
            if hasattr(randomizer_class(name), "report_affine")
            and hasattr(randomizer_class(name), "report_variance")]


def is_numeric_randomizer(randomizer: object) -> bool:
    """Whether ``randomizer`` reports numbers whose conditional mean is affine in the input
    (it declares ``report_affine`` and ``report_variance``)."""
    return (isinstance(randomizer, Randomizer) and hasattr(randomizer, "report_affine")
            and hasattr(randomizer, "report_variance"))


def numeric_needs() -> str:
    return f"a numeric randomizer, one of {numeric_randomizer_names()}"


def check_numeric_randomizer(estimator_name: str, randomizer: object) -> None:
    """Raise ParameterError (field ``estimator.name``) unless ``randomizer`` is numeric
    (:func:`is_numeric_randomizer`)."""
    if not is_numeric_randomizer(randomizer):
        raise refusal(estimator_name, randomizer, numeric_needs())


@dataclass(frozen=True)
class NumericEstimator(Estimator):
    """An estimator for a numeric randomizer (the mean and the sum)."""

    @classmethod
    def fits(cls, randomizer: object) -> bool:
        return is_numeric_randomizer(randomizer)

    @classmethod
    def needs(cls) -> str:
        return numeric_needs()


@register_estimator
@dataclass(frozen=True)
class MeanEstimator(NumericEstimator):
    """Mean of the inputs from the sum of the reports (see the module docstring)."""

    name: ClassVar[str] = "mean"
    target: ClassVar[str] = "mean"

    def estimate(self, aggregate, n):
        """Unbiased estimate of (1/n) sum_i x_i from ``aggregate`` = sum of the n reports.

        ``aggregate`` has shape (...,) (one sum per batch row); ``n`` is an int or an array
        broadcasting against it (e.g. realized batch sizes).
        """
        n = check_n(n, dtype=None)
        a, b = self.randomizer.report_affine
        return (np.asarray(aggregate, dtype=float) / n - a) / b

    def per_user_variance(self, x, epsilon=None):
        """Exact variance contributed by one user with input x, on the scale of x:
        Var[report | x] / b^2 (``epsilon``: that user's budget, where personalized)."""
        return self.randomizer.report_variance(x, epsilon) / self.randomizer.report_affine[1] ** 2

    def variance(self, values, n, epsilon=None):
        """Exact variance of ``estimate`` given the true inputs.

        ``values``: either an array of the true inputs with the n users on the last axis (and
        any leading batch axes; the result has the leading shape), or a scalar, meaning that all
        n users hold that value. ``epsilon``: optional per-user budgets broadcast to
        ``values`` (personalized randomizers only). Returns sum_i v(x_i) / n^2 with v the
        per-user variance.
        """
        values = self.randomizer.check_values(user_values(values, n))
        eps = None if epsilon is None else self.randomizer._epsilon_array(values, epsilon)
        per_user = np.broadcast_to(self.per_user_variance(values, eps), values.shape)
        return per_user.sum(axis=-1) / float(n) ** 2
