"""``shufflesim audit``: attack-based lower bounds with confidence, and verdicts on every bound.

    shufflesim audit --randomizer krr --domain-size 2 --epsilon0 4 --n 1000 --delta 1e-6 \\
        --trials 1000000 [--level randomizer|shuffle|pipeline] [--confidence 0.95] [--json]

Prints the attack rows (event, counts, Clopper-Pearson limits, eps_lb beside the exact value of
the attacked pair) and one verdict per bound (simulator.audit.verdicts); ``--json`` prints the
rows of the ``audit`` table as JSON records instead.
"""

from __future__ import annotations

import json

import click

from shufflesim.simulator.audit.levels import Level
from shufflesim.simulator.cli.lazy import lazy_module
from shufflesim.simulator.cli.options import (
    build_randomizer,
    check_setting,
    flag_errors,
    parse_params,
    randomizer_options,
    render_table,
    resolve_methods,
)
from shufflesim.simulator.errors import UserError
from shufflesim.simulator.execution.progress import ProgressReport

np = lazy_module("numpy")
audit_run = lazy_module("shufflesim.simulator.audit.run")
audit_tables = lazy_module("shufflesim.simulator.audit.tables")

ATTACK_HEADER = ("level", "attack", "direction", "delta", "event", "trials", "p0", "p1",
                 "eps_lb", "conf", "exact", "ratio")
VERDICT_HEADER = ("bound", "kind", "status", "delta", "epsilon", "exact", "empirical", "verdict",
                  "tightness")
FIT_HEADER = ("input", "test", "samples", "statistic", "p_value")


def _num(value, digits: int = 6) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return str(value)


def render(records: list[dict]) -> str:
    """Human-readable tables of the audit rows."""
    parts = []
    attacks = [r for r in records if r["row_type"] == "attack"]
    if attacks:
        parts.append(render_table([[r["level"], r["attack"], r["direction"], _num(r["delta"], 3),
                                    r["event"], _num(r["trials"]), _num(r["p0"], 4),
                                    _num(r["p1"], 4), _num(r["epsilon_lb"], 5),
                                    _num(r["confidence"], 4), _num(r["exact_lower"], 5),
                                    _num(r["ratio"], 3)] for r in attacks], ATTACK_HEADER))
    fits = [r for r in records if r["row_type"] == "fit"]
    if fits:
        parts.append(render_table([[r["pair"], r["attack"], _num(r["trials"]),
                                    _num(r["statistic"], 5), _num(r["p_value"], 3)]
                                   for r in fits], FIT_HEADER))
    verdicts = [r for r in records if r["row_type"] == "verdict"]
    if verdicts:
        parts.append(render_table([[r["bound"], r["bound_kind"] or "-", r["bound_status"],
                                    _num(r["delta"], 3), _num(r["bound_epsilon"], 5),
                                    _num(r["exact_lower"], 5), _num(r["epsilon_lb"], 5),
                                    r["verdict"], _num(r["tightness"], 4)] for r in verdicts],
                                  VERDICT_HEADER))
        notes = [f"{r['bound']}: {r['reason']}" for r in verdicts
                 if r["verdict"] in ("violated", "not-evaluated")]
        parts.append("\n".join(notes))
    return "\n\n".join(p for p in parts if p)


@click.command("audit")
@randomizer_options
@click.option("--epsilon0", type=float, required=True, help="Local budget eps0.")
@click.option("--n", "n", type=int, default=None,
              help="Number of users (shuffle and pipeline levels).")
@click.option("--delta", "deltas", type=float, multiple=True,
              help="Central delta (repeatable; shuffle and pipeline levels).")
@click.option("--trials", type=int, required=True,
              help="Trials per world (per input at the randomizer level), selection included.")
@click.option("--level", type=click.Choice([m.value for m in Level]), default="shuffle",
              show_default=True, help="What to audit.")
