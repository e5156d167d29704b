"""``shufflesim bound``: every applicable amplification bound (or the named ones) for one
randomizer, eps0, n and delta, as a table or as JSON records.

An upper bound below the best *proven* lower bound evaluated at the same point cannot be a
valid upper bound there (a non-proven bound outside the randomizers it holds for, or a defect):
the table marks it ``BELOW-LB`` and the JSON record carries ``below_proven_lower: true`` with
the lower bound it falls below.
"""

from __future__ import annotations

import json

import click

from protocols.bounds.result import BoundKind, BoundStatus
from simulator.cli.options import (
    build_randomizer,
    catalogue,
    check_setting,
    flag_errors,
    parse_params,
    randomizer_options,
    render_table,
    resolve_methods,
)
from simulator.execution.progress import ProgressReport

#: The default table (within 100 columns); --wide adds delta, the full statuses and references.
COLUMNS = ("method", "kind", "epsilon", "status", "seconds", "check")
WIDE_COLUMNS = ("method", "kind", "epsilon", "delta", "status", "reference", "seconds", "check")
#: Short status names of the default table, explained under it.
SHORT_STATUS = {BoundStatus.PROVEN.value: "proven", BoundStatus.APPROXIMATE.value: "approx",
                BoundStatus.STRONGER_CLONE.value: "clone-red"}
STATUS_LEGEND = ("status: approx = approximate (asymptotic constant dropped); clone-red = "
                 "relies-on-stronger-clone-reduction (000 Sec. 3.3)")
BELOW = "BELOW-LB"


def records_with_checks(evaluations: list) -> list[dict]:
    """Each evaluation's record, with ``best_proven_lower`` (the largest lower bound of status
    ``proven`` computed at this point, or None) and ``below_proven_lower`` (an upper bound
    strictly below it)."""
    records = [ev.record() for ev in evaluations]
    lowers = [r["epsilon"] for r in records
              if r["kind"] == BoundKind.LOWER.value and r["epsilon"] is not None
              and r["statuses"] == [BoundStatus.PROVEN.value]]
    best = max(lowers) if lowers else None
    for r in records:
        r["best_proven_lower"] = best
        r["below_proven_lower"] = bool(
            best is not None and r["kind"] == BoundKind.UPPER.value
            and r["epsilon"] is not None and r["epsilon"] < best)
    return records


def _number(value) -> str:
    return "-" if value is None else f"{value:.6g}"


def table_rows(records: list[dict], wide: bool) -> list[list[str]]:
    rows = []
    for r in records:
        check = BELOW if r["below_proven_lower"] else ""
        if wide:
            rows.append([r["method"], r["kind"], _number(r["epsilon"]), f"{r['delta']:.3g}",
                         ", ".join(r["statuses"]), r["reference"], f"{r['seconds']:.3f}",
                         check])
        else:
            status = "+".join(SHORT_STATUS.get(s, s) for s in r["statuses"])
            rows.append([r["method"], r["kind"], _number(r["epsilon"]), status,
                         f"{r['seconds']:.3f}", check])
    return rows


def notes(records: list[dict]) -> list[str]:
    lines = [f"{r['method']}: not computed: {r['error']}" for r in records if r["error"]]
    below = [r for r in records if r["below_proven_lower"]]
    for r in below:
        lines.append(f"{r['method']}: {BELOW}: {r['epsilon']:.6g} is below the proven lower "
                     f"bound {r['best_proven_lower']:.6g}, so it is not a valid upper bound "
                     f"here ({', '.join(r['statuses'])})")
    if records and records[0]["best_proven_lower"] is None and any(
            r["kind"] == BoundKind.UPPER.value for r in records):
        lines.append("no proven lower bound was evaluated, so upper bounds were not checked "
                     "against one (add --method exact-lower)")
    return lines


def run_evaluations(randomizer, n: int, delta: float, names: list[str] | None,
                    quiet: bool) -> list:
    """The catalogue's evaluation of each bound (every applicable one when ``names`` is None),
    with progress on stderr."""
    if names is None:
        names = [spec.name for spec in catalogue.applicable_bounds(randomizer)]
    results = []
    report = ProgressReport("bounds", enabled=not quiet, unit="bounds")
    with report, report.heartbeat():
        for i, name in enumerate(names):
            report.doing(name)
            report(i, len(names))
            results.append(catalogue.evaluate(name, randomizer, n, delta))
        report.doing(None)
        report(len(names), len(names))
    return results


@click.command("bound")
@randomizer_options
@click.option("--epsilon0", type=float, required=True, help="Local budget eps0.")
@click.option("--n", "n", type=int, required=True, help="Number of users shuffled together.")
@click.option("--delta", type=float, required=True, help="Central delta.")
@click.option("--method", "methods", multiple=True,
              help="Bound name (repeatable); default: every applicable bound.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list of records.")
@click.option("--wide", is_flag=True,
              help="Also show delta, the full statuses and the references.")
@click.option("--quiet", "-q", is_flag=True, help="No progress on stderr.")
@flag_errors()
def command(randomizer_name, domain_size, params, epsilon0, n, delta, methods, as_json, wide,
            quiet):
    """Amplification bounds (upper and lower) for one shuffled randomizer.

    An upper bound below the best proven lower bound is marked BELOW-LB (JSON:
    below_proven_lower)."""
    check_setting(n, delta)
    randomizer = build_randomizer(randomizer_name, epsilon0, parse_params(domain_size, params))
    names = resolve_methods(methods)
    evaluations = run_evaluations(randomizer, n, delta, names, quiet=quiet)
    records = records_with_checks(evaluations)
    if as_json:
        click.echo(json.dumps(records, indent=2))
        return
    click.echo(f"{randomizer!r}, n = {n}, delta = {delta:g}")
    click.echo(render_table(table_rows(records, wide), WIDE_COLUMNS if wide else COLUMNS))
    if not wide:
        click.echo(STATUS_LEGEND)
    for line in notes(records):
        click.echo(line)
