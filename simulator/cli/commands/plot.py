"""``shufflesim plot RESULTS_DIR``: PNG figures of a run's result tables (simulator.plotting)."""

from __future__ import annotations

import importlib
from pathlib import Path

import click

from shufflesim.simulator.cli.lazy import lazy_module

plotting = lazy_module("shufflesim.simulator.plotting")
#: The modules that register the result tables' schemas (plot checks tables against them).
SCHEMA_MODULES = ("shufflesim.simulator.plugins", "shufflesim.simulator.pipeline.unit")


@click.command("plot")
@click.argument("results_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Directory for the PNG files (default: RESULTS_DIR/plots, or <run>/plots for "
                   "each run directory under RESULTS_DIR); with several runs the file names "
                   "start with the run's name.")
@click.option("--quiet", "-q", is_flag=True, help="Do not list the files written.")
def command(results_dir: Path, out_dir: Path | None, quiet: bool) -> None:
    """Plot the tables of RESULTS_DIR (a run directory such as results/quickstart, or a
    directory of runs such as results/): utility versus eps0, the mae versus every numeric
    swept key, eps versus n per bound (other protocols marked), audit sandwiches, per-batch eps
    of pipeline runs. Needs matplotlib (the `plot` extra)."""
    plotting.require_matplotlib()
    for name in SCHEMA_MODULES:
        importlib.import_module(name)
    runs = plotting.find_runs(results_dir)
    written = []
    for run in runs:
        out = (run / "plots") if out_dir is None else out_dir
        prefix = f"{run.name}_" if out_dir is not None and len(runs) > 1 else ""
        files = plotting.plot_run(run, out, prefix=prefix)
        if not files and not quiet:
            click.echo(f"{run}: nothing to plot", err=True)
        written += files
    if not quiet:
        for path in written:
            click.echo(f"wrote {path}")
