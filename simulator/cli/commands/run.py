"""``shufflesim run SCENARIO``: run a scenario and write its result tables.

The run's units (simulator.execution.units) go to an executor (simulator.execution.executors):
local processes by default, or Dask. Finished units are kept as part files in
``OUT/<name>/.parts`` until the final tables are written, so a run interrupted at any point
(even by SIGKILL) and started again
computes only the missing units (simulator.execution.resume).

Ending a run early. SIGINT (Ctrl-C) and SIGTERM stop the workers, keep the finished units' part
files and end with one line on stderr, ``interrupted; run the same command again to resume``,
and exit code 130 (SIGINT) or 143 (SIGTERM), the shell's 128 + signal number. A signal that
arrives while the final tables are written is held until they are in place (the run is then
complete). Running out of memory (MemoryError, or a worker killed by the system) ends with one
line (exit code 2) that says what to change and whether finished units were kept for resuming;
a run that would not fit in memory is refused before it starts (simulator.batch.memory).
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Iterator
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import click

from shufflesim.simulator.calls import run as run_call
from shufflesim.simulator.cli.lazy import lazy_module
from shufflesim.simulator.cli.options import call_timeout_option, limit_options
from shufflesim.simulator.errors import UserError
from shufflesim.simulator.execution.executors import EXECUTORS
from shufflesim.simulator.execution.progress import ProgressReport

resume = lazy_module("shufflesim.simulator.execution.resume")
units = lazy_module("shufflesim.simulator.execution.units")

INTERRUPTED = "interrupted; run the same command again to resume"


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM arrived (a KeyboardInterrupt, so every layer treats it as Ctrl-C)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


class _Signals:
    """While active, SIGINT and SIGTERM raise :class:`Interrupted` in the main thread; inside
    :meth:`held` they are only recorded."""

    def __init__(self) -> None:
        self.received: int | None = None
        self._holding = False

    def _handle(self, signum, frame) -> None:
        self.received = signum
        if not self._holding:
            raise Interrupted(signum)

    @contextlib.contextmanager
    def active(self) -> Iterator[_Signals]:
        if threading.current_thread() is not threading.main_thread():
            yield self
            return
        previous = {s: signal.signal(s, self._handle) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield self
        finally:
            for number, handler in previous.items():
                signal.signal(number, handler)

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        self._holding = True
        try:
            yield
        finally:
            self._holding = False


def _kept_parts(run_dir: Path) -> str:
    """What a failed run leaves for resuming, for its error message; with no finished unit the
    part files are removed and the text is empty."""
    finished = len(list((run_dir / resume.PARTS / resume.DONE).glob("*.json")))
    if finished == 0:
        resume.discard_parts(run_dir)
        return ""
    noun = "unit is" if finished == 1 else "units are"
    return (f"; {finished} finished {noun} kept in {run_dir / resume.PARTS} and the same "
            "command resumes from them (delete that directory to discard them)")


@click.command("run")
@click.argument("scenario", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--out", "out_dir", type=click.Path(file_okay=False, path_type=Path),
    default=Path("results"), show_default=True,
    help="Results directory; tables go to OUT/<scenario name>/.",
)
@click.option("--seed", type=click.IntRange(min=0), default=None,
              help="Root seed, overriding the scenario's `seed`.")
@click.option("--workers", type=click.IntRange(min=1), default=None,
              help="Worker processes (default: the number of cores). Work that finishes "
                   "within a second runs in this process (starting a worker costs about that).")
@click.option("--executor", type=click.Choice(EXECUTORS), default=None,
              help="`local` processes (default) or `dask` (optional dask extra: a local "
                   "cluster of --workers processes, or the cluster at --scheduler).")
@click.option("--scheduler", metavar="ADDRESS", default=None,
              help="Address of a running Dask scheduler (implies --executor dask).")
@click.option("--quiet", "-q", is_flag=True, help="No progress and no summary.")
@limit_options
@call_timeout_option
def command(scenario: Path, out_dir: Path, seed: int | None, workers: int | None,
            executor: str | None, scheduler: str | None, quiet: bool) -> None:
    """Run SCENARIO (a TOML file) and write OUT/<name>/utility.parquet (and any other tables).

    An interrupted run (Ctrl-C, SIGTERM, even SIGKILL), started again with the same scenario,
    seed and OUT, computes only the units it had not finished; the tables equal those of an
    uninterrupted run.
    """
    signals = _Signals()
    try:
        with signals.active():
            _run(scenario, out_dir, seed, workers, executor, scheduler, quiet, signals)
    except KeyboardInterrupt as interrupt:
        number = interrupt.signum if isinstance(interrupt, Interrupted) else signal.SIGINT
        click.echo(INTERRUPTED, err=True)
        sys.exit(128 + int(number))


def _run(scenario: Path, out_dir: Path, seed: int | None, workers: int | None,
         executor: str | None, scheduler: str | None, quiet: bool, signals: _Signals) -> None:
    # the workers start (and import) while this process loads the scenario (issue 32), once
    # the file's outline is valid (a file refused there starts no worker)
    run_call.check_outline(scenario)
    with run_call.start(workers, executor, scheduler) as pool:
        loaded = run_call.load(scenario, seed)
        run_dir = out_dir / loaded.name
        estimate = run_call.plan(loaded, workers)
        tables = _execute(loaded, out_dir, run_dir, estimate, quiet, signals, pool)
    with signals.held():  # the tables go in place whole; a signal now waits for them
        written = run_call.write(loaded, run_dir, tables)
    if not quiet:
        for path in written:
            click.echo(f"wrote {path} ({tables[path.stem].num_rows} rows)")


def _execute(loaded, out_dir: Path, run_dir: Path, estimate, quiet: bool, signals: _Signals,
             pool):
    try:
        with ProgressReport(f"running {loaded.name} ({estimate.describe()})",
                            enabled=not quiet) as progress:
            tables, _ = run_call.execute(loaded, out_dir, pool=pool, progress=progress)
    except BrokenProcessPool:
        if signals.received is not None:  # the signal reached the workers first
            raise Interrupted(signals.received) from None
        raise UserError(
            "a worker process died (killed by the system, most often because memory ran "
            "out): run again with fewer --workers (e.g. --workers 1) or a smaller "
            f"batch.memory_mb{_kept_parts(run_dir)}") from None
    except units.OutOfMemory as error:
        raise UserError(f"{error}: run again with fewer --workers (e.g. --workers 1) or a "
                        f"smaller batch.memory_mb{_kept_parts(run_dir)}") from None
    except MemoryError as error:
        detail = str(error) or "MemoryError"
        raise UserError(f"out of memory ({detail}): run again with fewer --workers or a "
                        f"smaller batch.memory_mb{_kept_parts(run_dir)}") from None
    return tables
