"""``shufflesim compose``: privacy of composed shuffled mechanisms (simulator.calls.compose).

    shufflesim compose --delta 1e-6 \\
        --round randomizer=krr,epsilon0=1,domain_size=4,n=1000,repeat=300 \\
        --round randomizer=krr,epsilon0=0.5,domain_size=4,n=5000,repeat=65
    shufflesim compose --mode parallel --n 1000 --delta 1e-6 \\
        --component randomizer=krr,epsilon0=1,domain_size=10,probability=0.5 \\
        --component randomizer=blh,epsilon0=1,domain_size=10,probability=0.5
    shufflesim compose --mode subsampled --rate 0.1 --n 1000 --delta 1e-6 \\
        --component randomizer=krr,epsilon0=2,domain_size=4

Heterogeneous rounds (``--round``, mode ``rounds``) compose sequentially; the one-round modes
(``joint``, ``parallel``, ``subsampled``) compose randomizers within one shuffled round
(``--component``). ``--json`` prints the records that ``shufflesim.compose`` returns as a
DataFrame and a ``[compose]`` scenario section writes to its ``compose`` table.
"""

from __future__ import annotations

import json

import click

from shufflesim.simulator.calls import compose as compose_call
from shufflesim.simulator.cli.lazy import lazy_module
from shufflesim.simulator.cli.options import (
    flag_errors,
    limit_options,
    parse_value,
    render_table,
)
from shufflesim.simulator.errors import UserError
from shufflesim.simulator.execution.progress import ProgressReport

#: the cost estimates, loaded when a command runs (not for --help)
cost = lazy_module("shufflesim.simulator.calls.cost")

COLUMNS = ("method", "kind", "epsilon", "rounds", "status", "seconds", "check")


def parse_part(text: str, flag: str) -> dict:
    """``KEY=VALUE,KEY=VALUE`` -> a part (numbers parsed as by --param)."""
    part: dict = {}
    for item in text.split(","):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UserError(f"{flag} = {text!r}: expected KEY=VALUE,KEY=VALUE,... (randomizer, "
                            "epsilon0, its parameters, n, repeat, probability)")
        part[key.strip()] = parse_value(value.strip())
    return part


def _number(value) -> str:
    return "-" if value is None else f"{value:.6g}"


@click.command("compose")
@click.option("--round", "rounds", multiple=True, metavar="KEY=VALUE,...",
              help="One group of identical rounds (repeatable, mode rounds): randomizer, "
                   "epsilon0, its parameters, n, repeat.")
@click.option("--component", "components", multiple=True, metavar="KEY=VALUE,...",
              help="One randomizer of a one-round composition (repeatable; modes joint, "
                   "parallel, subsampled): randomizer, epsilon0, its parameters, probability.")
@click.option("--mode", type=click.Choice(compose_call.MODES), default="rounds",
              show_default=True, help="Sequential rounds, or joint / parallel / Poisson-"
                                      "subsampled composition within one round (000 Sec. 4).")
@click.option("--delta", type=float, required=True, help="Central delta.")
@click.option("--n", "n", type=int, default=None,
              help="Users shuffled together (one-round modes).")
@click.option("--rate", type=float, default=None,
              help="Participation probability (mode subsampled).")
@click.option("--method", "methods", multiple=True,
              help="Method (repeatable); default every method of the mode.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list of records.")
@click.option("--quiet", "-q", is_flag=True, help="No progress on stderr.")
@limit_options
@flag_errors(aliases={"mode": "--mode", "rounds": "--round", "components": "--component"})
def command(rounds, components, mode, delta, n, rate, methods, as_json, quiet):
    """(eps, delta) of heterogeneous rounds, or of randomizers composed within one round."""
    if mode == "rounds" and components:
        raise UserError("--component belongs to the one-round modes (--mode joint, parallel, "
                        "subsampled); give rounds with --round")
    if mode != "rounds" and rounds:
        raise UserError(f"--round belongs to --mode rounds; mode {mode} takes --component")
    flag = "--round" if mode == "rounds" else "--component"
    parts = [parse_part(text, flag) for text in (rounds or components)]
    if mode == "rounds":
        cost.check(cost.compose_cost(parts))
    report = ProgressReport("composing", enabled=not quiet, unit="methods")
    records = compose_call.compose(parts, delta, mode=mode, methods=methods, n=n, rate=rate,
                                   progress=report)
    if as_json:
        click.echo(json.dumps(records, indent=2))
        return
    click.echo(f"mode {mode}, {len(parts)} part(s), delta = {delta:g}"
               + (f", n = {n}" if n is not None else "") + (f", rate = {rate:g}" if rate else ""))
    rows = [[r["method"], r["kind"] or "-", _number(r["epsilon"]), str(r["rounds"]),
             r["status"], f"{r['seconds']:.3f}", "BELOW-LB" if r["below_proven_lower"] else ""]
            for r in records]
    click.echo(render_table(rows, COLUMNS))
    for r in records:
        if r["error"]:
            click.echo(f"{r['method']}: not computed: {r['error']}")
