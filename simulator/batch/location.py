"""The ``location_mean`` target (protocols.estimators.location): the mean location of the
users' points, real on the line or complex (x + iy) in the plane; its error metrics are the
Euclidean distance between estimate and truth and its square."""

from __future__ import annotations

import numpy as np

from shufflesim.simulator.batch.targets import Target, register_target


class LocationTarget(Target):
    name = "location_mean"
    metric_names = ("distance", "squared_distance")

    def empirical(self, stats, n):
        return np.asarray(stats.sums) / n

    def population(self, data, n, domain_size):
        return np.asarray(data.population_mean())

    def metrics(self, estimate, truth):
        distance = np.abs(np.asarray(estimate) - truth)
        return {"distance": distance, "squared_distance": np.square(distance)}


LOCATION = register_target(LocationTarget())
