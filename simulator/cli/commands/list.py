"""``shufflesim list``: everything a scenario or a command can name.

Randomizers (each parameter with its default, or ``required``), estimators, data and budget
distributions, the amplification bounds (kind, status, scope, regime, reference) and the
audit's levels and attacks. ``--json`` prints the same as one JSON object. Both printed forms
come from the snapshot shipped with the package when the installed code is the one it was
built from, else from the user's cache, else they are built (simulator/cli/catalogue_cache.py),
so that ``list`` imports no plug-in unless the code changed.
"""

from __future__ import annotations

import json

import click

from shufflesim.simulator.calls.catalogue import catalogue
from shufflesim.simulator.cli import catalogue_cache


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
    printed = catalogue_cache.load()
    if printed is None:
        printed = printed_forms()
        catalogue_cache.store(printed)
    click.echo(printed["json"] if as_json else printed["text"])


def printed_forms() -> dict[str, str]:
    """The catalogue built (every plug-in imported), in its two printed forms."""
    info = catalogue()
    return {"json": json.dumps(info, indent=2, default=str), "text": render(info)}


def render(info: dict) -> str:
    """The text form of the catalogue."""
    lines = ["randomizers (parameter=default; epsilon0 comes from the budget):"]
    for name, entry in info["randomizers"].items():
        flags = [entry["output"]]
        if entry["personalized_budgets"]:
            flags.append("personalized")
        if entry["aggregate_sampler"]:
            flags.append("aggregate path")
        shown = [p for p in entry["parameters"] if p["name"] != "epsilon0"]
        lines.append(f"  {name:<16} ({_format_parameters(shown)})  [{', '.join(flags)}]")
    lines.append("estimators:")
    lines.extend(f"  {name}" for name in info["estimators"])
    for section in ("data_distributions", "budget_distributions"):
        lines.append(section.replace("_", " ") + ":")
        for name, parameters in info[section].items():
            lines.append(f"  {name:<20} ({_format_parameters(parameters)})")
    lines.append("bounds (kind, status, scope; regime):")
    width = max(map(len, info["bounds"]), default=0)
    for name, b in info["bounds"].items():
        lines.append(f"  {name:<{width}}  {b['kind']:<5}  {b['status']}, {b['scope']}")
        lines.append(f"  {'':<{width}}  regime: {b['regime']}; delta0 > 0: {b['delta0']}")
    lines.append("composed methods over rounds (kind, status; regime):")
    for name, c in info["composed_methods"].items():
        lines.append(f"  {name:<{width}}  {c['kind']:<5}  {c['status']}; {c['regime']}")
    lines.append("audit levels:")
    for name, text in info["audit"]["levels"].items():
        lines.append(f"  {name:<12} {text}")
    lines.append("audit attacks:")
    for name, text in info["audit"]["attacks"].items():
        lines.append(f"  {name:<12} {text}")
    return "\n".join(lines)
