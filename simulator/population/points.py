"""Populations of points for the metric-DP randomizers (issue 15 item 3): uniform on a box,
Gaussian clusters clipped to a box, or coordinates read from a CSV/Parquet file.

Points on the line are floats; points of the plane are complex numbers x + iy (the convention of
``planar_laplace``: one array element per user, users on the last axis). A distribution is planar
when its ``*_y`` fields are given (``low_y``/``high_y``, ``centers_y``, ``column_y``), else on
the line. ``population_mean()`` is exact (complex in the plane).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from shufflesim.simulator.errors import ScenarioError
from shufflesim.simulator.lazy import lazy_module
from shufflesim.simulator.population.base import (
    NUMERIC,
    DataDistribution,
    register_data_distribution,
)
from shufflesim.simulator.population.checks import require_finite, require_positive
from shufflesim.simulator.population.files import read_numeric_column

#: scipy.stats, imported when a distribution needs it (loading a scenario does not; issue 32)
stats = lazy_module("scipy.stats")


def _check_box(low, high, low_y, high_y) -> None:
    for name, value in (("low", low), ("high", high)):
        require_finite(name, value)
    if not low < high:
        raise ScenarioError("high", high, f"must be greater than low = {low}")
    if (low_y is None) != (high_y is None):
        raise ScenarioError("low_y" if low_y is None else "high_y", None,
                            "a planar box needs both low_y and high_y")
    if low_y is not None:
        require_finite("low_y", low_y)
        require_finite("high_y", high_y)
        if not low_y < high_y:
            raise ScenarioError("high_y", high_y, f"must be greater than low_y = {low_y}")


class _Points(DataDistribution):
    """Numeric points; ``support()`` refuses planar points (they cannot feed a randomizer on an
    interval: the scenario loader asks for the support only then)."""

    domain_size = None

    @property
    def kind(self) -> str:
        return NUMERIC

    @property
    def planar(self) -> bool:
        raise NotImplementedError

    def _refuse_planar_support(self) -> None:
        if self.planar:
            raise ScenarioError("distribution", self.name,
                                "planar points (x + iy) need a planar randomizer "
                                "(planar_laplace), not one on an interval")


def _clipped_normal_mean(mu: np.ndarray, sigma: float, low: float, high: float) -> np.ndarray:
    """E[clip(N(mu, sigma^2), low, high)] in closed form."""
    a, b = (low - mu) / sigma, (high - mu) / sigma
    inside = stats.norm.cdf(b) - stats.norm.cdf(a)
    return (low * stats.norm.cdf(a) + high * stats.norm.sf(b) + mu * inside
            - sigma * (stats.norm.pdf(b) - stats.norm.pdf(a)))


@register_data_distribution
@dataclass(frozen=True)
class UniformBox(_Points):
    """Uniform on [low, high] (or on the box [low, high] x [low_y, high_y])."""

    low: float = 0.0
    high: float = 1.0
    low_y: float | None = None
    high_y: float | None = None

    name = "uniform_box"

    def __post_init__(self) -> None:
        _check_box(self.low, self.high, self.low_y, self.high_y)

    @property
    def planar(self) -> bool:
        return self.low_y is not None

    def support(self) -> tuple[float, float]:
        self._refuse_planar_support()
        return float(self.low), float(self.high)

    def population_mean(self):
        x = 0.5 * (self.low + self.high)
        return complex(x, 0.5 * (self.low_y + self.high_y)) if self.planar else float(x)

    def sample(self, shape, rng):
        x = rng.uniform(self.low, self.high, size=shape)
        if not self.planar:
            return x
        return x + 1j * rng.uniform(self.low_y, self.high_y, size=shape)


@register_data_distribution
@dataclass(frozen=True)
class Clustered(_Points):
    """A mixture of Gaussian clusters (standard deviation ``spread`` per coordinate) at
    ``centers`` (x coordinates; ``centers_y``: their y coordinates, planar), chosen with
    probabilities proportional to ``weights`` (default equal), each draw clipped to the box."""

    centers: tuple[float, ...]
    spread: float
    centers_y: tuple[float, ...] | None = None
    weights: tuple[float, ...] | None = None
    low: float = 0.0
    high: float = 1.0
    low_y: float | None = None
    high_y: float | None = None

    name = "clustered"

    def __post_init__(self) -> None:
        if not self.centers:
            raise ScenarioError("centers", self.centers, "must be a non-empty array")
        for i, c in enumerate(self.centers):
            require_finite(f"centers[{i}]", c)
        require_positive("spread", self.spread)
        if self.centers_y is not None:
            if len(self.centers_y) != len(self.centers):
                raise ScenarioError("centers_y", self.centers_y,
                                    f"needs one y per center ({len(self.centers)})")
            for i, c in enumerate(self.centers_y):
                require_finite(f"centers_y[{i}]", c)
            low_y = self.low if self.low_y is None else self.low_y
            high_y = self.high if self.high_y is None else self.high_y
        else:
            low_y, high_y = self.low_y, self.high_y
            if low_y is not None or high_y is not None:
                raise ScenarioError("centers_y", None, "a planar box needs centers_y")
        _check_box(self.low, self.high, low_y, high_y)
        if self.weights is not None:
            w = np.asarray(self.weights, dtype=float)
            if w.shape != (len(self.centers),) or not np.all(np.isfinite(w) & (w >= 0)) \
                    or w.sum() <= 0:
                raise ScenarioError("weights", self.weights,
                                    f"needs {len(self.centers)} finite numbers >= 0, not all 0")

    @property
    def planar(self) -> bool:
        return self.centers_y is not None

    @property
    def _box_y(self) -> tuple[float, float]:
        return (self.low if self.low_y is None else self.low_y,
                self.high if self.high_y is None else self.high_y)

    @property
    def _probabilities(self) -> np.ndarray:
        w = np.ones(len(self.centers)) if self.weights is None else np.asarray(self.weights, float)
        return w / w.sum()

    def support(self) -> tuple[float, float]:
        self._refuse_planar_support()
        return float(self.low), float(self.high)

    def population_mean(self):
        p = self._probabilities
        x = float(p @ _clipped_normal_mean(np.asarray(self.centers, float), self.spread,
                                           self.low, self.high))
        if not self.planar:
            return x
        ly, hy = self._box_y
        y = float(p @ _clipped_normal_mean(np.asarray(self.centers_y, float), self.spread, ly,
                                           hy))
        return complex(x, y)

    def sample(self, shape, rng):
        cluster = rng.choice(len(self.centers), size=shape, p=self._probabilities)
        x = np.clip(np.asarray(self.centers, float)[cluster]
                    + self.spread * rng.standard_normal(shape), self.low, self.high)
        if not self.planar:
            return x
        ly, hy = self._box_y
        y = np.clip(np.asarray(self.centers_y, float)[cluster]
                    + self.spread * rng.standard_normal(shape), ly, hy)
        return x + 1j * y


@register_data_distribution
@dataclass(frozen=True)
class PointsFile(_Points):
    """Coordinates from a CSV or Parquet file: column ``column`` (x), and ``column_y`` (y) for
    planar points; each user an i.i.d. draw of a row; the population is the whole file."""

    path: str
    column: str
    column_y: str | None = None
    _values: np.ndarray = field(default=None, init=False, repr=False, compare=False)

    name = "points_file"
    path_fields = ("path",)

    def __post_init__(self) -> None:
        x = read_numeric_column(Path(self.path), self.column)
        values = x
        if self.column_y is not None:
            y = read_numeric_column(Path(self.path), self.column_y, "column_y")
            values = x + 1j * y
        if not np.isfinite(values).all():
            raise ScenarioError("column", self.column, "holds non-finite coordinates")
        if values.size == 0:
            raise ScenarioError("path", self.path, "holds no rows")
        object.__setattr__(self, "_values", values)

    @property
    def planar(self) -> bool:
        return self.column_y is not None

    def support(self) -> tuple[float, float]:
        self._refuse_planar_support()
        return float(self._values.min()), float(self._values.max())

    def population_mean(self):
        mean = self._values.mean()
        return complex(mean) if self.planar else float(mean)

    def sample(self, shape, rng):
        return self._values[rng.integers(0, self._values.size, size=shape)]


__all__ = ["Clustered", "PointsFile", "UniformBox"]
