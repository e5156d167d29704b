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

from shufflesim.protocols.bounds.result import BoundKind, BoundStatus
from shufflesim.simulator.calls import bounds as bound_call
from shufflesim.simulator.cli.lazy import lazy_module
from shufflesim.simulator.cli.options import (
    delta0_option,
    flag_errors,
    limit_options,
    parse_params,
    randomizer_options,
    render_table,
)
from shufflesim.simulator.errors import UserError
from shufflesim.simulator.execution.progress import ProgressReport

#: the cost estimates, loaded when a command runs (not for --help)
cost = lazy_module("shufflesim.simulator.calls.cost")

#: The default table (within 100 columns); --wide adds delta, the full statuses and references.
COLUMNS = ("method", "kind", "epsilon", "status", "seconds", "check")
WIDE_COLUMNS = ("method", "kind", "epsilon", "delta", "status", "reference", "seconds", "check")
#: Short status names of the default table, explained under it.
SHORT_STATUS = {BoundStatus.PROVEN.value: "proven", BoundStatus.APPROXIMATE.value: "approx",
                BoundStatus.STRONGER_CLONE.value: "clone-red"}
STATUS_LEGEND = ("status: approx = approximate (asymptotic constant dropped); clone-red = "
                 "relies-on-stronger-clone-reduction (000 Sec. 3.3)")
BELOW = "BELOW-LB"
NOT_COMPOSED = "does not compose over rounds:"


def parse_budgets(text: str | None) -> list[tuple[float, int]] | None:
    """--budgets EPS:COUNT,... -> [(eps, count), ...]."""
    if text is None:
        return None
    groups = []
    for item in text.split(","):
        eps, sep, count = item.partition(":")
        try:
            groups.append((float(eps), int(count)))
        except ValueError:
            raise UserError(f"--budgets = {text!r}: expected EPS:COUNT,... (e.g. "
                            "0.5:300,2:700)") from None
        if not sep:
            raise UserError(f"--budgets = {text!r}: expected EPS:COUNT,...")
    return groups


def _number(value) -> str:
    return "-" if value is None else f"{value:.6g}"


def table_rows(records: list[dict], wide: bool) -> list[list[str]]:
    rows = []
    for r in records:
        if r["error"].startswith(NOT_COMPOSED):
            continue  # listed once under the table, with the reason
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
    lines, grouped = [], {}
    for r in records:
        if r["error"].startswith(NOT_COMPOSED):
            grouped.setdefault(r["error"][len(NOT_COMPOSED):].strip(), []).append(r["method"])
        elif r["error"]:
            lines.append(f"{r['method']}: not computed: {r['error']}")
    for why, methods in grouped.items():
        lines.append(f"not composed over rounds: {', '.join(methods)}: {why}")
    below = [r for r in records if r["below_proven_lower"]]
    for r in below:
        lines.append(f"{r['method']}: {BELOW}: {r['epsilon']:.6g} is below the proven lower "
                     f"bound {r['best_proven_lower']:.6g}, so it is not a valid upper bound "
                     f"here ({', '.join(r['statuses'])})")
    if records and records[0]["best_proven_lower"] is None and any(
            r["kind"] == BoundKind.UPPER.value for r in records):
        tried = any(r["method"] == "exact-lower" for r in records)  # e.g. refused (delta0 > 0)
        lines.append("no proven lower bound was evaluated, so upper bounds were not checked "
                     "against one" + ("" if tried else " (add --method exact-lower)"))
    return lines


@click.command("bound")
@randomizer_options
@click.option("--epsilon0", type=float, default=None,
              help="Local budget eps0 (required unless --budgets).")
@delta0_option
@click.option("--n", "n", type=int, default=None,
              help="Number of users shuffled together (required unless --budgets).")
@click.option("--budgets", default=None, metavar="EPS:COUNT,...",
              help="Per-user budgets: groups of COUNT users with local budget EPS (the "
                   "personalized bounds; n is the total count), e.g. 0.5:300,2:700.")
@click.option("--delta", type=float, required=True, help="Central delta.")
@click.option("--method", "methods", multiple=True,
              help="Bound name (repeatable); default: every applicable bound.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list of records.")
@click.option("--wide", is_flag=True,
              help="Also show delta, the full statuses and the references.")
@click.option("--rounds", type=click.IntRange(min=1), default=1, show_default=True,
              help="Rounds T the same users are shuffled in: bounds that compose are reported "
                   "for all T rounds (privacy loss distributions, docs/composition.md), with "
                   "basic, advanced and Renyi composition beside them; the others say why not.")
@click.option("--quiet", "-q", is_flag=True, help="No progress on stderr.")
@limit_options
@flag_errors()
def command(randomizer_name, domain_size, params, epsilon0, delta0, n, budgets, delta, methods,
            as_json, wide, rounds, quiet):
    """Amplification bounds (upper and lower) for one shuffled randomizer.

    An upper bound below the best proven lower bound is marked BELOW-LB (JSON:
    below_proven_lower). For an (eps0, delta0)-LDP randomizer (--delta0), bounds that need a
    pure eps0-LDP randomizer say so instead of a number."""
    cost.check(cost.rounds_cost(rounds))
    report = ProgressReport("bounds", enabled=not quiet, unit="bounds")
    randomizer, records = bound_call.bounds(randomizer_name, epsilon0,
                                            parse_params(domain_size, params), n, delta,
                                            delta0=delta0, methods=methods, rounds=rounds,
                                            budgets=parse_budgets(budgets), progress=report)
    if as_json:
        click.echo(json.dumps(records, indent=2))
        return
    over = f", rounds = {rounds}" if rounds > 1 else ""
    setting = f"n = {n}" if budgets is None else f"per-user budgets {budgets}"
    subject = getattr(randomizer, "randomizer", randomizer)  # PersonalizedUsers: its family
    click.echo(f"{subject!r}, {setting}, delta = {delta:g}{over}")
    click.echo(render_table(table_rows(records, wide), WIDE_COLUMNS if wide else COLUMNS))
    if not wide:
        click.echo(STATUS_LEGEND)
    for line in notes(records):
        click.echo(line)
