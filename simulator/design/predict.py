"""Predicted error of a candidate from its estimator's exact variance.

Frequency over d values (protocols.estimators.frequency, .multi_message): with the true
frequencies f_v (the data assumption: uniform, or Zipf) and n users, Var(f_hat_v) is exact
(Wang et al. 2017 Thm 2; 001 Sec. 4 for the multi-message protocols), and

* ``mse``  = (1/d) sum_v Var(f_hat_v)             (exact: mean squared error per value),
* ``l2``   = sqrt(sum_v Var(f_hat_v))             (exact: root of E ||f_hat - f||_2^2),
* ``linf`` = E max_v |f_hat_v - f_v| under the normal approximation with independent
  coordinates: integral_0^inf [1 - prod_v (2 Phi(t / sigma_v) - 1)] dt (an approximation: the
  counts are nearly Gaussian for large n; their small correlations are ignored).

Mean and sum over [low, high] (protocols.estimators.mean, .sum): the randomizer's domain is
mapped affinely onto [low, high] (scale s = (high - low) / its width); with the inputs uniform
over the interval (the data assumption), E Var = s^2 E_x[v(x)] / n (mean) or s^2 n E_x[v(x)]
(sum), v the exact per-user variance (averaged over a 2001-point grid of x: the data-dependent
term); ``mse`` = that, ``l2`` = sqrt(mse), ``linf`` = E|error| = sqrt(2 / pi) sqrt(mse) (normal
approximation). balcer (binary inputs, the two ends of the interval, each with probability 1/2):
its exact Var(z) (001 Sec. 4).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import ndtr

from shufflesim.protocols.estimators.frequency import FrequencyEstimator
from shufflesim.protocols.estimators.mean import MeanEstimator
from shufflesim.protocols.estimators.multi_message import (
    MultiMessageFrequencyEstimator,
    MultiMessageSumEstimator,
)

METRICS = ("mse", "l2", "linf")
GRID_POINTS = 2001


def frequencies(domain_size: int, data: dict | None) -> np.ndarray:
    """The assumed true frequencies: uniform, or Zipf with ``data["exponent"]``."""
    if not data or data.get("distribution", "uniform") == "uniform":
        return np.full(domain_size, 1.0 / domain_size)
    weights = np.arange(1, domain_size + 1, dtype=float) ** -float(data["exponent"])
    return weights / weights.sum()


def expected_max_abs(sigmas: np.ndarray) -> float:
    """E max_v |Z_v| for independent Z_v ~ N(0, sigma_v^2) (module docstring)."""
    sigmas = np.asarray(sigmas, dtype=float)
    top = float(sigmas.max()) * (3.0 + math.sqrt(2.0 * math.log(2.0 * sigmas.size)))
    t = np.linspace(0.0, top, 4001)
    inside = 2.0 * ndtr(t[:, None] / sigmas[None, :]) - 1.0
    survival = 1.0 - np.exp(np.log(np.clip(inside, 1e-300, None)).sum(axis=1))
    return float(np.trapezoid(survival, t))


def _frequency(randomizer, n: int, domain_size: int, data: dict | None) -> dict:
    estimator = (MultiMessageFrequencyEstimator(randomizer)
                 if getattr(randomizer, "multi_message", False) else FrequencyEstimator(randomizer))
    f = frequencies(domain_size, data)
    variances = np.asarray(estimator.per_value_variance(f * n, n), dtype=float).reshape(-1)
    return {"mse": float(variances.mean()), "l2": float(math.sqrt(variances.sum())),
            "linf": expected_max_abs(np.sqrt(variances))}


def scale_of(randomizer, interval: tuple[float, float]) -> float:
    """(high - low) / width of the randomizer's input domain (1 for categorical inputs)."""
    domain = randomizer.input_domain
    width = getattr(domain, "high", 1.0) - getattr(domain, "low", 0.0)
    return (interval[1] - interval[0]) / width


def _numeric(randomizer, task: str, n: int, interval: tuple[float, float]) -> dict:
    scale = scale_of(randomizer, interval)
    if getattr(randomizer, "multi_message", False):
        per_user = MultiMessageSumEstimator(randomizer).per_user_variance(np.array([0.0, 1.0]))
        mean_v = float(np.mean(per_user))
    else:
        domain = randomizer.input_domain
        x = np.linspace(domain.low, domain.high, GRID_POINTS)
        mean_v = float(np.mean(MeanEstimator(randomizer).per_user_variance(x)))
    mse = scale**2 * mean_v * (n if task == "sum" else 1.0 / n)
    return {"mse": mse, "l2": math.sqrt(mse), "linf": math.sqrt(2.0 / math.pi * mse)}


def predict(randomizer, task: str, n: int, *, domain_size: int | None = None,
            interval: tuple[float, float] | None = None, data: dict | None = None) -> dict:
    """{metric: predicted value} for ``METRICS`` (module docstring)."""
    if task == "frequency":
        return _frequency(randomizer, n, int(domain_size), data)
    return _numeric(randomizer, task, n, interval)
