"""The ``plot`` capability: PNG figures of a run's result tables (simulator.plotting), for
``shufflesim plot`` and ``shufflesim.plot``."""

from __future__ import annotations

import importlib
from pathlib import Path

from shufflesim.simulator.lazy import lazy_module

plotting = lazy_module("shufflesim.simulator.plotting")
#: The modules that register the result tables' schemas (plot checks tables against them).
SCHEMA_MODULES = ("shufflesim.simulator.plugins", "shufflesim.simulator.pipeline.unit")


def plot(results_dir: Path | str, out: Path | str | None = None,
         notes: list[str] | None = None) -> tuple[list[Path], list[Path]]:
    """(the PNG files written, the run directories with nothing to plot). ``results_dir``: a
    run directory (results/quickstart) or a directory of runs (results/); ``out``: where the
    files go (default: each run's ``plots/``; with several runs into one ``out`` the names
    start with the run's name). Needs matplotlib (the ``plot`` extra). ``notes`` receives one
    line per figure left out, with the reason."""
    plotting.require_matplotlib()
    for name in SCHEMA_MODULES:
        importlib.import_module(name)
    runs = plotting.find_runs(Path(results_dir))
    written, empty = [], []
    for run in runs:
        folder = (run / "plots") if out is None else Path(out)
        prefix = f"{run.name}_" if out is not None and len(runs) > 1 else ""
        files = plotting.plot_run(run, folder, prefix=prefix, notes=notes)
        if not files:
            empty.append(run)
        written += files
    return written, empty
