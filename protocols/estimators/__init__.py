"""Analyzers' estimators (frequency, mean, sum), each with its exact variance.

``make_estimator(name, randomizer)`` builds the estimator registered under ``name`` for a
randomizer; the estimator modules are imported lazily, so that this dispatch does not depend on
which of them exist at import time.
"""

from __future__ import annotations

import importlib

from shufflesim.protocols.errors import ParameterError

#: name -> (module, class) of each estimator.
_PACKAGE = "shufflesim.protocols.estimators"
_ESTIMATORS = {
    "frequency": (f"{_PACKAGE}.frequency", "FrequencyEstimator"),
    "location_mean": (f"{_PACKAGE}.location", "LocationMeanEstimator"),
    "mean": (f"{_PACKAGE}.mean", "MeanEstimator"),
    "sum": (f"{_PACKAGE}.sum", "SumEstimator"),
    "multi_message_frequency": (f"{_PACKAGE}.multi_message", "MultiMessageFrequencyEstimator"),
    "multi_message_sum": (f"{_PACKAGE}.multi_message", "MultiMessageSumEstimator"),
    # Personalized budgets (003 and weighted; protocols.estimators.personalized).
    "gspa_frequency": (f"{_PACKAGE}.personalized", "GspaFrequencyEstimator"),
    "uniform_frequency": (f"{_PACKAGE}.personalized", "UniformFrequencyEstimator"),
    "weighted_frequency": (f"{_PACKAGE}.personalized", "WeightedFrequencyEstimator"),
    "gspa_mean": (f"{_PACKAGE}.personalized", "GspaMeanEstimator"),
    "weighted_mean": (f"{_PACKAGE}.personalized", "WeightedMeanEstimator"),
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
