"""``shufflesim plot RESULTS_DIR``: PNG figures of a run's result tables (simulator.plotting)."""

from __future__ import annotations

from pathlib import Path

import click

from shufflesim.simulator.calls import plot as plot_call


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
    notes: list[str] = []
    written, empty = plot_call.plot(results_dir, out_dir, notes=notes)
    if not quiet:
        for run in empty:
            click.echo(f"{run}: nothing to plot", err=True)
        for note in notes:
            click.echo(note, err=True)
    if not quiet:
        for path in written:
            click.echo(f"wrote {path}")
