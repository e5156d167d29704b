"""``shufflesim run SCENARIO``: run a scenario and write its result tables."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from simulator.results import run_metadata, write_tables
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
@click.option("--quiet", "-q", is_flag=True, help="No progress bar and no summary.")
def command(scenario: Path, out_dir: Path, seed: int | None, quiet: bool) -> None:
    """Run SCENARIO (a TOML file) and write OUT/<name>/utility.parquet (and any other tables)."""
    loaded = load_scenario(scenario)
    if seed is not None:
        loaded = loaded.with_seed(seed)
    show = not quiet and sys.stderr.isatty()
    with click.progressbar(length=1, label=f"running {loaded.name}", file=sys.stderr,
                           hidden=not show) as bar:
        def progress(done: int, total: int) -> None:
            bar.length = total
            bar.update(done - bar.pos)

        tables = run_scenario(loaded, progress=progress)
    written = write_tables(
        out_dir / loaded.name, tables, run_metadata(loaded.text, loaded.seed)
    )
    if not quiet:
        for path in written:
            click.echo(f"wrote {path} ({tables[path.stem].num_rows} rows)")
