"""What the ``bound``, ``calibrate`` and ``audit`` commands share: the randomizer options, the
checks of the setting, method names, and errors that name the flag the user typed.

The mathematics validates its own parameters and names them by field (``epsilon0``,
``randomizer.domain_size``, ``method``); :func:`flag_errors` renames those fields to the
command's flags (``--epsilon0``, ``--domain-size``, ``--method``), so that the one line the user
reads points at what to change on the command line.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import click

from shufflesim.protocols.errors import (
    ParameterError,
    require_int_at_least,
    require_probability_open,
    shown,
)
from shufflesim.simulator.cli.lazy import lazy_module
from shufflesim.simulator.errors import UserError

randomizers = lazy_module("shufflesim.protocols.randomizers")
catalogue = lazy_module("shufflesim.protocols.bounds.catalogue")
accounting = lazy_module("shufflesim.protocols.accounting.compose")
usercode = lazy_module("shufflesim.simulator.usercode")

#: Randomizer parameters that have a flag of their own; the others are given with --param.
_RANDOMIZER_FLAGS = {"name": "--randomizer", "domain_size": "--domain-size",
                     "epsilon0": "--epsilon0", "delta0": "--delta0"}


def delta0_option(function):
    """--delta0: the delta0 of an (eps0, delta0)-LDP randomizer (its ``delta0`` parameter)."""
    return click.option(
        "--delta0", type=float, default=None,
        help="delta0 of an (eps0, delta0)-LDP randomizer such as gaussian (its delta0 "
             "parameter); bounds that need pure eps0-LDP refuse delta0 > 0.")(function)


def call_timeout_option(function):
    """--call-timeout: the per-call time limit of user code (simulator/usercode.py), set in
    this process before the command runs."""

    def apply(ctx, param, value):  # noqa: ARG001 (click callback signature)
        if value is not None:
            try:
                usercode.set_time_limit(value)
            except ParameterError as error:
                raise click.BadParameter(str(error.requirement), ctx, param) from None
        return value

    return click.option(
        "--call-timeout", type=float, default=None, metavar="SECONDS", expose_value=False,
        callback=apply, is_eager=True,
        help="Seconds one call to your code (implementation, shuffler, decoder) may take "
             "(default 60; 0: no limit).")(function)


def with_delta0(name: str, params: dict, delta0: float | None) -> dict:
    """``params`` with --delta0 as the randomizer's ``delta0`` parameter. A pure eps0-LDP
    randomizer (no such parameter) accepts only --delta0 0."""
    if delta0 is None:
        return params
    if "delta0" in params:
        raise UserError("give delta0 once: --delta0 or --param delta0=..., not both")
    if "delta0" not in randomizers.randomizer_parameters(name):
        if delta0 == 0:
            return params
        approximate = [r for r in randomizers.randomizer_names()
                       if "delta0" in randomizers.randomizer_parameters(r)]
        raise ParameterError("delta0", delta0,
                             f"{name} is a pure eps0-LDP randomizer (delta0 = 0); delta0 > 0 "
                             f"is a parameter of {approximate}")
    return {**params, "delta0": delta0}


def randomizer_options(function):
    """--randomizer, --domain-size and repeatable --param key=value."""
    function = click.option(
        "--param", "params", multiple=True, metavar="KEY=VALUE",
        help="Further randomizer parameter (repeatable), e.g. --param hash_range=4.")(function)
    function = click.option(
        "--domain-size", type=int, default=None,
        help="Domain size k of a categorical randomizer (required for those; no default is "
             "guessed).")(function)
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
    return randomizers.make_randomizer(name, epsilon0=epsilon0, **params)


def check_setting(n: int | None, delta: float | None) -> None:
    """n >= 2 users (when given) and delta in (0, 1) (when given)."""
    if n is not None:
        require_int_at_least("n", n, 2)
    if delta is not None:
        require_probability_open("delta", delta)


def resolve_methods(methods: tuple[str, ...], field: str = "method",
                    composed: bool = False) -> list[str] | None:
    """Validated bound names, without repeats (None: every applicable bound); ``composed``
    also accepts the composed methods over rounds (protocols.accounting)."""
    if not methods:
        return None
    names: list[str] = []
    extra = set(accounting.composed_method_names()) if composed else set()
    for name in methods:
        try:
            if name not in extra:
                catalogue.get_bound(name)
        except ParameterError as error:
            requirement = error.requirement
            if composed:
                requirement += f"; composed methods: {sorted(extra)}"
            raise ParameterError(field, name, requirement) from None
        if name not in names:
            names.append(name)
    return names


def render_table(rows: list[list[str]], header: tuple[str, ...]) -> str:
    """A plain-text table: left-aligned columns, two spaces apart, a rule under the header."""
    widths = [max(len(header[i]), *(len(row[i]) for row in rows)) if rows else len(header[i])
              for i in range(len(header))]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
              for row in rows]
    return "\n".join(lines)


def flag_for(field: str, command: click.Command, aliases: dict[str, str]) -> str | None:
    """The command-line flag that sets ``field`` (None when no flag does)."""
    if field in aliases:
        return aliases[field]
    key = field.removeprefix("randomizer.")
    if field.startswith("randomizer."):
        return _RANDOMIZER_FLAGS.get(key, f"--param {key}")
    for param in command.params:
        if isinstance(param, click.Option) and param.name in (field, field + "s"):
            return max(param.opts, key=len)
    if key in _RANDOMIZER_FLAGS:
        return _RANDOMIZER_FLAGS[key]
    return None


def flag_errors(aliases: dict[str, str] | None = None,
                when: tuple[str, dict[str, str]] | None = None) -> Callable:
    """Decorate a command's callback: a :class:`ParameterError` raised inside is re-raised as a
    :class:`UserError` naming the flag (``--epsilon0 = 0.0: must be ...``). ``when = (option,
    more aliases)``: the extra aliases apply when that option was given (e.g. a black-box
    claim's ``epsilon0`` is ``--claim-epsilon0``)."""
    base = aliases or {}

    def decorate(callback: Callable) -> Callable:
        @functools.wraps(callback)
        def wrapper(*args, **kwargs):
            try:
                return callback(*args, **kwargs)
            except ParameterError as error:
                command = click.get_current_context().command
                aliases = base
                if when is not None and kwargs.get(when[0]) is not None:
                    aliases = {**base, **when[1]}
                flag = flag_for(error.field, command, aliases)
                if flag is None:
                    raise
                if error.value is None and error.requirement.startswith("is required"):
                    raise UserError(f"{flag} {error.requirement}") from None
                raise UserError(f"{flag} = {shown(error.value)}: {error.requirement}") from None

        return wrapper

    return decorate
