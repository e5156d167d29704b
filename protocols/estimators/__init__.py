"""Analyzers' estimators (frequency, mean, sum, location means, multi-message protocols and
personalized budgets), each with its exact variance.

Each estimator class registers itself beside its definition (protocols.estimators.registry);
protocols/plugins.py declares the built-in modules (``ESTIMATORS``), imported when the registry
is first read, so ``make_estimator(name, randomizer)`` finds them.
"""

from __future__ import annotations

from shufflesim.protocols.estimators.registry import ESTIMATORS


def estimator_names() -> list[str]:
    """The registered estimator names."""
    return ESTIMATORS.names()


def make_estimator(name: str, randomizer):
    """The estimator ``name`` for ``randomizer``; ParameterError (field ``estimator.name``) for
    an unknown name (naming the closest one) or a randomizer the estimator does not fit."""
    return ESTIMATORS.get(name)(randomizer)


__all__ = ["ESTIMATORS", "estimator_names", "make_estimator"]
