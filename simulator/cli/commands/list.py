"""``shufflesim list``: everything a scenario or a command can name.

Randomizers (each parameter with its default, or ``required``), estimators, data and budget
distributions, the amplification bounds (kind, status, scope, regime, reference) and the
audit's levels and attacks. ``--json`` prints the same as one JSON object.
"""

from __future__ import annotations

import json

import click

from shufflesim.simulator.calls.catalogue import catalogue


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
    click.echo("composed methods over rounds (kind, status; regime):")
    for name, c in info["composed_methods"].items():
        click.echo(f"  {name:<{width}}  {c['kind']:<5}  {c['status']}; {c['regime']}")
    click.echo("audit levels:")
    for name, text in info["audit"]["levels"].items():
        click.echo(f"  {name:<12} {text}")
    click.echo("audit attacks:")
    for name, text in info["audit"]["attacks"].items():
        click.echo(f"  {name:<12} {text}")
