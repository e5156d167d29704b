"""Populations read from files: a CSV or Parquet column as the users' data
(:class:`FileColumn`) or as their budgets (:class:`FileBudget`, optionally with local deltas)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from shufflesim.protocols.errors import shown
from shufflesim.simulator.errors import ScenarioError
from shufflesim.simulator.lazy import lazy_module
from shufflesim.simulator.population.base import (
    CATEGORICAL,
    NUMERIC,
    DataDistribution,
    register_budget_distribution,
    register_data_distribution,
)
from shufflesim.simulator.population.budgets import Budget, shape_of
from shufflesim.simulator.population.checks import require_int
from shufflesim.simulator.usercode import numeric_column

#: pandas and pyarrow, imported when a file is read (loading a scenario does not; issue 32)
pd = lazy_module("pandas")
pq = lazy_module("pyarrow.parquet")


def _sampled_column(member) -> np.ndarray:
    """The values of a file member's ``column`` (``path``), after checking its ``replace``."""
    if not isinstance(member.replace, bool):
        raise ScenarioError("replace", member.replace, "must be true or false")
    return read_column(Path(member.path), member.column)

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
        if self.domain_size is not None:
            require_int("domain_size", self.domain_size, 1)
        values = _sampled_column(self)
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
            values = numeric_column(values, "column", self.column,
                                    f"column {self.column!r} of {self.path}")
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


def read_column(path: Path, column: str, key: str = "column") -> np.ndarray:
    """One column of a CSV (pandas) or Parquet (pyarrow) file as a numpy array (``key``: the
    scenario key naming the column, for errors)."""
    if path.is_dir():
        raise ScenarioError("path", str(path), "is a directory, not a data file")
    if not path.is_file():
        raise ScenarioError("path", str(path), "file not found")
    suffix = path.suffix.lower()
    try:
        if suffix == ".parquet":
            names = pq.read_schema(path).names
            if column not in names:
                raise ScenarioError(key, column, f"not a column of {path} (columns: {names})")
            series = pq.read_table(path, columns=[column]).column(column).to_pandas()
        elif suffix in (".csv", ".txt"):
            frame = pd.read_csv(path)
            if column not in frame.columns:
                raise ScenarioError(
                    key, column, f"not a column of {path} (columns: {list(frame.columns)})"
                )
            series = frame[column]
        else:
            raise ScenarioError("path", str(path), "must end in .csv or .parquet")
    except (OSError, ValueError) as error:
        if isinstance(error, ScenarioError):
            raise
        raise ScenarioError("path", str(path), f"cannot be read: {error}") from None
    if series.isna().any():
        raise ScenarioError(key, column, f"has missing values in {path}")
    if series.size == 0:
        raise ScenarioError(key, column, f"is empty in {path}")
    return series.to_numpy()


def read_numeric_column(path: Path, column: str, key: str = "column") -> np.ndarray:
    """:func:`read_column` as float64; an entry that is not a number is one line naming the key,
    the column, the entry and its row (simulator/usercode.py)."""
    return numeric_column(read_column(path, column, key), key, column,
                          f"column {column!r} of {path}")



@register_budget_distribution
@dataclass(frozen=True)
class FileBudget(Budget):
    """Budgets from a column of a CSV or Parquet file. ``replace = true``: i.i.d. draws from the
    column's values; ``false``: each repetition takes n distinct rows (n <= rows). With
    ``delta_column`` each row also gives that user's local delta."""

    path: str
    column: str
    replace: bool = True
    delta_column: str | None = None
    _values: np.ndarray = field(default=None, init=False, repr=False, compare=False)
    _deltas: np.ndarray = field(default=None, init=False, repr=False, compare=False)

    name = "file"
    path_fields = ("path",)

    def __post_init__(self) -> None:
        values = numeric_column(_sampled_column(self), "column", self.column,
                                f"column {self.column!r} of {self.path}")
        bad = ~(np.isfinite(values) & (values > 0))
        if bad.any():
            raise ScenarioError("column", self.column,
                                f"holds the budget {shown(values[bad][0])}; budgets must be "
                                "finite > 0")
        deltas = np.zeros_like(values)
        if self.delta_column is not None:
            deltas = read_numeric_column(Path(self.path), self.delta_column, "delta_column")
            bad = ~((deltas >= 0) & (deltas < 1))
            if bad.any():
                raise ScenarioError("delta_column", self.delta_column,
                                    f"holds the local delta {shown(deltas[bad][0])}; must lie "
                                    "in [0, 1)")
        object.__setattr__(self, "_values", values)
        object.__setattr__(self, "_deltas", deltas)

    @property
    def rows(self) -> int:
        return int(self._values.size)

    @property
    def reference_epsilon(self) -> float:
        return float(self._values.max())

    def _check_rows(self, n: int) -> None:
        if not self.replace and n > self.rows:
            raise ScenarioError("replace", self.replace,
                                f"drawing without replacement needs n <= {self.rows} rows of "
                                f"{self.path}")

    def sample_budgets(self, n, rng):
        shape = shape_of(n)
        if self.replace:
            return self._values[rng.integers(0, self.rows, size=shape)]
        self._check_rows(shape[-1])
        index = np.broadcast_to(np.arange(self.rows), shape[:-1] + (self.rows,))
        return self._values[rng.permuted(index, axis=-1)[..., : shape[-1]]]

    def _sorted(self) -> tuple[np.ndarray, np.ndarray]:
        order = np.argsort(self._values, kind="stable")
        return self._values[order], self._deltas[order]

    def profile_arrays(self, n):
        """The whole column when n = rows without replacement; else the quantile multiset of
        the column's empirical distribution (deltas carried along)."""
        values, deltas = self._sorted()
        if not self.replace:
            self._check_rows(n)
        if not self.replace and n == self.rows:
            return values, deltas
        index = np.minimum(((np.arange(n) + 0.5) / n * self.rows).astype(np.int64), self.rows - 1)
        return values[index], deltas[index]

    def quantile_budgets(self, n):
        return self.profile_arrays(n)[0]

