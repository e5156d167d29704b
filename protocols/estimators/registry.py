"""The estimators' registry (one :class:`~protocols.registry.Registry`): an estimator class
registers itself beside its definition with ``@register_estimator``; it is built for a
randomizer as ``cls(randomizer)`` and refuses (ParameterError) a randomizer it does not fit."""

from __future__ import annotations

from shufflesim.protocols.registry import Registry

#: Every estimator class, by its ``name``.
ESTIMATORS: Registry[type] = Registry("estimator", field="estimator.name",
                                      declared="shufflesim.protocols.plugins:ESTIMATORS")


def register_estimator(cls: type) -> type:
    """Class decorator: make the estimator ``cls`` available under ``cls.name``."""
    return ESTIMATORS.register(cls)
