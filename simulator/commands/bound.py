"""``shufflesim bound``: every applicable amplification bound (or the named ones) for one
randomizer, eps0, n and delta, as a table or as JSON records."""

from __future__ import annotations

import json
import sys

import click

from protocols.bounds.catalogue import BoundEvaluation, applicable_bounds, evaluate, get_bound
from protocols.errors import require_int_at_least, require_probability_open
from protocols.randomizers import make_randomizer
from simulator.errors import UserError

COLUMNS = ("method", "kind", "epsilon", "delta", "status", "reference", "seconds")


# -- options shared with ``calibrate`` ---------------------------------------------------------
def randomizer_options(function):
    """--randomizer, --domain-size and repeatable --param key=value."""
    function = click.option(
        "--param", "params", multiple=True, metavar="KEY=VALUE",
        help="Further randomizer parameter (repeatable), e.g. --param hash_range=4.")(function)
    function = click.option("--domain-size", type=int, default=None,
                            help="Domain size k of a categorical randomizer.")(function)
    return click.option("--randomizer", "randomizer_name", required=True,
                        help="Registered randomizer name (see `shufflesim list`).")(function)


def parse_params(domain_size: int | None, params: tuple[str, ...]) -> dict:
    """Randomizer keyword arguments from --domain-size and --param key=value (numbers parsed)."""
    out: dict = {}
    if domain_size is not None:
        out["domain_size"] = domain_size
    for item in params:
        key, sep, text = item.partition("=")
        if not sep or not key.strip():
            raise UserError(f"--param = {item!r}: expected KEY=VALUE")
        out[key.strip()] = _parse_value(text.strip())
    return out


def _parse_value(text: str):
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            pass
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered in ("none", "null"):
        return None
    return text


def build_randomizer(name: str, epsilon0: float, params: dict):
    return make_randomizer(name, epsilon0=epsilon0, **params)


def check_setting(n: int | None, delta: float) -> None:
    if n is not None:
        require_int_at_least("n", n, 2)
    require_probability_open("delta", delta)


def resolve_methods(methods: tuple[str, ...]) -> list[str] | None:
    """Validated method names (None: all applicable)."""
    if not methods:
        return None
    names: list[str] = []
    for name in methods:
        get_bound(name)  # ParameterError naming the unknown method
        if name not in names:
            names.append(name)
    return names


# -- formatting --------------------------------------------------------------------------------
def _format_number(value) -> str:
    if value is None:
        return "-"
    return f"{value:.6g}"


def render_table(rows: list[list[str]], header: tuple[str, ...]) -> str:
    widths = [max(len(header[i]), *(len(row[i]) for row in rows)) if rows else len(header[i])
              for i in range(len(header))]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
              for row in rows]
    return "\n".join(lines)


def evaluation_rows(evaluations: list[BoundEvaluation]) -> tuple[list[list[str]], list[str]]:
    rows, notes = [], []
    for ev in evaluations:
        rec = ev.record()
        rows.append([rec["method"], rec["kind"], _format_number(rec["epsilon"]),
                     f"{rec['delta']:.3g}", ", ".join(rec["statuses"]), rec["reference"],
                     f"{rec['seconds']:.3f}"])
        if rec["error"]:
            notes.append(f"{rec['method']}: not computed: {rec['error']}")
    return rows, notes


def run_evaluations(randomizer, n: int, delta: float, names: list[str] | None,
                    show_progress: bool) -> list[BoundEvaluation]:
    if names is None:
        names = [spec.name for spec in applicable_bounds(randomizer)]
    results = []
    with click.progressbar(names, label="bounds", file=sys.stderr,
                           hidden=not (show_progress and sys.stderr.isatty())) as bar:
        for name in bar:
            results.append(evaluate(name, randomizer, n, delta))
    return results


@click.command("bound")
@randomizer_options
@click.option("--epsilon0", type=float, required=True, help="Local budget eps0.")
@click.option("--n", "n", type=int, required=True, help="Number of users shuffled together.")
@click.option("--delta", type=float, required=True, help="Central delta.")
@click.option("--method", "methods", multiple=True,
              help="Bound name (repeatable); default: every applicable bound.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list of records.")
def command(randomizer_name, domain_size, params, epsilon0, n, delta, methods, as_json):
    """Amplification bounds (upper and lower) for one shuffled randomizer."""
    check_setting(n, delta)
    randomizer = build_randomizer(randomizer_name, epsilon0, parse_params(domain_size, params))
    names = resolve_methods(methods)
    evaluations = run_evaluations(randomizer, n, delta, names, show_progress=not as_json)
    if as_json:
        click.echo(json.dumps([ev.record() for ev in evaluations], indent=2))
        return
    rows, notes = evaluation_rows(evaluations)
    click.echo(f"{randomizer!r}, n = {n}, delta = {delta:g}")
    click.echo(render_table(rows, COLUMNS))
    for note in notes:
        click.echo(note)

