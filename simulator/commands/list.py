"""``shufflesim list``: what a scenario can name (randomizers, estimators, distributions)."""

from __future__ import annotations

import json

import click

from protocols.randomizers import randomizer_class, randomizer_names, randomizer_parameters
from simulator.batch import target_names
from simulator.population import (
    budget_distribution_class,
    budget_distribution_names,
    data_distribution_class,
    data_distribution_names,
    describe_parameters,
)


def catalogue() -> dict:
    """Everything ``list`` shows, as plain JSON-ready data."""
    randomizers = {}
    for name in randomizer_names():
        cls = randomizer_class(name)
        randomizers[name] = {
            "parameters": randomizer_parameters(name),
            "output": cls.output_kind,
            "personalized_budgets": bool(cls.supports_personalized),
            "aggregate_sampler": bool(cls.has_aggregate_sampler),
        }
    return {
        "randomizers": randomizers,
        "estimators": _estimator_names(),
        "data_distributions": {
            name: describe_parameters(data_distribution_class(name))
            for name in data_distribution_names()
        },
        "budget_distributions": {
            name: describe_parameters(budget_distribution_class(name))
            for name in budget_distribution_names()
        },
    }


def _estimator_names() -> list[str]:
    """Estimators the protocols package offers and the batch path can measure."""
    try:
        from protocols.estimators import estimator_names
    except ImportError:
        return target_names()
    return sorted(set(estimator_names()) & set(target_names()))


def _format_parameters(parameters: list[dict]) -> str:
    parts = []
    for p in parameters:
        parts.append(p["name"] if p["required"] else f"{p['name']}={p['default']!r}")
    return ", ".join(parts)


@click.command("list")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable JSON output.")
def command(as_json: bool) -> None:
    """List randomizers, estimators, data distributions and budget distributions."""
    info = catalogue()
    if as_json:
        click.echo(json.dumps(info, indent=2, default=str))
        return
    click.echo("randomizers:")
    for name, entry in info["randomizers"].items():
        flags = [entry["output"]]
        if entry["personalized_budgets"]:
            flags.append("personalized")
        if entry["aggregate_sampler"]:
            flags.append("aggregate path")
        click.echo(f"  {name:<16} ({', '.join(entry['parameters'])})  [{', '.join(flags)}]")
    click.echo("estimators:")
    for name in info["estimators"]:
        click.echo(f"  {name}")
    for section in ("data_distributions", "budget_distributions"):
        click.echo(section.replace("_", " ") + ":")
        for name, parameters in info[section].items():
            click.echo(f"  {name:<20} ({_format_parameters(parameters)})")
