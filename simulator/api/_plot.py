"""``shufflesim.plot``: the ``plot`` command (simulator.calls.plot) from Python."""

from __future__ import annotations

from pathlib import Path

from shufflesim.simulator.calls import plot as plot_call


def plot(results_dir: str | Path, /, out: str | Path | None = None) -> list[Path]:
    """Draw the PNG figures of a run's tables, as ``shufflesim plot``: the files written.
    ``results_dir``: a run directory (``shufflesim.run(..., out=DIR)`` writes ``DIR/<name>``)
    or a directory of runs; ``out``: where the files go (default ``<run>/plots``). Needs
    matplotlib (the ``plot`` extra).

    >>> import shufflesim
    >>> shufflesim.plot("no-such-dir")
    Traceback (most recent call last):
    ...
    shufflesim.simulator.errors.UserError: results directory not found: no-such-dir
    """
    written, _ = plot_call.plot(results_dir, out)
    return written
