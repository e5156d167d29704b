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

from shufflesim.protocols.errors import ParameterError, shown
from shufflesim.simulator.calls.setting import (  # noqa: F401  (the commands import them here)
    build_randomizer,
    catalogue,
    check_setting,
    resolve_methods,
    with_delta0,
)
from shufflesim.simulator.errors import UserError
from shufflesim.simulator.lazy import lazy_module

usercode = lazy_module("shufflesim.simulator.usercode")
cost = lazy_module("shufflesim.simulator.calls.cost")

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
        try:  # every invocation sets it (tests run many commands in one process)
            usercode.set_time_limit(usercode.DEFAULT_TIME_LIMIT if value is None else value,
                                    explicit=value is not None)
        except ParameterError as error:
            raise click.BadParameter(str(error.requirement), ctx, param) from None
        return value

    return click.option(
        "--call-timeout", type=float, default=None, metavar="SECONDS", expose_value=False,
        callback=apply, is_eager=True,
        help="Seconds one call to your code (implementation, shuffler, decoder) may take "
             "(default 60; 0: no limit).")(function)


def limit_options(function):
    """--max-seconds and --max-memory: the limits of the cost estimate made before the work
    (simulator/calls/cost.py), set in this process before the command runs."""

    def seconds(ctx, param, value):  # noqa: ARG001 (click callback signature)
        if value is not None and not 0 <= value < float("inf"):
            raise click.BadParameter("must be a number of seconds >= 0 (0: no limit)", ctx,
                                     param)
        cost.configure(max_seconds=cost.DEFAULT_MAX_SECONDS if value is None else value,
                       explicit=value is not None)
        return value

    def memory(ctx, param, value):  # noqa: ARG001 (click callback signature)
        try:
            size = None if value is None else cost.parse_size(value)
            cost.configure(max_bytes=float("inf") if size == 0 else size,
                           explicit=value is not None)
        except UserError:
            raise click.BadParameter(f"{value!r}: expected a size such as 4G, 512M or 800 "
                                     "(MiB); 0: no limit", ctx, param) from None
        return value

    function = click.option(
        "--max-memory", default=None, metavar="SIZE", expose_value=False, callback=memory,
        help="Refuse work estimated to need more memory per worker (e.g. 4G, 512M; default: "
             "this machine's memory shared between the workers; 0: no limit).")(function)
    return click.option(
        "--max-seconds", type=float, default=None, metavar="SECONDS", expose_value=False,
        callback=seconds,
        help="Refuse work estimated to take longer (default: one day; 0: no limit).")(function)


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
    given: dict[str, str] = {}  # key -> how it was given (a conflict names both)
    if domain_size is not None:
        out["domain_size"] = domain_size
        given["domain_size"] = f"--domain-size {domain_size}"
    for item in params:
        key, sep, text = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise UserError(f"--param = {item!r}: expected KEY=VALUE")
        if key in ("epsilon0", "name"):
            flag = _RANDOMIZER_FLAGS[key]
            raise UserError(f"--param = {item!r}: {key} is set with {flag}, not --param")
        value = parse_value(text.strip())
        if key in given and out[key] != value:
            raise UserError(f"--param = {item!r}: {key} is already given as "
                            f"{given[key]}; give it once")
        out[key] = value
        given[key] = f"--param {item}"
    return out


def parse_value(text: str):
    """A --param value: int, float, true/false, none/null, else the text."""
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
