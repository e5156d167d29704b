"""``shufflesim rdp``: Renyi DP curves eps(alpha) of the shuffled mechanism (002 Sec. 6.1;
simulator.calls.rdp), for T identical rounds of one randomizer or for heterogeneous rounds.

    shufflesim rdp --randomizer krr --domain-size 2 --epsilon0 1 --n 1000 --rounds 10 \\
        --delta 1e-6 [--order 2 --order 8 ...] [--method rdp-blanket] [--json]
    shufflesim rdp --round randomizer=krr,epsilon0=1,domain_size=2,n=1000,repeat=300 \\
        --round randomizer=krr,epsilon0=0.5,domain_size=2,n=2000,repeat=65
"""

from __future__ import annotations

import json

import click

from shufflesim.simulator.calls import rdp as rdp_call
from shufflesim.simulator.cli.commands.compose import parse_part
from shufflesim.simulator.cli.options import flag_errors, parse_params, render_table
from shufflesim.simulator.errors import UserError
from shufflesim.simulator.execution.progress import ProgressReport

COLUMNS = ("method", "order", "rdp_epsilon", "epsilon", "rounds")


def _number(value) -> str:
    return "-" if value is None else f"{value:.6g}"


@click.command("rdp")
@click.option("--randomizer", "randomizer_name", default=None,
              help="Registered randomizer name (or give --round).")
@click.option("--domain-size", type=int, default=None, help="Domain size k (categorical).")
@click.option("--param", "params", multiple=True, metavar="KEY=VALUE",
              help="Further randomizer parameter (repeatable).")
@click.option("--epsilon0", type=float, default=None, help="Local budget eps0.")
@click.option("--n", "n", type=int, default=None, help="Users shuffled together.")
@click.option("--rounds", type=click.IntRange(min=1), default=1, show_default=True,
              help="Identical rounds T (their curves add up).")
@click.option("--round", "round_specs", multiple=True, metavar="KEY=VALUE,...",
              help="Instead of the options above: one group of rounds (repeatable): "
                   "randomizer, epsilon0, its parameters, n, repeat.")
@click.option("--order", "orders", type=float, multiple=True,
              help="Renyi order alpha > 1 (repeatable); default 1.5, 2, 3, 4, 6, 8, 16, 32, 64.")
@click.option("--method", "methods", multiple=True,
              help="rdp-blanket (k-RR, binary RR) or rdp-clone (any eps0-LDP randomizer); "
                   "default both.")
@click.option("--delta", type=float, default=None,
              help="Also give the (eps, delta) each order certifies (CKS20 Prop. 12).")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list of records.")
@click.option("--quiet", "-q", is_flag=True, help="No progress on stderr.")
@flag_errors(aliases={"rounds": "--round", "orders": "--order"})
def command(randomizer_name, domain_size, params, epsilon0, n, rounds, round_specs, orders,
            methods, delta, as_json, quiet):
    """Renyi DP eps(alpha) of shuffled rounds (002 Sec. 6.1), composed over rounds."""
    if round_specs:
        if randomizer_name is not None or epsilon0 is not None or n is not None:
            raise UserError("--round describes every round: give it without --randomizer, "
                            "--epsilon0 and --n")
        parts = [parse_part(text, "--round") for text in round_specs]
    else:
        if randomizer_name is None:
            raise UserError("--randomizer is required (or --round)")
        parts = [{"randomizer": randomizer_name, "epsilon0": epsilon0, "n": n,
                  "repeat": rounds, **parse_params(domain_size, params)}]
    report = ProgressReport("rdp", enabled=not quiet, unit="methods")
    try:
        records = rdp_call.curve(parts, orders=orders or None, methods=methods, delta=delta,
                                 progress=report)
    except rdp_call.ParameterError as error:
        if round_specs or not error.field.startswith("rounds[0]."):
            raise
        # one randomizer from the options: name its flag, not the round's key
        field = error.field.removeprefix("rounds[0].")
        field = {"repeat": "rounds"}.get(field, field)
        raise rdp_call.ParameterError(field if field in ("epsilon0", "n", "rounds", "randomizer")
                                      else f"randomizer.{field}", error.value,
                                      error.requirement) from None
    if as_json:
        click.echo(json.dumps(records, indent=2))
        return
    rows = [[r["method"], f"{r['order']:g}", _number(r["rdp_epsilon"]), _number(r["epsilon"]),
             str(r["rounds"])] for r in records if not r["error"]]
    click.echo(render_table(rows, COLUMNS))
    for method in dict.fromkeys(r["method"] for r in records if r["error"]):
        error = next(r["error"] for r in records if r["method"] == method)
        click.echo(f"{method}: not computed: {error}")
