"""The ``shufflesim`` command line (click).

Sub-commands live in :mod:`simulator.commands`, one module per command, each exposing a click
command named ``command``; they are discovered automatically. Every user error is printed as one
line on stderr with exit code 2 and no traceback.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys

import click

from protocols.errors import ParameterError
from simulator import __version__, commands
from simulator.errors import UserError

EXIT_USAGE = 2


class _Group(click.Group):
    """A click group that turns known user errors into a one-line message and exit code 2."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except (UserError, ParameterError, FileNotFoundError) as error:
            message = str(error) if not isinstance(error, FileNotFoundError) else (
                f"file not found: {error.filename or error}"
            )
            click.echo(f"error: {message}", err=True)
            sys.exit(EXIT_USAGE)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="shufflesim")
def main() -> None:
    """Simulate, bound and audit the shuffle model of differential privacy."""


for _module in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
    _loaded = importlib.import_module(f"{commands.__name__}.{_module.name}")
    if hasattr(_loaded, "command"):
        main.add_command(_loaded.command)
