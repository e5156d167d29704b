"""Populations: where the users' data and their privacy budgets come from.

A population is ``n`` users, a *data distribution* (each user's value is drawn from it
independently) and a *budget distribution* (each user's local budget epsilon_i). Both are small
tagged unions: frozen dataclasses registered by name (the ``distribution`` key of a scenario's
``population.data`` / ``population.budget`` table), so later modules can add members with
:func:`register_data_distribution` / :func:`register_budget_distribution`.

Data distributions are either *categorical* (integers in ``[0, domain_size)``, for frequency
oracles) or *numeric* (floats, for mean and sum mechanisms). Every distribution knows its exact
population-level truth (``probabilities()`` and ``population_mean()``), which the batch path
uses as the "population" reference of its error metrics, and its ``support()``, which the
scenario loader checks against the randomizer's input domain.

Validation errors are :class:`simulator.errors.ScenarioError` naming the *field*; the scenario
loader prefixes the key path (e.g. ``population.data.exponent``).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from scipy import stats

from simulator.errors import ScenarioError

CATEGORICAL = "categorical"
NUMERIC = "numeric"

_DATA: dict[str, type[DataDistribution]] = {}
_BUDGETS: dict[str, type[BudgetDistribution]] = {}


# -- validation helpers ------------------------------------------------------------------------
def _is_int(value: object) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _is_real(value: object) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)


def _require_int(name: str, value: object, minimum: int) -> None:
    if not _is_int(value) or value < minimum:
        raise ScenarioError(name, value, f"must be an integer >= {minimum}")


def _require_finite(name: str, value: object) -> None:
    if not _is_real(value) or not math.isfinite(value):
        raise ScenarioError(name, value, "must be a finite number")


def _require_positive(name: str, value: object) -> None:
    if not _is_real(value) or not (0 < value < math.inf):
        raise ScenarioError(name, value, "must be a finite number > 0")


# -- data distributions ------------------------------------------------------------------------
class DataDistribution(ABC):
    """One user's value distribution. Users are i.i.d. draws from it."""

    #: Registry name (the ``distribution`` key).
    name: ClassVar[str]
    #: Fields holding file paths, resolved relative to the scenario file by the loader.
    path_fields: ClassVar[tuple[str, ...]] = ()

    @property
    @abstractmethod
    def kind(self) -> str:
        """``"categorical"`` or ``"numeric"``."""

    #: Size d of the categorical domain [0, d); None for numeric data (a field or a class
    #: attribute of each subclass).
    domain_size: int | None

    @abstractmethod
    def support(self) -> tuple[float, float]:
        """Smallest and largest value a draw can take."""

    @abstractmethod
    def population_mean(self) -> float:
        """E[X] for one draw X (categorical values count as the numbers 0..d-1)."""

    def probabilities(self) -> np.ndarray:
        """P[X = v] for v in [0, d) (categorical data only)."""
        raise ScenarioError("distribution", self.name, "has no probability vector (numeric data)")

    @abstractmethod
    def sample(self, shape: int | tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
        """i.i.d. draws of the given shape (int64 for categorical, float64 for numeric data)."""

    def sample_counts(self, n: int, repetitions: int, rng: np.random.Generator) -> np.ndarray:
        """Histograms (repetitions, d) of n i.i.d. draws each (categorical data only).

        The histogram is a sufficient statistic of an i.i.d. sample: Multinomial(n, p).
        """
        p = self.probabilities()
        return rng.multinomial(n, p, size=repetitions)

    def check_sample_size(self, n: int) -> None:  # noqa: B027  (optional hook, no-op default)
        """Raise ScenarioError if a sample of n users cannot be drawn (e.g. without
        replacement from a short file)."""


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


def register_data_distribution(cls: type) -> type:
    """Class decorator: make a data distribution available under ``cls.name``."""
    if cls.name in _DATA:
        raise RuntimeError(f"data distribution {cls.name!r} registered twice")
    _DATA[cls.name] = cls
    return cls


@register_data_distribution
@dataclass(frozen=True)
class Uniform(_Categorical):
    """Uniform over the categories {0, ..., domain_size - 1}."""

    domain_size: int

    name = "uniform"

    def __post_init__(self) -> None:
        _require_int("domain_size", self.domain_size, 1)

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
        _require_int("domain_size", self.domain_size, 1)
        if not _is_real(self.exponent) or not (0 <= self.exponent < math.inf):
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
            if not _is_real(v) or not 0 <= v < math.inf:
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
            _require_finite("value", self.value)
            return
        _require_int("domain_size", self.domain_size, 1)
        if not _is_int(self.value) or not 0 <= self.value < self.domain_size:
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


def _require_interval(low: float, high: float) -> None:
    _require_finite("low", low)
    _require_finite("high", high)
    if not low < high:
        raise ScenarioError("high", high, f"must be greater than low = {low}")


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
        _require_finite("mean", self.mean)
        _require_positive("std", self.std)
        _require_interval(self.low, self.high)

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
        _require_interval(self.low, self.high)

    def population_mean(self) -> float:
        return 0.5 * (self.low + self.high)

    def sample(self, shape, rng):
        return rng.uniform(self.low, self.high, size=shape)


@register_data_distribution
@dataclass(frozen=True)
class FileColumn(DataDistribution):
    """A column of a CSV or Parquet file, taken as the population.

    The column is categorical when it holds integers and ``domain_size`` is given (values must
    lie in [0, domain_size)), numeric otherwise. With ``replace = true`` (default) each user is
    an i.i.d. draw from the column's empirical distribution; with ``replace = false`` each
    repetition draws n distinct rows (n <= rows; n = rows uses the whole column). The
    population reference is the whole column (its frequencies or its mean).
    Missing values (NaN / null) are errors.
    """

    path: str
    column: str
    domain_size: int | None = None
    replace: bool = True
    _values: np.ndarray = field(default=None, init=False, repr=False, compare=False)

    name = "file"
    path_fields = ("path",)

    def __post_init__(self) -> None:
        if not isinstance(self.replace, bool):
            raise ScenarioError("replace", self.replace, "must be true or false")
        if self.domain_size is not None:
            _require_int("domain_size", self.domain_size, 1)
        values = _read_column(Path(self.path), self.column)
        if self.domain_size is not None:
            if not np.issubdtype(values.dtype, np.integer):
                raise ScenarioError(
                    "column", self.column,
                    f"must hold integers for categorical data (found {values.dtype})",
                )
            if values.min() < 0 or values.max() >= self.domain_size:
                bad = int(values.min() if values.min() < 0 else values.max())
                raise ScenarioError(
                    "domain_size", self.domain_size,
                    f"column {self.column!r} holds the value {bad} outside [0, {self.domain_size})",
                )
            values = values.astype(np.int64)
        else:
            values = values.astype(np.float64)
            if not np.isfinite(values).all():
                raise ScenarioError("column", self.column, "holds non-finite values")
        object.__setattr__(self, "_values", values)

    @property
    def kind(self) -> str:
        return NUMERIC if self.domain_size is None else CATEGORICAL

    @property
    def rows(self) -> int:
        return int(self._values.size)

    def support(self) -> tuple[float, float]:
        return float(self._values.min()), float(self._values.max())

    def population_mean(self) -> float:
        return float(self._values.mean())

    def probabilities(self) -> np.ndarray:
        if self.domain_size is None:
            return super().probabilities()
        return np.bincount(self._values, minlength=self.domain_size) / self._values.size

    def check_sample_size(self, n: int) -> None:
        if not self.replace and n > self.rows:
            raise ScenarioError(
                "replace", self.replace,
                f"sampling without replacement needs n <= {self.rows} rows of {self.path}",
            )

    def sample(self, shape, rng):
        shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
        if self.replace:
            return self._values[rng.integers(0, self.rows, size=shape)]
        n = shape[-1]
        self.check_sample_size(n)
        lead = shape[:-1]
        index = np.broadcast_to(np.arange(self.rows), lead + (self.rows,))
        return self._values[rng.permuted(index, axis=-1)[..., :n]]

    def sample_counts(self, n, repetitions, rng):
        if self.replace or self.domain_size is None:
            return super().sample_counts(n, repetitions, rng)
        self.check_sample_size(n)
        colors = np.bincount(self._values, minlength=self.domain_size)
        return rng.multivariate_hypergeometric(colors, n, size=repetitions)


def _read_column(path: Path, column: str) -> np.ndarray:
    """One column of a CSV (pandas) or Parquet (pyarrow) file as a numpy array."""
    import pandas as pd
    import pyarrow.parquet as pq

    if not path.is_file():
        raise ScenarioError("path", str(path), "file not found")
    suffix = path.suffix.lower()
    try:
        if suffix == ".parquet":
            names = pq.read_schema(path).names
            if column not in names:
                raise ScenarioError("column", column, f"not a column of {path} (columns: {names})")
            series = pq.read_table(path, columns=[column]).column(column).to_pandas()
        elif suffix in (".csv", ".txt"):
            frame = pd.read_csv(path)
            if column not in frame.columns:
                raise ScenarioError(
                    "column", column, f"not a column of {path} (columns: {list(frame.columns)})"
                )
            series = frame[column]
        else:
            raise ScenarioError("path", str(path), "must end in .csv or .parquet")
    except (OSError, ValueError) as error:
        if isinstance(error, ScenarioError):
            raise
        raise ScenarioError("path", str(path), f"cannot be read: {error}") from None
    if series.isna().any():
        raise ScenarioError("column", column, f"has missing values in {path}")
    if series.size == 0:
        raise ScenarioError("column", column, f"is empty in {path}")
    return series.to_numpy()


# -- budget distributions ----------------------------------------------------------------------
class BudgetDistribution(ABC):
    """Each user's local privacy budget epsilon_i, drawn i.i.d. and independently of the data."""

    name: ClassVar[str]

    @property
    @abstractmethod
    def is_constant(self) -> bool:
        """True when every user has the same budget (then randomizers use ``epsilon0``)."""

    @property
    @abstractmethod
    def reference_epsilon(self) -> float:
        """The epsilon0 the scenario's randomizer is built with (the common budget when
        constant); per-user budgets are passed to ``randomize`` as an array."""

    @abstractmethod
    def sample_budgets(self, n: int | tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
        """Per-user budgets as a float64 array of shape ``n`` (int or shape tuple)."""


def register_budget_distribution(cls: type) -> type:
    """Class decorator: make a budget distribution available under ``cls.name``."""
    if cls.name in _BUDGETS:
        raise RuntimeError(f"budget distribution {cls.name!r} registered twice")
    _BUDGETS[cls.name] = cls
    return cls


@register_budget_distribution
@dataclass(frozen=True)
class ConstantBudget(BudgetDistribution):
    """Every user randomizes with the same local budget ``epsilon0``."""

    epsilon0: float

    name = "constant"

    def __post_init__(self) -> None:
        _require_positive("epsilon0", self.epsilon0)

    @property
    def is_constant(self) -> bool:
        return True

    @property
    def reference_epsilon(self) -> float:
        return float(self.epsilon0)

    def sample_budgets(self, n, rng):
        return np.full(n, float(self.epsilon0))


# -- registry access ---------------------------------------------------------------------------
def data_distribution_names() -> list[str]:
    return sorted(_DATA)


def budget_distribution_names() -> list[str]:
    return sorted(_BUDGETS)


def data_distribution_class(name: str) -> type[DataDistribution]:
    return _lookup(_DATA, name, "data distribution")


def budget_distribution_class(name: str) -> type[BudgetDistribution]:
    return _lookup(_BUDGETS, name, "budget distribution")


def _lookup(registry: dict[str, type], name: object, what: str) -> type:
    if not isinstance(name, str) or name not in registry:
        raise ScenarioError(
            "distribution", name, f"unknown {what}; choose one of {sorted(registry)}"
        )
    return registry[name]


def describe_parameters(cls: type) -> list[dict[str, Any]]:
    """The parameters of a registered distribution: name, type and default (None if required)."""
    out = []
    for f in fields(cls):
        if not f.init:
            continue
        required = f.default is MISSING and f.default_factory is MISSING
        out.append({
            "name": f.name,
            "type": str(f.type),
            "required": required,
            "default": None if required else f.default,
        })
    return out


# Budget distributions beyond the constant one register themselves on import (simulator.budgets
# imports this module, hence the import at its end).
from simulator import budgets as _budgets  # noqa: E402, F401