@click.option("--confidence", type=float, default=0.95, show_default=True,
              help="Confidence of the largest empirical lower bound.")
@click.option("--holdout", "holdout_fraction", type=float, default=None,
              help="Share of trials used to choose the events (0: split the confidence over "
                   "every candidate event). Default 0.1 (0.2 at the randomizer level).")
@click.option("--shortlist", type=int, default=None,
              help="Events chosen per attack and direction (default 3; 1 at the randomizer "
                   "level).")
@click.option("--attack", "attacks", multiple=True,
              help="Attack (repeatable): lr, count, and order at the pipeline level.")
@click.option("--x0", type=float, default=None, help="User 1's input in X0.")
@click.option("--x1", type=float, default=None, help="User 1's input in X1.")
@click.option("--x2", type=float, default=None, help="Every other user's input.")
@click.option("--others", default=None, metavar="P0,P1,...",
              help="Instead of --x2: probabilities over the inputs from which every other user "
                   "draws its input (shuffle level).")
@click.option("--bound", "bounds", multiple=True,
              help="Bound to judge (repeatable); default every applicable bound.")
@click.option("--no-verdicts", is_flag=True, help="Only the attacks, no bound verdicts.")
@click.option("--no-permute", is_flag=True,
              help="Planted fault (pipeline level): the shuffler keeps arrival order.")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
              help="Root seed.")
@click.option("--json", "as_json", is_flag=True, help="Print the audit rows as JSON records.")
@click.option("--quiet", "-q", is_flag=True, help="No progress on stderr.")
@flag_errors(aliases={"method": "--bound", "attacks": "--attack", "delta": "--delta",
                      "others": "--others", "permute": "--no-permute"})
def command(randomizer_name, domain_size, params, epsilon0, n, deltas, trials, level,
            confidence, holdout_fraction, shortlist, attacks, x0, x1, x2, others, bounds,
            no_verdicts, no_permute, seed, as_json, quiet):
    """Empirical lower bounds on eps (attacks with Clopper-Pearson confidence) beside the exact
    lower bound and a verdict on every registered bound."""
    _check_level_options(level, n)
    check_setting(n, None)
    randomizer = build_randomizer(randomizer_name, epsilon0, parse_params(domain_size, params))
    names = () if no_verdicts else resolve_methods(bounds)
    settings = audit_run.AuditSettings(
        trials=trials, level=level, delta=tuple(deltas), confidence=confidence,
        holdout_fraction=holdout_fraction, shortlist=shortlist, attacks=attacks or None,
        x0=x0, x1=x1, x2=x2, others=_probabilities(others),
        bounds=None if names is None else tuple(names), permute=not no_permute)
    report = ProgressReport("auditing", enabled=not quiet, unit="steps")
    with report, report.heartbeat():
        records = audit_run.run_audit(settings, randomizer, n, np.random.SeedSequence(seed),
                            progress=report)
    if as_json:
        click.echo(json.dumps(audit_tables.to_json_records(records), indent=2))
        return
    click.echo(f"{randomizer!r}, n = {n}, level = {level}, trials = {trials}")
    click.echo(render(records))


def _check_level_options(level: str, n: int | None) -> None:
    """--n belongs to the shuffle and pipeline levels, where it is required; the randomizer
    level audits one user's randomizer and refuses it rather than ignore it."""
    if level == Level.RANDOMIZER.value:
        if n is not None:
            raise UserError(f"--n = {n}: the randomizer level audits one user's randomizer; "
                            "--n and --delta apply to the shuffle and pipeline levels")
    elif n is None:
        raise UserError(f"--n is required at the {level} level (the number of users shuffled "
                        "together)")


def _probabilities(text: str | None) -> tuple[float, ...] | None:
    if text is None:
        return None
    try:
        return tuple(float(v) for v in text.split(","))
    except ValueError:
        raise UserError(f"--others = {text!r}: expected comma-separated numbers") from None
