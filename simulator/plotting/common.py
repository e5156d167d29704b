"""Shared pieces of the figures: runs and tables, labels, axes, legends."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq

from shufflesim.protocols.randomizers.registry import randomizer_class, randomizer_names
from shufflesim.simulator.errors import UserError
from shufflesim.simulator.results.tables import TABLE_SCHEMAS

#: Panels per figure before a figure is split into several files.
MAX_PANELS = 16
DPI = 120
#: Fewest x values a curve of single draws (one repetition per point) needs to show a trend;
#: with fewer, the utility figures are left out (a reader would take noise for an effect).
MIN_SINGLE_DRAW_POINTS = 4


class LeftOut:
    """In place of a figure: the figure was left out, and why (``shufflesim plot`` says so)."""

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def __repr__(self) -> str:
        return f"LeftOut({self.reason!r})"


def repetitions_text(counts) -> str:
    """``5 repetitions`` / ``2-5 repetitions`` from the repetitions per sweep point."""
    low, high = int(min(counts)), int(max(counts))
    return f"{low} repetitions" if low == high else f"{low}-{high} repetitions"


def is_multi_message(name) -> bool:
    """Whether the registered randomizer ``name`` sends several messages per user."""
    if name not in randomizer_names():
        return False
    return bool(getattr(randomizer_class(name), "multi_message", False))


def epsilon0_label(multi_message: bool) -> str:
    """The x label of a scenario's ``epsilon0``: the local budget of a local randomizer, the
    central target eps' of a multi-message protocol (001 Sec. 8.2: its parameters are chosen
    for a central eps', not a local one)."""
    return "target central eps' (epsilon0)" if multi_message else "local budget eps0"


def require_matplotlib():
    """The matplotlib.figure module, or a one-line UserError naming the extra to install."""
    try:
        import matplotlib
        from matplotlib import figure
    except ImportError:
        raise UserError(
            "plotting needs matplotlib: pip install 'shufflesim[plot]' (or pip install "
            "matplotlib)"
        ) from None
    del matplotlib
    return figure


# ---------------------------------------------------------------------------------------------
# Runs and tables
# ---------------------------------------------------------------------------------------------
def find_runs(path: str | Path) -> list[Path]:
    """Run directories under ``path``: itself when it holds result tables, else its
    sub-directories that do (sorted). Parquet files that are not shufflesim result tables (a
    name no table schema has) are not a run: a folder of only those is an error."""
    path = Path(path)
    if path.is_file():
        raise UserError(f"results directory = {str(path)!r}: is a file, not a directory")
    if not path.is_dir():
        raise UserError(f"results directory not found: {path}")
    if result_files(path):
        return [path]
    runs = sorted(p for p in path.iterdir() if p.is_dir() and result_files(p))
    if not runs:
        foreign = sorted(p.name for p in path.glob("*.parquet"))[:5]
        seen = (f" (found only {', '.join(foreign)}: not result tables; those are named "
                f"{', '.join(sorted(TABLE_SCHEMAS.names()))})") if foreign else ""
        raise UserError(f"no result tables (*.parquet) in {path} or its sub-directories{seen}")
    return runs


def result_files(run: Path) -> list[Path]:
    """The Parquet files of ``run`` named like a registered result table."""
    names = set(TABLE_SCHEMAS.names())
    return sorted(p for p in run.glob("*.parquet") if p.stem in names)


def load_tables(run: Path) -> dict[str, pd.DataFrame]:
    """The run's result tables; one with another table's columns is a one-line error."""
    tables = {}
    for file in result_files(run):
        try:
            columns = pq.read_schema(file).names
            expected = TABLE_SCHEMAS.get(file.stem).names
            missing = [c for c in expected if c not in columns]
            if missing:
                raise UserError(f"{file}: not a shufflesim {file.stem} table (it lacks the "
                                f"columns {', '.join(missing[:6])}"
                                f"{', ...' if len(missing) > 6 else ''})")
            tables[file.stem] = pd.read_parquet(file)
        except (OSError, ValueError) as error:
            raise UserError(f"cannot read {file}: {error}") from None
    return tables


# ---------------------------------------------------------------------------------------------
# Labels and styles
# ---------------------------------------------------------------------------------------------
def short_overrides(overrides: str, drop: Iterable[str] = ()) -> str:
    """``{"population.budget.epsilon0": 0.5, "population.n": 100}`` -> ``epsilon0=0.5, n=100``
    (keys in ``drop``, matched whole or on their last component, left out)."""
    try:
        values = json.loads(overrides) if overrides else {}
    except ValueError:
        return str(overrides)
    drop = set(drop)
    parts = [f"{key.split('.')[-1]}={number(value)}" for key, value in values.items()
             if key not in drop and key.split(".")[-1] not in drop]
    return ", ".join(parts)


def number(value) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def colors(names: Iterable[str]) -> dict[str, tuple]:
    from matplotlib import colormaps

    """A colour per name: tab10's ten strong colours first, then (beyond ten names) tab20's
    lighter companions, so that the first ten names never get two similar pale colours."""
    names = list(dict.fromkeys(names))
    if len(names) <= 10:
        return {name: colormaps["tab10"](i) for i, name in enumerate(names)}
    cmap = colormaps["tab20"]
    return {name: cmap((2 * i if i < 10 else 2 * (i - 10) + 1) % 20)
            for i, name in enumerate(names)}


