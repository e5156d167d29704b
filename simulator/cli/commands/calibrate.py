"""``shufflesim calibrate``: the largest local budget eps0 (given n) or the smallest number of
users n (given eps0) with which each upper bound certifies a target central (eps, delta)."""

from __future__ import annotations

import json

import click

from shufflesim.simulator.calls import calibrate as calibrate_call
from shufflesim.simulator.cli.lazy import lazy_module
from shufflesim.simulator.cli.options import (
    flag_errors,
    limit_options,
    parse_params,
    randomizer_options,
    render_table,
)
from shufflesim.simulator.execution.progress import ProgressReport

#: the cost estimates, loaded when a command runs (not for --help)
cost = lazy_module("shufflesim.simulator.calls.cost")

COLUMNS = ("method", "parameter", "value", "epsilon", "status", "seconds")


@click.command("calibrate")
@randomizer_options
@click.option("--target-epsilon", type=float, required=True, help="Target central epsilon.")
@click.option("--delta", type=float, required=True, help="Central delta.")
@click.option("--n", "n", type=int, default=None,
              help="Number of users: find the largest eps0 (give --n or --epsilon0).")
@click.option("--epsilon0", type=float, default=None,
              help="Local budget: find the smallest n instead (give --n or --epsilon0).")
@click.option("--method", "methods", multiple=True,
              help="Upper bound name (repeatable); default: every applicable upper bound.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list of records.")
@click.option("--rounds", type=click.IntRange(min=1), default=1, show_default=True,
              help="Rounds T: find the largest per-round eps0 whose T-round composed bound "
                   "meets the lifetime target (needs --n).")
@click.option("--quiet", "-q", is_flag=True, help="No progress on stderr.")
@limit_options
@flag_errors()
def command(randomizer_name, domain_size, params, target_epsilon, delta, n, epsilon0, methods,
            as_json, rounds, quiet):
    """Calibrate eps0 (or n) per bound for a target central (eps, delta), for one round or a
    lifetime of --rounds T."""
    cost.check(cost.calibrate_cost(rounds))
    report = ProgressReport("calibrating", enabled=not quiet, unit="bounds")
    records = calibrate_call.calibrate(randomizer_name, parse_params(domain_size, params),
                                       target_epsilon, delta, n=n, epsilon0=epsilon0,
                                       methods=methods, rounds=rounds, progress=report)
    if as_json:
        click.echo(json.dumps(records, indent=2))
        return
    setting = f"n = {n}" if epsilon0 is None else f"eps0 = {epsilon0:g}"
    over = f", over {rounds} rounds" if rounds > 1 else ""
    click.echo(f"{randomizer_name}, {setting}, target eps = {target_epsilon:g}, "
               f"delta = {delta:g}{over}")
    rows = [[r["method"], r["parameter"], "-" if r["value"] is None else f"{r['value']:.6g}",
             "-" if r["epsilon"] is None else f"{r['epsilon']:.6g}", r["status"],
             f"{r['seconds']:.3f}"] for r in records]
    click.echo(render_table(rows, COLUMNS))
    for r in records:
        if r["error"]:
            click.echo(f"{r['method']}: {r['error']}")
