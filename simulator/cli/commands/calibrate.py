"""``shufflesim calibrate``: the largest local budget eps0 (given n) or the smallest number of
users n (given eps0) with which each upper bound certifies a target central (eps, delta)."""

from __future__ import annotations

import json

import click

from shufflesim.protocols.bounds.result import BoundKind
from shufflesim.protocols.errors import ParameterError, require
from shufflesim.simulator.cli.lazy import lazy_module
from shufflesim.simulator.cli.options import (
    build_randomizer,
    catalogue,
    check_setting,
    flag_errors,
    parse_params,
    randomizer_options,
    render_table,
    resolve_methods,
)
from shufflesim.simulator.cli.rounds import calibrate_rounds, composed_kind, upper_composed_methods
from shufflesim.simulator.errors import UserError
from shufflesim.simulator.execution.progress import ProgressReport

calibration = lazy_module("shufflesim.protocols.bounds.calibration")

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
@flag_errors()
def command(randomizer_name, domain_size, params, target_epsilon, delta, n, epsilon0, methods,
            as_json, rounds, quiet):
    """Calibrate eps0 (or n) per bound for a target central (eps, delta), for one round or a
    lifetime of --rounds T."""
    if (n is None) == (epsilon0 is None):
        raise UserError("--n / --epsilon0: give exactly one (--n finds eps0, --epsilon0 finds n)")
    if rounds > 1 and n is None:
        raise UserError(f"--rounds = {rounds}: calibration over rounds finds the per-round eps0 "
                        "for a given --n; give --n instead of --epsilon0")
    check_setting(n, delta)
    require(0 < target_epsilon < float("inf"), "target_epsilon", target_epsilon,
            "must be a finite number > 0")
    kwargs = parse_params(domain_size, params)
    probe = build_randomizer(randomizer_name, 1.0 if epsilon0 is None else epsilon0, kwargs)
    names = resolve_methods(methods, composed=rounds > 1)
    if names is None:
        names = upper_composed_methods() if rounds > 1 else [
            s.name for s in catalogue.applicable_bounds(probe) if s.kind is BoundKind.UPPER]
    for name in names:
        kind = (composed_kind(name) if rounds > 1 else catalogue.get_bound(name).kind)
        require(kind is BoundKind.UPPER, "method", name,
                "calibration needs an upper bound (this one is a lower bound)")

    records = []
    report = ProgressReport("calibrating", enabled=not quiet, unit="bounds")
    with report, report.heartbeat():
        for name in report.steps(names):
            try:
                if rounds > 1:
                    records.append(calibrate_rounds(
                        name, lambda e: build_randomizer(randomizer_name, e, kwargs), n,
                        target_epsilon, delta, rounds))
                    continue
                if epsilon0 is None:
                    result = calibration.largest_epsilon0(
                        name, lambda e: build_randomizer(randomizer_name, e, kwargs), n,
                        target_epsilon, delta)
                else:
                    result = calibration.smallest_n(name, probe, target_epsilon, delta)
            except ParameterError as error:
                if error.field != "target_epsilon":
                    raise
                status = ("" if rounds > 1 else catalogue.get_bound(name).status_label)
                records.append({"method": name, "parameter": "n" if n is None else "epsilon0",
                                "value": None, "epsilon": None, "status": status,
                                "seconds": 0.0, "rounds": rounds, "error": str(error)})
                continue
            record = result.record()
            record["error"] = ""
            record["rounds"] = 1
            records.append(record)
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
