"""``shufflesim run SCENARIO``: run a scenario and write its result tables.

The run's units (simulator.units) go to an executor (simulator.executors): local processes by
default, or Dask. Finished units are kept as part files in ``OUT/<name>/.parts`` until the final
tables are written, so a run interrupted at any point (even by SIGKILL) and started again
computes only the missing units (simulator.resume).
"""

from __future__ import annotations

from pathlib import Path

import click

from simulator.executors import DASK, EXECUTORS, LOCAL, make_executor
from simulator.progress import ProgressReport
from simulator.results import run_metadata, write_tables
from simulator.resume import finish
from simulator.runner import run_scenario
from simulator.scenario import load_scenario


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
def command(scenario: Path, out_dir: Path, seed: int | None, workers: int | None,
            executor: str | None, scheduler: str | None, quiet: bool) -> None:
    """Run SCENARIO (a TOML file) and write OUT/<name>/utility.parquet (and any other tables).

    An interrupted run, started again with the same scenario, seed and OUT, computes only the
    units it had not finished; the tables equal those of an uninterrupted run.
    """
    loaded = load_scenario(scenario)
    if seed is not None:
        loaded = loaded.with_seed(seed)
    kind = executor or (DASK if scheduler is not None else LOCAL)
    run_dir = out_dir / loaded.name
    with make_executor(kind, workers, scheduler) as pool, \
            ProgressReport(f"running {loaded.name}", enabled=not quiet) as progress:
        tables = run_scenario(loaded, progress=progress, executor=pool, run_dir=run_dir)
    written = write_tables(run_dir, tables, run_metadata(loaded.text, loaded.seed))
    finish(run_dir, written)
    if not quiet:
        for path in written:
            click.echo(f"wrote {path} ({tables[path.stem].num_rows} rows)")
