"""The ``shufflesim`` command line (click).

Sub-commands live in :mod:`simulator.cli.commands`, one module per command, named as the command
and exposing a click command named ``command``; they are discovered automatically, and a
command's module is imported only when that command runs or ``--help`` lists the commands
(issue 32: ``bound`` no longer imports the process pool of ``run`` nor the audit levels of
``audit``).

Every failure the user can act on ends as exactly one line on stderr, ``error: ...``, and no
traceback: user errors (a bad value, a missing file) and click's own usage errors (an unknown
option, a value of the wrong type) exit with code 2; running out of memory exits with 2 and
names the remedy; an interruption (Ctrl-C, SIGTERM) exits with 130 and says so. Warnings are
held back while a command runs, and so is what user code prints (simulator/usercode.py):
after it succeeds, its text and ``warning: ...`` lines; none when it fails. Commands
report their own, more specific interruption messages (``run`` says how to resume).
"""

from __future__ import annotations

import gc
import pkgutil
import sys
import warnings

import click

from shufflesim.protocols import import_gc
from shufflesim.protocols.errors import ParameterError
from shufflesim.simulator import __version__, held_output
from shufflesim.simulator.cli import commands, deferred_imports
from shufflesim.simulator.errors import UserError
from shufflesim.simulator.execution import blas

EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
#: Commands that compute one answer and exit: in the console script's process (:func:`entry`,
#: not click's test runner nor a program calling :data:`main`) their imports pause the cyclic
#: garbage collector and freeze what they made out of its later scans (protocols/import_gc.py;
#: about 0.017 s of CPU per ``bound``), and the numpy submodules that scipy imports and no
#: command runs load only on first use (simulator/cli/deferred_imports.py; about 0.04 s).
#: ``run``, ``audit`` and ``plot`` keep both as they are: a freeze in the middle of a long run
#: would keep the cyclic garbage of its earlier work alive.
QUIET_IMPORTS = frozenset({"bound", "calibrate", "compose", "list", "rdp"})
_console = {"script": False}


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _fail(message: str, code: int) -> None:
    click.echo(f"error: {_one_line(message)}", err=True)
    sys.exit(code)


class _Group(click.Group):
    """A click group whose every failure is one line on stderr (module docstring)."""

    def invoke(self, ctx: click.Context):
        """The command, its warnings held back: printed as ``warning: ...`` lines after it
        succeeds, dropped when it fails (the error line explains them; one line in all)."""
        held_output.hold_output(True)  # user code's prints: likewise (simulator/usercode.py)
        try:
            with warnings.catch_warnings(record=True) as held:
                result = self._invoke(ctx)
        except BaseException:
            held_output.hold_output(False)
            raise
        printed = held_output.hold_output(False)
        if printed:
            click.echo(printed, err=True, nl=not printed.endswith("\n"))
        for warning in held:
            click.echo(f"warning: {_one_line(str(warning.message))}", err=True)
        return result

    def _invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except (UserError, ParameterError) as error:
            _fail(str(error), EXIT_USAGE)
        except FileNotFoundError as error:
            _fail(f"file not found: {error.filename or error}", EXIT_USAGE)
        except IsADirectoryError as error:
            _fail(f"is a directory, not a file: {error.filename or error}", EXIT_USAGE)
        except KeyboardInterrupt:
            _fail("interrupted", EXIT_INTERRUPTED)
        except MemoryError as error:
            detail = f" ({error})" if str(error) else ""
            _fail(f"out of memory{detail}; reduce the problem size (n, the domain, the number "
                  "of trials) or the memory it needs", EXIT_USAGE)

    def list_commands(self, ctx: click.Context) -> list[str]:
        """The command names: the modules of :mod:`simulator.cli.commands` (none imported)."""
        return sorted({*self.commands, *_command_modules()})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """The command ``cmd_name``, its module imported now (None: no such command)."""
        if cmd_name not in self.commands and cmd_name in _command_modules():
            if cmd_name in QUIET_IMPORTS and _console["script"]:
                import_gc.for_commands()
                deferred_imports.defer()  # numpy submodules these commands never run
            loaded = import_gc.import_module(f"{commands.__name__}.{cmd_name}")
            if hasattr(loaded, "command"):
                self.add_command(loaded.command, cmd_name)
        return self.commands.get(cmd_name)

    def resolve_command(self, ctx: click.Context, args: list[str]):
        """click's, after importing every command when the name is none of them: the error's
        "did you mean" then chooses among all commands, as when all were imported at start."""
        if args and self.get_command(ctx, click.utils.make_str(args[0])) is None:
            for name in self.list_commands(ctx):
                self.get_command(ctx, name)
        return super().resolve_command(ctx, args)

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True,
             **extra):
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)
        try:
            code = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.UsageError as error:
            hint = ""
            if error.ctx is not None:
                hint = f" (see '{error.ctx.command_path} --help')"
            _fail(error.format_message() + hint, error.exit_code)
        except click.ClickException as error:
            _fail(error.format_message(), error.exit_code)
        except click.Abort:
            _fail("interrupted", EXIT_INTERRUPTED)
        sys.exit(code if isinstance(code, int) else 0)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="shufflesim")
def main() -> None:
    """Simulate, bound and audit the shuffle model of differential privacy."""


def _command_modules() -> set[str]:
    """The names of the modules in :mod:`simulator.cli.commands` (the folder listed, nothing
    imported)."""
    return {module.name for module in pkgutil.iter_modules(commands.__path__)}


def entry() -> None:
    """The console script ``shufflesim``: :data:`main`; after an interruption (exit code above
    128: Ctrl-C, SIGTERM) the objects alive are frozen out of the garbage collector first: the
    run has saved its state and stopped its workers by then, and the interpreter's collections
    at exit (numpy, scipy, the run's objects) took seconds under load, beyond the 2 s an
    interrupted command may take (issue 26). Finalizers still run (no semaphore leaks).

    Every command computes with one BLAS thread (unless the user's environment says otherwise),
    as every process of a run does (simulator/execution/blas.py): the same rounding as a run's,
    and the engine's matrix-vector products stop spin-waiting on a second thread (the 100-round
    calibration of issue 32: 5.96 -> 3.74 s of CPU). Set before numpy loads its BLAS."""
    blas.default_for_commands()
    _console["script"] = True   # the process ends with this command (QUIET_IMPORTS)
    try:
        main()
    except SystemExit as done:
        code = done.code
        if isinstance(code, int) and code > 128:
            gc.freeze()  # the exit's collections skip every object alive now
        raise
