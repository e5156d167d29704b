"""The built-in targets: frequency vectors (l2, linf, mse, mae), means and sums (error, mse,
mae), and the personalized-budget estimators that estimate the same quantities."""

from __future__ import annotations

import numpy as np

from shufflesim.simulator.batch.targets import Target, register_target


class FrequencyTarget(Target):
    name = "frequency"
    metric_names = ("l2", "linf", "mse", "mae")

    def empirical(self, stats, n):
        return stats.counts / n

    def population(self, data, n, domain_size):
        p = data.probabilities()
        return np.pad(p, (0, domain_size - p.size))

    def metrics(self, estimate, truth):
        diff = np.asarray(estimate, dtype=float) - truth
        squared = np.square(diff)
        absolute = np.abs(diff)
        return {
            "l2": np.sqrt(squared.sum(axis=-1)),
            "linf": absolute.max(axis=-1),
            "mse": squared.mean(axis=-1),
            "mae": absolute.mean(axis=-1),
        }


class _ScalarTarget(Target):
    metric_names = ("error", "mse", "mae")

    def metrics(self, estimate, truth):
        error = np.asarray(estimate, dtype=float) - truth
        return {"error": error, "mse": np.square(error), "mae": np.abs(error)}


class MeanTarget(_ScalarTarget):
    name = "mean"

    def empirical(self, stats, n):
        return stats.sums / n

    def population(self, data, n, domain_size):
        return np.asarray(data.population_mean())


class SumTarget(_ScalarTarget):
    name = "sum"

    def empirical(self, stats, n):
        return stats.sums.astype(float)

    def population(self, data, n, domain_size):
        return np.asarray(n * data.population_mean())


FREQUENCY = register_target(FrequencyTarget())
MEAN = register_target(MeanTarget())
SUM = register_target(SumTarget())
