"""``shufflesim list``: everything a scenario or a command can name.

Randomizers (each parameter with its default, or ``required``), estimators, data and budget
distributions, the amplification bounds (kind, status, scope, regime, reference) and the
audit's levels and attacks. ``--json`` prints the same as one JSON object.
"""

from __future__ import annotations

import json
from dataclasses import MISSING, fields

import click

from shufflesim.simulator.audit.levels import ATTACKS, Level
from shufflesim.simulator.cli.lazy import lazy_module

catalogue_module = lazy_module("shufflesim.protocols.bounds.catalogue")
estimators = lazy_module("shufflesim.protocols.estimators")
randomizers = lazy_module("shufflesim.protocols.randomizers")
population = lazy_module("shufflesim.simulator.population.base")

LEVEL_DESCRIPTIONS = {
    Level.RANDOMIZER.value: "one user's randomizer: goodness of fit and an eps0 lower bound",
    Level.SHUFFLE.value: "the shuffled histogram of n reports: an eps lower bound per delta",
    Level.PIPELINE.value: "the whole SimPy pipeline (clients, shuffler, analyzer)",
}


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
        "audit": {
            "levels": dict(LEVEL_DESCRIPTIONS),
            "attacks": {spec.name: spec.summary for spec in ATTACKS.values()},
        },
    }


def _format_parameters(parameters: list[dict]) -> str:
    parts = []
    for p in parameters:
        parts.append(f"{p['name']} (required)" if p["required"]
                     else f"{p['name']}={p['default']!r}")
    return ", ".join(parts)


@click.command("list")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable JSON output.")
def command(as_json: bool) -> None:
    """List randomizers, estimators, distributions, bounds and audit attacks."""
    info = catalogue()
    if as_json:
        click.echo(json.dumps(info, indent=2, default=str))
        return
    click.echo("randomizers (parameter=default; epsilon0 comes from the budget):")
    for name, entry in info["randomizers"].items():
        flags = [entry["output"]]
        if entry["personalized_budgets"]:
            flags.append("personalized")
        if entry["aggregate_sampler"]:
            flags.append("aggregate path")
        shown = [p for p in entry["parameters"] if p["name"] != "epsilon0"]
        click.echo(f"  {name:<16} ({_format_parameters(shown)})  [{', '.join(flags)}]")
    click.echo("estimators:")
    for name in info["estimators"]:
        click.echo(f"  {name}")
    for section in ("data_distributions", "budget_distributions"):
        click.echo(section.replace("_", " ") + ":")
        for name, parameters in info[section].items():
            click.echo(f"  {name:<20} ({_format_parameters(parameters)})")
    click.echo("bounds (kind, status, scope; regime):")
    width = max(map(len, info["bounds"]), default=0)
    for name, b in info["bounds"].items():
        click.echo(f"  {name:<{width}}  {b['kind']:<5}  {b['status']}, {b['scope']}")
        click.echo(f"  {'':<{width}}  regime: {b['regime']}; delta0 > 0: {b['delta0']}")
    click.echo("audit levels:")
    for name, text in info["audit"]["levels"].items():
        click.echo(f"  {name:<12} {text}")
    click.echo("audit attacks:")
    for name, text in info["audit"]["attacks"].items():
        click.echo(f"  {name:<12} {text}")
