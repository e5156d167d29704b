"""Targets: what an estimator estimates and how its error is measured (the batch path's and
the pipeline's metrics), and the registry of targets by estimator name. The built-in targets
are in simulator.batch.metrics."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

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


#: Targets by estimator name (several estimators may share one target).
TARGETS: Registry[Target] = Registry("estimator", field="estimator.name")


def register_target(target: Target, name: str | None = None) -> Target:
    """Make the metrics of a new estimator name available to the batch path (``name``:
    another estimator name for an existing target)."""
    return TARGETS.register(target.name if name is None else name, target)


def target_names() -> list[str]:
    """Estimator names whose error metrics the batch path can compute."""
    return TARGETS.names()


def target_for(estimator_name: str) -> Target:
    return TARGETS.get(estimator_name)
