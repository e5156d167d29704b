"""``shufflesim design``: from a lifetime (eps, delta) over T rounds and a utility goal to a
ranked table of randomizers, their certified eps0 and predicted error (simulator.design)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from shufflesim.simulator.cli.lazy import lazy_module
from shufflesim.simulator.cli.options import flag_errors, limit_options, render_table
from shufflesim.simulator.errors import UserError

#: the cost estimates, loaded when a command runs (not for --help)
cost = lazy_module("shufflesim.simulator.calls.cost")

runner = lazy_module("shufflesim.simulator.design.runner")
runner_groups = lazy_module("shufflesim.simulator.design.groups")
output = lazy_module("shufflesim.simulator.design.output")

#: Multipliers of the target for the figure's curves.
CURVE_FACTORS = (0.25, 0.5, 1.0, 2.0, 4.0)
FLAGS = {"task": "--task", "n": "--n", "target_epsilon": "--target-epsilon",
         "delta": "--delta", "rounds": "--rounds", "domain_size": "--domain-size",
         "interval": "--interval", "metric": "--metric", "max_bits": "--max-bits",
         "max_messages": "--max-messages", "min_epsilon0": "--min-epsilon0",
         "max_epsilon0": "--max-epsilon0", "bound": "--bound", "validate": "--validate",
         "only": "--randomizer", "groups": "--groups"}


def _numbers(flag: str, text: str | None, kind=float) -> list | None:
    if text is None:
        return None
    try:
        return [kind(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise UserError(f"{flag} = {text!r}: must be a comma-separated list of numbers") from None


def _check_paths(write_scenario: str | None, out: str | None) -> None:
    if write_scenario is not None:
        parent = Path(write_scenario).resolve().parent
        if not parent.is_dir():
            raise UserError(f"--write-scenario = {write_scenario!r}: folder {parent} does not "
                            "exist")
        if Path(write_scenario).is_dir():
            raise UserError(f"--write-scenario = {write_scenario!r}: is a folder")
    if out is not None and Path(out).exists() and not Path(out).is_dir():
        raise UserError(f"--out = {out!r}: exists and is not a folder")


@click.command("design")
@click.option("--task", required=True, help="frequency, mean or sum.")
@click.option("--domain-size", type=int, default=None, help="d: values of the frequency task.")
@click.option("--interval", default=None, help="LOW,HIGH: the inputs' range (mean, sum).")
@click.option("--n", "n_text", required=True, help="Users per round (a number or a list a,b).")
@click.option("--rounds", type=int, default=1, show_default=True, help="Rounds T.")
@click.option("--target-epsilon", type=float, default=None,
              help="Lifetime central epsilon (or --groups).")
@click.option("--delta", type=float, required=True, help="Lifetime central delta.")
@click.option("--metric", default="l2", show_default=True, help="Rank by mse, l2 or linf.")
@click.option("--max-bits", type=int, default=None, help="Bits per user per round at most.")
@click.option("--max-messages", type=int, default=None, help="Messages per user at most.")
@click.option("--min-epsilon0", type=float, default=None, help="Smallest per-round eps0.")
@click.option("--max-epsilon0", type=float, default=None, help="Largest per-round eps0.")
@click.option("--bound", default=None, help="Certify with this proven bound only.")
@click.option("--randomizer", "only", multiple=True, help="Only this randomizer (repeatable).")
@click.option("--zipf", type=float, default=None,
              help="Assume Zipf(S) frequencies (default: uniform) for the prediction.")
@click.option("--binary", is_flag=True, help="Mean/sum inputs take only LOW or HIGH.")
@click.option("--thorough", is_flag=True,
              help="T = 1: try the specific optimal-blanket bound for every candidate (slow).")
@click.option("--unproven", is_flag=True,
              help="T = 1: add the eps0 of a non-proven bound in a separate, labelled column.")
@click.option("--groups", default=None,
              help="Budget groups, each shuffled on its own: a preset (gspa-three-groups, "
                   "gspa-mixed), a CSV file (fraction,epsilon) or f:eps,f:eps.")
@click.option("--validate", type=int, default=0, help="Simulate R repetitions of the best 3.")
@click.option("--seed", type=int, default=30, show_default=True, help="Seed of --validate.")
@click.option("--write-scenario", default=None, help="Write the best design as a scenario.")
@click.option("--out", default=None, help="Write design.parquet and design.png here.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON records.")
@limit_options
@flag_errors(FLAGS)
def command(task, domain_size, interval, n_text, rounds, target_epsilon, delta, metric,
            max_bits, max_messages, min_epsilon0, max_epsilon0, bound, only, zipf, binary,
            thorough, unproven, groups, validate, seed, write_scenario, out, as_json):
    """Rank every applicable randomizer for a lifetime (eps, delta) target over T rounds."""
    ns = _numbers("--n", n_text, int)
    bounds = _numbers("--interval", interval)
    if bounds is not None and len(bounds) != 2:
        raise UserError(f"--interval = {interval!r}: must be LOW,HIGH")
    if (target_epsilon is None) == (groups is None):
        raise UserError("--target-epsilon / --groups: give exactly one (the lifetime target, or "
                        "budget groups with their own targets)")
    if groups is not None and (validate or write_scenario):
        raise UserError("--groups: --validate and --write-scenario take one shuffled "
                        "population; with groups each group is shuffled on its own")
    _check_paths(write_scenario, out)
    if rounds is not None and rounds > 1:
        cost.check(cost.design_cost(rounds, max(1, len(only))))
    data = None if zipf is None else {"distribution": "zipf", "exponent": zipf}
    kwargs = dict(task=task, n=ns if len(ns) > 1 else ns[0], target_epsilon=target_epsilon,
                  delta=delta, rounds=rounds, domain_size=domain_size,
                  interval=None if bounds is None else tuple(bounds), metric=metric,
                  max_bits=max_bits, max_messages=max_messages, min_epsilon0=min_epsilon0,
                  max_epsilon0=max_epsilon0, bound=bound, data=data, binary=binary,
                  only=list(only) or None, thorough=thorough, unproven=unproven)
    if groups is not None:
        if ":" in groups and not Path(groups).exists():
            try:
                groups = [tuple(float(v) for v in part.split(":")) for part in groups.split(",")]
            except ValueError:
                raise UserError(f"--groups = {groups!r}: must be f:eps,f:eps, a preset or a "
                                "file") from None
        kwargs.pop("target_epsilon")
        frame = runner_groups.design_groups(groups=groups, **kwargs)
        target_epsilon = float(frame.target_epsilon.max())
    else:
        frame = runner.design(**kwargs, validate=validate, seed=seed)
    best = frame.iloc[0].to_dict()
    scenario = None
    if write_scenario is not None:
        scenario, _ = runner.row_scenario(best, task, domain_size=domain_size,
                                          interval=kwargs["interval"], data=data, seed=seed)
    curves = (runner.curves(kwargs, CURVE_FACTORS)
              if out is not None and groups is None else None)
    if out is not None:
        output.write_parquet(out, frame, {k: v for k, v in kwargs.items()})
        try:
            if curves is not None:
                output.figure(curves, best, target_epsilon, metric, Path(out) / "design.png")
        except ImportError:
            click.echo("note: no figure (matplotlib missing: pip install 'shufflesim[plot]')",
                       err=True)
    if scenario is not None:
        output.write_text(write_scenario, scenario)
    if as_json:
        click.echo(json.dumps(output.records(frame), indent=2))
        return
    goal = (f"lifetime target eps = {target_epsilon:g}" if groups is None
            else "budget groups (each shuffled on its own)")
    click.echo(f"{task}, n = {n_text}, T = {rounds}, {goal}, delta = {delta:g}; ranked by "
               f"predicted {metric}")
    header, rows = output.table_rows(frame, metric)
    click.echo(render_table(rows, header))
    chosen = frame[frame["rank"] == 1]
    settings = ", ".join(f"{v:.4g}" for v in chosen.epsilon0)
    click.echo(f"choice: {best['randomizer']} {best['parameters']} at eps0 = {settings}"
               + (" (per group)" if groups is not None else "")
               + f", certified by {', '.join(dict.fromkeys(chosen.bound))}")
