"""Figures of a run's result tables (``shufflesim plot``), as PNG files.

Needs matplotlib (the optional ``plot`` extra); without it, :func:`require_matplotlib` raises a
one-line UserError. Figures are built on :class:`matplotlib.figure.Figure` objects (no pyplot
state, no display). Which figures a run gets depends on its tables (docs/results.md):

* ``utility_<estimator>.png`` (utility table, utility.py): the mean of each error metric over
  the repetitions versus eps0, with standard-error bars, one line per setting (randomizer, n,
  path and the other sweep values); solid against the sampled data (``empirical``), dashed
  against the population. When eps0 is not what varies (per-user budgets, e.g. 003's three
  groups), the x axis is the first numeric sweep key that does. Log axes for the
  (non-negative) metrics; the signed ``error`` (bias) is drawn on a linear axis.
* ``utility_mae_vs_<key>[_k].png`` (utility.py): the mean ``mae`` (defined for every
  estimator) versus each numeric swept key (003's error against the conservative fraction or
  budget), one panel per value of the other numeric swept keys, one line per remaining setting
  (estimator, randomizer, other sweep values); left out when the run sweeps one key only.
* ``bounds_eps_vs_n[_k].png`` (bounds.py): central eps versus n per bound, log-log, one panel
  per setting other than n (and delta), like the papers' figures (000 Fig. 3, 001 Fig. 2);
  when n is not swept, versus the first numeric swept key. Panels are never keyed by the x
  variable: a sweep over n gives curves. From a ``bounds`` table when the run has one, else
  from the audit's verdict rows; solid lines: proven upper bounds, dashed: upper bounds with a
  caveat (approximate, or relying on the stronger-clone reduction), dotted: lower bounds
  (black: the exact lower bound), grey dash-dotted with crosses: another protocol (the
  ``baseline-min-budget`` reference), labelled as such; black triangles: the empirical lower
  bound of the audit. Bounds without a finite value at a setting leave a gap.
* ``audit_sandwich.png`` (audit table, audit.py): for every audited setting and delta, the
  empirical lower bound (at its confidence), the exact lower bound (000 Thm 14) and every upper
  bound evaluated; a red cross marks an upper bound judged ``violated``.
* ``batches_epsilon.png`` (batches table of pipeline runs, batches.py): the per-batch central
  eps of every released batch per sweep point (all repetitions), and versus its honest size.
* ``bounds_eps_vs_rounds.png`` (bounds table with several ``rounds``, lifetime.py): lifetime
  eps versus the number of rounds T per bound, with the naive T x eps line as a reference
  (not a guarantee) and the pipeline users' median lifetime eps when the run has a users table.
* ``lifetime_users.png`` (users table of pipeline runs with rounds, lifetime.py): the
  distribution (ECDF) of the users' lifetime eps per sweep point, and lifetime eps versus the
  number of rounds a user took part in.
* ``multi_message_extra_amplification.png`` (bounds table of a multi-message randomizer swept
  over its target eps', multi_message.py): log2(eps'/eps) per bound, 001 Figs. 3 and 4.
* ``learning_accuracy.png`` and ``learning_epsilon.png`` (learning table, learning.py): test
  accuracy and loss against epochs per budget distribution (003 Fig. 4), and the privacy
  accounting of the run after every epoch per bound.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from shufflesim.simulator.errors import UserError

from .audit import plot_audit_sandwich
from .batches import plot_batches
from .bounds import bound_curves, plot_bounds_vs_n
from .common import (
    DPI,
    MAX_PANELS,
    LeftOut,
    find_runs,
    load_tables,
    require_matplotlib,
    short_overrides,
)
from .kinds import PLOTS, PlotKind, register_plot
from .learning import plot_learning
from .lifetime import plot_bounds_vs_rounds, plot_lifetime_users
from .multi_message import plot_extra_amplification
from .utility import _utility_axis, plot_utility, plot_utility_vs_keys

__all__ = [
    "DPI", "MAX_PANELS", "PLOTS", "LeftOut", "PlotKind", "bound_curves", "figures",
    "find_runs", "iter_figures", "load_tables",
    "plot_audit_sandwich",
    "plot_batches", "plot_bounds_vs_n", "plot_bounds_vs_rounds", "plot_extra_amplification",
    "plot_learning", "plot_lifetime_users", "plot_run", "plot_utility", "plot_utility_vs_keys",
    "register_plot", "require_matplotlib", "short_overrides", "_utility_axis",
]


def iter_figures(tables, figure_module=None) -> Iterator[tuple[str, object]]:
    """Every figure the tables allow, one at a time, as (name, matplotlib Figure) pairs, or
    (name, :class:`LeftOut`) for a figure left out with its reason."""
    figure_module = figure_module or require_matplotlib()
    for kind in PLOTS.values():  # every registered plot kind (kinds.py), declared order
        yield from kind.plot(tables, figure_module)


def figures(tables, figure_module=None) -> list[tuple[str, object]]:
    """Every figure the tables allow, as (name, matplotlib Figure) pairs (not written; the
    figures left out are not listed)."""
    return [(name, figure) for name, figure in iter_figures(tables, figure_module)
            if not isinstance(figure, LeftOut)]


def plot_run(run: str | Path, out: str | Path, prefix: str = "",
             notes: list[str] | None = None) -> list[Path]:
    """Every figure the run's tables allow (module docstring); returns the written files.

    The tables are read once; each figure is drawn, written and dropped before the next is
    drawn (one figure in memory at a time). ``notes`` receives one line per figure left out,
    with the reason."""
    figure_module = require_matplotlib()
    run, out = Path(run), Path(out)
    tables = load_tables(run)
    written: list[Path] = []
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UserError(f"cannot create plot directory {out}: {error.strerror}") from None
    for name, figure in iter_figures(tables, figure_module):
        if isinstance(figure, LeftOut):
            if notes is not None:
                notes.append(f"{run}: {prefix}{name}.png left out: {figure.reason}")
            continue
        path = out / f"{prefix}{name}.png"
        try:
            figure.savefig(path, dpi=DPI)
        except OSError as error:
            raise UserError(f"cannot write {path}: {error.strerror}") from None
        figure.clear()
        written.append(path)
    return written
