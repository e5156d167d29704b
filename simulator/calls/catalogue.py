"""The ``list`` capability: everything a scenario or a command can name, as plain JSON-ready
data (``shufflesim list --json`` prints it; ``shufflesim.catalogue()`` returns it as tables).

Randomizers (each parameter with its default, or ``required``), estimators, data and budget
distributions, the amplification bounds (kind, status, scope, regime, reference), the composed
methods over rounds, and the audit's levels and attacks.
"""

from __future__ import annotations

from dataclasses import MISSING, fields

from shufflesim.simulator.audit.levels import ATTACKS, LEVELS
from shufflesim.simulator.lazy import lazy_module

catalogue_module = lazy_module("shufflesim.protocols.bounds.catalogue")
estimators = lazy_module("shufflesim.protocols.estimators")
randomizers = lazy_module("shufflesim.protocols.randomizers")
composed = lazy_module("shufflesim.protocols.accounting.compose")
population = lazy_module("shufflesim.simulator.population.base")

def randomizer_parameters(cls: type) -> list[dict]:
    """Name, required, default of each parameter (epsilon0 comes from the budget)."""
    out = []
    for f in fields(cls):
        required = f.default is MISSING and f.default_factory is MISSING
        out.append({"name": f.name, "required": required,
                    "default": None if required else f.default})
    return out


def catalogue() -> dict:
    """Everything ``list`` shows, as plain JSON-ready data."""
    named = {}
    for name in randomizers.randomizer_names():
        cls = randomizers.randomizer_class(name)
        named[name] = {
            "parameters": randomizer_parameters(cls),
            "output": cls.output_kind,
            "personalized_budgets": bool(cls.supports_personalized),
            "aggregate_sampler": bool(cls.has_aggregate_sampler),
        }
    bounds = {
        spec.name: {"kind": spec.kind.value, "status": spec.status_label, "scope": spec.scope,
                    "regime": spec.regime, "reference": spec.reference,
                    "delta0": spec.delta0_label}
        for spec in sorted(catalogue_module.all_bounds(), key=lambda s: s.name)
    }
    return {
        "randomizers": named,
        "estimators": estimators.estimator_names(),
        "data_distributions": {
            name: population.describe_parameters(cls)
            for name, cls in sorted(population.DATA_DISTRIBUTIONS.items())
        },
        "budget_distributions": {
            name: population.describe_parameters(cls)
            for name, cls in sorted(population.BUDGET_DISTRIBUTIONS.items())
        },
        "bounds": bounds,
        "composed_methods": {
            spec.name: {"kind": spec.kind.value, "status": spec.status.value,
                        "regime": spec.regime, "reference": spec.reference}
            for spec in (composed.get_composed_method(m) for m in composed.composed_method_names())
        },
        "audit": {
            "levels": {spec.name: spec.description for spec in LEVELS.values()},
            "attacks": {spec.name: spec.summary for spec in ATTACKS.values()},
        },
    }
