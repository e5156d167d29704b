"""The built-in data distributions: categorical (uniform, Zipf, weights, a constant) and
numeric (a constant, clipped normal, continuous uniform); a file's column is in
population.files. Each registers itself with :data:`~simulator.population.base.DATA_DISTRIBUTIONS`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from shufflesim.simulator.errors import ScenarioError
from shufflesim.simulator.lazy import lazy_module
from shufflesim.simulator.population.base import (
    CATEGORICAL,
    NUMERIC,
    DataDistribution,
    register_data_distribution,
)
from shufflesim.simulator.population.checks import (
    is_int,
    is_real,
    require_finite,
    require_int,
    require_interval,
    require_positive,
)

#: scipy.stats, imported when a distribution needs it (loading a scenario does not; issue 32)
stats = lazy_module("scipy.stats")


class _Categorical(DataDistribution):
    """Shared code of the categorical distributions defined by a probability vector."""

    @property
    def kind(self) -> str:
        return CATEGORICAL

    def support(self) -> tuple[float, float]:
        p = self.probabilities()
        nonzero = np.flatnonzero(p > 0)
        return float(nonzero[0]), float(nonzero[-1])

    def population_mean(self) -> float:
        p = self.probabilities()
        return float(np.dot(np.arange(p.size), p))

    def sample(self, shape, rng):
        # Inverse-cdf sampling; the last cdf entry is forced to 1 against rounding.
        cdf = np.cumsum(self.probabilities())
        cdf[-1] = 1.0
        return np.searchsorted(cdf, rng.random(shape), side="right").astype(np.int64)



@register_data_distribution
@dataclass(frozen=True)
class Uniform(_Categorical):
    """Uniform over the categories {0, ..., domain_size - 1}."""

    domain_size: int

    name = "uniform"

    def __post_init__(self) -> None:
        require_int("domain_size", self.domain_size, 1)

    def probabilities(self) -> np.ndarray:
        return np.full(self.domain_size, 1.0 / self.domain_size)


@register_data_distribution
@dataclass(frozen=True)
class Zipf(_Categorical):
    """Truncated Zipf law over {0, ..., d-1}: value v has probability proportional to
    1 / (v + 1)^exponent (rank v + 1). ``exponent = 0`` is the uniform distribution.

    000 Sec. 6 (Table 4) draws its data from this law with exponent 0.7 over 10 values.
    """

    domain_size: int
    exponent: float

    name = "zipf"

    def __post_init__(self) -> None:
        require_int("domain_size", self.domain_size, 1)
        if not is_real(self.exponent) or not (0 <= self.exponent < math.inf):
            raise ScenarioError("exponent", self.exponent, "must be a finite number >= 0")

    def probabilities(self) -> np.ndarray:
        weights = np.arange(1, self.domain_size + 1, dtype=float) ** -float(self.exponent)
        return weights / weights.sum()


@register_data_distribution
@dataclass(frozen=True)
class CategoricalWeights(_Categorical):
    """Categories {0, ..., d-1} with probabilities proportional to ``weights`` (d = their
    number); e.g. 003's binary records with density c: weights = [1 - c, c]."""

    weights: tuple[float, ...]

    name = "categorical"

    def __post_init__(self) -> None:
        w = self.weights
        if not isinstance(w, tuple) or len(w) == 0:
            raise ScenarioError("weights", w, "must be a non-empty array")
        for i, v in enumerate(w):
            if not is_real(v) or not 0 <= v < math.inf:
                raise ScenarioError(f"weights[{i}]", v, "must be a finite number >= 0")
        if not math.fsum(float(v) for v in w) > 0:
            raise ScenarioError("weights", w, "must not all be 0")

    @property
    def domain_size(self) -> int:
        return len(self.weights)

    def probabilities(self) -> np.ndarray:
        w = np.asarray(self.weights, dtype=float)
        return w / w.sum()


@register_data_distribution
@dataclass(frozen=True)
class Constant(DataDistribution):
    """Every user holds ``value``. With ``domain_size`` the value is a category in
    [0, domain_size) (categorical data); without it the data are numeric."""

    value: float
    domain_size: int | None = None

    name = "constant"

    def __post_init__(self) -> None:
        if self.domain_size is None:
            require_finite("value", self.value)
            return
        require_int("domain_size", self.domain_size, 1)
        if not is_int(self.value) or not 0 <= self.value < self.domain_size:
            raise ScenarioError(
                "value", self.value, f"must be an integer in [0, {self.domain_size}) "
                "(categorical constant)"
            )

    @property
    def kind(self) -> str:
        return NUMERIC if self.domain_size is None else CATEGORICAL

    def support(self) -> tuple[float, float]:
        return float(self.value), float(self.value)

    def population_mean(self) -> float:
        return float(self.value)

    def probabilities(self) -> np.ndarray:
        if self.domain_size is None:
            return super().probabilities()
        p = np.zeros(self.domain_size)
        p[self.value] = 1.0
        return p

    def sample(self, shape, rng):
        dtype = np.float64 if self.domain_size is None else np.int64
        return np.full(shape, self.value, dtype=dtype)


class _OnInterval(DataDistribution):
    """Numeric data on [low, high] (fields of the subclass)."""

    low: float
    high: float

    @property
    def kind(self) -> str:
        return NUMERIC

    def support(self) -> tuple[float, float]:
        return float(self.low), float(self.high)


@register_data_distribution
@dataclass(frozen=True)
class ClippedNormal(_OnInterval):
    """Numeric data: X = min(max(Z, low), high) with Z ~ Normal(mean, std^2).

    Clipping (not truncation): the mass of Z outside [low, high] sits on the end points, so
    E[X] = low Phi(a) + high (1 - Phi(b)) + mean (Phi(b) - Phi(a)) + std (phi(a) - phi(b))
    with a = (low - mean) / std and b = (high - mean) / std.
    """

    mean: float
    std: float
    low: float
    high: float

    domain_size: ClassVar[None] = None
    name = "clipped_normal"

    def __post_init__(self) -> None:
        require_finite("mean", self.mean)
        require_positive("std", self.std)
        require_interval(self.low, self.high)

    def population_mean(self) -> float:
        a = (self.low - self.mean) / self.std
        b = (self.high - self.mean) / self.std
        norm = stats.norm
        return float(
            self.low * norm.cdf(a) + self.high * norm.sf(b)
            + self.mean * (norm.cdf(b) - norm.cdf(a)) + self.std * (norm.pdf(a) - norm.pdf(b))
        )

    def sample(self, shape, rng):
        return np.clip(rng.normal(self.mean, self.std, size=shape), self.low, self.high)


@register_data_distribution
@dataclass(frozen=True)
class ContinuousUniform(_OnInterval):
    """Numeric data uniform on the interval [low, high]."""

    low: float
    high: float

    domain_size: ClassVar[None] = None
    name = "continuous_uniform"

    def __post_init__(self) -> None:
        require_interval(self.low, self.high)

    def population_mean(self) -> float:
        return 0.5 * (self.low + self.high)

    def sample(self, shape, rng):
        return rng.uniform(self.low, self.high, size=shape)

