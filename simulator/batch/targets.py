"""Targets: what an estimator estimates and how its error is measured (the batch path's and
the pipeline's metrics), and the registry of targets by name. An estimator names its target
(``target``, protocols/estimators/base.py), so several estimators share one with no alias. The
built-in targets are in simulator.batch.metrics and simulator.batch.location."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from shufflesim.protocols.estimators.registry import ESTIMATORS
from shufflesim.protocols.registry import Registry
from shufflesim.simulator.population.base import DataDistribution


# ---------------------------------------------------------------------------------------------
# Targets: what an estimator estimates, and its error metrics
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class DataStats:
    """Sufficient statistics of the sampled data of a block of repetitions.

    counts: (r, d) histograms over the randomizer's input domain (categorical data), else None.
    sums: (r,) sums of the values.
    """

    counts: np.ndarray | None
    sums: np.ndarray


class Target(ABC):
    """The quantity an estimator estimates and how its error is measured."""

    name: ClassVar[str]
    metric_names: ClassVar[tuple[str, ...]]

    @abstractmethod
    def empirical(self, stats: DataStats, n: int) -> np.ndarray:
        """The truth of the sampled data, one per repetition (leading axis)."""

    @abstractmethod
    def population(self, data: DataDistribution, n: int, domain_size: int | None) -> np.ndarray:
        """The population truth (broadcasts against the estimates)."""

    @abstractmethod
    def metrics(self, estimate: np.ndarray, truth: np.ndarray) -> dict[str, np.ndarray]:
        """Metric name -> one value per repetition."""


#: Targets by name (an estimator's ``target``).
TARGETS: Registry[Target] = Registry(
    "estimator target", field="estimator.target",
    declared="shufflesim.simulator.plugins:TARGETS")


def register_target(target: Target) -> Target:
    """Make the metrics of a target available to the batch path (under ``target.name``)."""
    return TARGETS.register(target.name, target)


def target_for(estimator_name: str) -> Target:
    """The target of the estimator registered as ``estimator_name`` (ParameterError naming
    the estimator, or its target when no target of that name is registered)."""
    return TARGETS.get(ESTIMATORS.get(estimator_name).target)
