"""Analyzers' estimators (frequency, mean, sum), each with its exact variance.

``make_estimator(name, randomizer)`` builds the estimator registered under ``name`` for a
randomizer; the estimator modules are imported lazily, so that this dispatch does not depend on
which of them exist at import time.
"""

from __future__ import annotations

import importlib

from protocols.errors import ParameterError

#: name -> (module, class) of each estimator.
_ESTIMATORS = {
    "frequency": ("protocols.estimators.frequency", "FrequencyEstimator"),
    "mean": ("protocols.estimators.mean", "MeanEstimator"),
    "sum": ("protocols.estimators.sum", "SumEstimator"),
    # Personalized budgets (003 and weighted; protocols.estimators.personalized).
    "gspa_frequency": ("protocols.estimators.personalized", "GspaFrequencyEstimator"),
    "uniform_frequency": ("protocols.estimators.personalized", "UniformFrequencyEstimator"),
    "weighted_frequency": ("protocols.estimators.personalized", "WeightedFrequencyEstimator"),
    "gspa_mean": ("protocols.estimators.personalized", "GspaMeanEstimator"),
    "weighted_mean": ("protocols.estimators.personalized", "WeightedMeanEstimator"),
}


def estimator_names() -> list[str]:
    """The registered estimator names."""
    return sorted(_ESTIMATORS)


def make_estimator(name: str, randomizer):
    """The estimator ``name`` for ``randomizer``; ParameterError (field ``estimator.name``) for
    an unknown name or a randomizer the estimator does not fit."""
    if name not in _ESTIMATORS:
        raise ParameterError(
            "estimator.name", name, f"unknown estimator; choose one of {estimator_names()}"
        )
    module_name, class_name = _ESTIMATORS[name]
    try:
        cls = getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError) as error:
        raise ParameterError("estimator.name", name, f"estimator not available: {error}") from None
    return cls(randomizer)


__all__ = ["estimator_names", "make_estimator"]