#: Marker shapes of upper bounds, one per bound (hollow): curves that coincide still show each
#: bound's marker on the other's.
MARKERS = "osD^vP*X<>ph"


def markers(names: Iterable[str]) -> dict[str, str]:
    """A hollow marker shape per name (:data:`MARKERS`, cycled)."""
    return {name: MARKERS[i % len(MARKERS)] for i, name in enumerate(dict.fromkeys(names))}


def grid(count: int) -> tuple[int, int]:
    columns = 2 if count == 4 else min(count, 4)
    return math.ceil(count / columns), columns


def plain_log_ticks(ax, axis: str = "y") -> None:
    """Label a log axis with plain numbers (0.05, not 5 x 10^-2); label the minor ticks too
    when the axis spans less than about a decade and a half (only 2 and 5 x 10^k above 0.6
    decades)."""
    from matplotlib.ticker import FuncFormatter, NullFormatter

    low, high = ax.get_ylim() if axis == "y" else ax.get_xlim()
    target = ax.yaxis if axis == "y" else ax.xaxis
    target.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    span = math.log10(high / low) if low > 0 else math.inf
    if span <= 0.6:
        target.set_minor_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    elif span <= 1.5:
        target.set_minor_formatter(FuncFormatter(two_and_five))
    else:
        target.set_minor_formatter(NullFormatter())


def two_and_five(value: float, _position=None) -> str:
    """Minor-tick label: only 2 x 10^k and 5 x 10^k are labelled."""
    if value <= 0:
        return ""
    leading = round(value / 10 ** math.floor(math.log10(value)), 6)
    return f"{value:g}" if leading in (2.0, 5.0) else ""


def ticks_at(ax, values, axis: str = "x") -> None:
    """Ticks exactly at ``values`` (few distinct values: sweep grids), plain labels."""
    from matplotlib.ticker import FixedLocator, NullLocator

    values = sorted(set(float(v) for v in values))
    target = ax.xaxis if axis == "x" else ax.yaxis
    target.set_major_locator(FixedLocator(values))
    target.set_minor_locator(NullLocator())
    target.set_major_formatter(lambda value, _: f"{value:g}")


def panels(figure_module, count: int, width: float = 4.2, height: float = 3.3,
            min_width: float = 0.0):
    rows, columns = grid(count)
    fig = figure_module.Figure(figsize=(max(width * columns, min_width), height * rows + 1.2),
                               layout="constrained")
    axes = fig.subplots(rows, columns, squeeze=False).ravel()
    for ax in axes[count:]:
        ax.set_visible(False)
    return fig, axes[:count]


def legend_below(fig, handles, labels, columns: int = 4) -> None:
    """A legend under the panels, in at most ``columns`` columns, as many as the figure's
    width holds for the longest label (about 0.075 inch per character at this font size)."""
    if handles:
        column_width = 0.075 * max(len(label) for label in labels) + 0.7
        fits = int(fig.get_figwidth() // column_width)
        columns = max(1, min(columns, len(labels), fits))
        fig.legend(handles, labels, loc="outside lower center", ncol=columns,
                   fontsize="small", frameon=False, markerscale=1.5)


def chunks(items: list, size: int) -> list[list]:
    """``items`` in as few groups of at most ``size`` as possible, of balanced sizes (18 panels
    at 16 per figure: 9 + 9, not 16 + 2)."""
    if not items:
        return [[]]
    count = math.ceil(len(items) / size)
    per = math.ceil(len(items) / count)
    return [items[i:i + per] for i in range(0, len(items), per)]


# ---------------------------------------------------------------------------------------------
# Sweep values
# ---------------------------------------------------------------------------------------------
def parse_overrides(text: str) -> dict:
    """A row's ``overrides`` JSON as a dict ({} when absent or unreadable)."""
    try:
        values = json.loads(text) if text else {}
    except ValueError:
        return {}
    return values if isinstance(values, dict) else {}


def is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def numeric_swept_keys(overrides: Iterable[str]) -> list[str]:
    """Sweep keys (in file order) whose values are numbers taking two values or more."""
    parsed = [parse_overrides(o) for o in dict.fromkeys(overrides)]
    keys = list(dict.fromkeys(k for values in parsed for k in values))
    out = []
    for key in keys:
        values = [values.get(key) for values in parsed]
        if all(is_number(v) for v in values) and len(set(values)) >= 2:
            out.append(key)
    return out


def without(overrides: str, drop: Iterable[str]) -> str:
    """The overrides JSON without the keys in ``drop`` (whole or last component), sorted keys:
    a hashable key of the setting that ignores those sweep keys."""
    drop = set(drop)
    values = {k: v for k, v in parse_overrides(overrides).items()
              if k not in drop and k.split(".")[-1] not in drop}
    return json.dumps(values, sort_keys=True)


#: Sweep keys left out of setting labels: shown elsewhere (axis, figure, label head).
LABEL_DROP = ("epsilon0", "n", "estimator.name", "randomizer.name")


def short_key(key: str) -> str:
    return key.split(".")[-1]
