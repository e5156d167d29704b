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

from shufflesim.protocols.errors import ParameterError, require
from shufflesim.protocols.estimators.registry import register_estimator
from shufflesim.protocols.randomizers.base import Randomizer
from shufflesim.protocols.randomizers.registry import randomizer_class, randomizer_names


def numeric_randomizer_names() -> list[str]:
    """Registered randomizers the numeric estimators accept (for error messages): those that
    declare ``report_affine`` and ``report_variance``."""
    return [name for name in randomizer_names()
            if hasattr(randomizer_class(name), "report_affine")
            and hasattr(randomizer_class(name), "report_variance")]


def check_numeric_randomizer(estimator_name: str, randomizer: object) -> None:
    """Raise ParameterError (field ``estimator.name``) unless ``randomizer`` reports numbers whose
    conditional mean is affine in the input."""
    fits = (isinstance(randomizer, Randomizer) and hasattr(randomizer, "report_affine")
            and hasattr(randomizer, "report_variance"))
    if not fits:
        label = getattr(randomizer, "name", type(randomizer).__name__)
        raise ParameterError(
            "estimator.name", estimator_name,
            f"does not fit randomizer {label!r}; it needs a numeric randomizer, one of "
            f"{numeric_randomizer_names()}",
        )


def _check_n(n):
    n_arr = np.asarray(n)
    bad = ~(np.isfinite(n_arr) & (n_arr > 0))
    if bad.any():
        raise ParameterError("n", n_arr[bad].flat[0].item(), "must be a number of users > 0")
    return n_arr


@register_estimator
@dataclass(frozen=True)
class MeanEstimator:
    """Mean of the inputs from the sum of the reports (see the module docstring)."""

    randomizer: Randomizer

    name: ClassVar[str] = "mean"

    def __post_init__(self) -> None:
        check_numeric_randomizer(self.name, self.randomizer)

    def estimate(self, aggregate, n):
        """Unbiased estimate of (1/n) sum_i x_i from ``aggregate`` = sum of the n reports.

        ``aggregate`` has shape (...,) (one sum per batch row); ``n`` is an int or an array
        broadcasting against it (e.g. realized batch sizes).
        """
        n = _check_n(n)
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
        values = np.asarray(values)
        if values.ndim == 0:
            require(isinstance(n, (int, np.integer)) and n >= 1, "n", n,
                    "must be an integer >= 1")
            values = np.broadcast_to(values, (int(n),))
        else:
            require(values.shape[-1] == n, "n", n,
                    f"must equal the number of users on the last axis of values "
                    f"({values.shape[-1]})")
        values = self.randomizer.check_values(values)
        eps = None if epsilon is None else self.randomizer._epsilon_array(values, epsilon)
        per_user = np.broadcast_to(self.per_user_variance(values, eps), values.shape)
        return per_user.sum(axis=-1) / float(n) ** 2
