"""Populations: where the users' data and their privacy budgets come from.

A population is ``n`` users, a *data distribution* (each user's value is drawn from it
independently) and a *budget distribution* (each user's local budget epsilon_i). Both are small
tagged unions: frozen dataclasses registered by name (the ``distribution`` key of a scenario's
``population.data`` / ``population.budget`` table), registered in
:data:`DATA_DISTRIBUTIONS` / :data:`BUDGET_DISTRIBUTIONS` (built-in members: population.data,
population.budgets, population.files; simulator/plugins.py declares them).

Data distributions are either *categorical* (integers in ``[0, domain_size)``, for frequency
oracles) or *numeric* (floats, for mean and sum mechanisms). Every distribution knows its exact
population-level truth (``probabilities()`` and ``population_mean()``), which the batch path
uses as the "population" reference of its error metrics, and its ``support()``, which the
scenario loader checks against the randomizer's input domain.

Validation errors are :class:`simulator.errors.ScenarioError` naming the *field*; the scenario
loader prefixes the key path (e.g. ``population.data.exponent``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import MISSING, fields
from typing import Any, ClassVar

import numpy as np

from shufflesim.protocols.errors import ParameterError
from shufflesim.protocols.registry import Registry
from shufflesim.simulator.errors import ScenarioError

CATEGORICAL = "categorical"
NUMERIC = "numeric"


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



#: Data distributions by name (the ``distribution`` key of ``population.data``).
DATA_DISTRIBUTIONS: Registry[type[DataDistribution]] = Registry(
    "data distribution", field="distribution",
    declared="shufflesim.simulator.plugins:DATA_DISTRIBUTIONS")
#: Budget distributions by name (the ``distribution`` key of ``population.budget``).
BUDGET_DISTRIBUTIONS: Registry[type[BudgetDistribution]] = Registry(
    "budget distribution", field="distribution",
    declared="shufflesim.simulator.plugins:BUDGET_DISTRIBUTIONS")
#: Class decorators: make a distribution available under ``cls.name``.
register_data_distribution = DATA_DISTRIBUTIONS.register
register_budget_distribution = BUDGET_DISTRIBUTIONS.register


def data_distribution_names() -> list[str]:
    return DATA_DISTRIBUTIONS.names()


def budget_distribution_names() -> list[str]:
    return BUDGET_DISTRIBUTIONS.names()


def data_distribution_class(name: object) -> type[DataDistribution]:
    return _lookup(DATA_DISTRIBUTIONS, name)


def budget_distribution_class(name: object) -> type[BudgetDistribution]:
    return _lookup(BUDGET_DISTRIBUTIONS, name)


def _lookup(registry: Registry, name: object) -> type:
    try:
        return registry.get(name)
    except ParameterError as error:
        raise ScenarioError(error.field, error.value, error.requirement) from None


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
