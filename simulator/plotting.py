"""Figures of a run's result tables (``shufflesim plot``), as PNG files.

Needs matplotlib (the optional ``plot`` extra); without it, :func:`require_matplotlib` raises a
one-line UserError. Figures are built on :class:`matplotlib.figure.Figure` objects (no pyplot
state, no display). Which figures a run gets depends on its tables (docs/results.md):

* ``utility_<estimator>.png`` (utility table): the mean of each error metric over the
  repetitions versus eps0, with standard-error bars, one line per setting (randomizer, n, path
  and the other sweep values); solid against the sampled data (``empirical``), dashed against
  the population. When eps0 is not what varies (per-user budgets, e.g. 003's three groups),
  the x axis is the first numeric sweep key that does. Log axes for the (non-negative)
  metrics; the signed ``error`` (bias) of mean and sum estimators is drawn on a linear axis.
* ``bounds_eps_vs_n[_k].png``: central eps versus n per bound, log-log, one panel per
  (setting other than n, delta), like the papers' figures (000 Fig. 3, 001 Fig. 2). From a
  ``bounds`` table when the run has one (columns ``n``, ``delta``, ``epsilon`` and ``bound`` or
  ``method``; optional ``kind``, ``status`` or ``statuses``, ``randomizer``, ``epsilon0``,
  ``budget``, ``overrides``: simulator/bounds_section.py), else
  from the audit's verdict rows; solid lines: proven upper bounds, dashed: upper bounds with a
  caveat (approximate, or relying on the stronger-clone reduction), dotted: lower bounds (black:
  the exact lower bound), black triangles: the empirical lower bound of the audit. Bounds
  without a finite value at a setting (outside their regime) leave a gap.
* ``audit_sandwich.png`` (audit table): for every audited setting and delta, the empirical
  lower bound (at its confidence), the exact lower bound (000 Thm 14) and every upper bound
  evaluated; a red cross marks an upper bound judged ``violated``.
* ``batches_epsilon.png`` (batches table of pipeline runs): the central eps of every released
  batch versus its release time (first repetition), and versus its honest size (all
  repetitions), one colour per sweep point.
"""

from __future__ import annotations

import json
import math
import textwrap
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from simulator.errors import UserError

#: Panels per figure before a figure is split into several files.
MAX_PANELS = 16
DPI = 120


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
    """Run directories under ``path``: itself when it holds Parquet tables, else its
    sub-directories that do (sorted)."""
    path = Path(path)
    if not path.is_dir():
        raise UserError(f"results directory not found: {path}")
    if any(path.glob("*.parquet")):
        return [path]
    runs = sorted(p for p in path.iterdir() if p.is_dir() and any(p.glob("*.parquet")))
    if not runs:
        raise UserError(f"no result tables (*.parquet) in {path} or its sub-directories")
    return runs


def load_tables(run: Path) -> dict[str, pd.DataFrame]:
    tables = {}
    for file in sorted(run.glob("*.parquet")):
        try:
            tables[file.stem] = pd.read_parquet(file)
        except (OSError, ValueError) as error:
            raise UserError(f"cannot read {file}: {error}") from None
    return tables


def plot_run(run: str | Path, out: str | Path, prefix: str = "") -> list[Path]:
    """Every figure the run's tables allow (module docstring); returns the written files."""
    figure_module = require_matplotlib()
    run, out = Path(run), Path(out)
    tables = load_tables(run)
    plotters: list[tuple[str, Callable]] = [
        ("utility", plot_utility), ("bounds", plot_bounds_vs_n),
        ("audit", plot_audit_sandwich), ("batches", plot_batches),
    ]
    written: list[Path] = []
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UserError(f"cannot create plot directory {out}: {error.strerror}") from None
    for _, plotter in plotters:
        for name, figure in plotter(tables, figure_module):
            path = out / f"{prefix}{name}.png"
            try:
                figure.savefig(path, dpi=DPI)
            except OSError as error:
                raise UserError(f"cannot write {path}: {error.strerror}") from None
            written.append(path)
    return written


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
    parts = [f"{key.split('.')[-1]}={_number(value)}" for key, value in values.items()
             if key not in drop and key.split(".")[-1] not in drop]
    return ", ".join(parts)


def _number(value) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _colors(names: Iterable[str]) -> dict[str, tuple]:
    from matplotlib import colormaps

    names = list(dict.fromkeys(names))
    cmap = colormaps["tab10" if len(names) <= 10 else "tab20"]
    return {name: cmap(i % cmap.N) for i, name in enumerate(names)}


def _grid(count: int) -> tuple[int, int]:
    columns = 2 if count == 4 else min(count, 4)
    return math.ceil(count / columns), columns


def _plain_log_ticks(ax, axis: str = "y") -> None:
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
        target.set_minor_formatter(FuncFormatter(_two_and_five))
    else:
        target.set_minor_formatter(NullFormatter())


def _two_and_five(value: float, _position=None) -> str:
    """Minor-tick label: only 2 x 10^k and 5 x 10^k are labelled."""
    if value <= 0:
        return ""
    leading = round(value / 10 ** math.floor(math.log10(value)), 6)
    return f"{value:g}" if leading in (2.0, 5.0) else ""


def _ticks_at(ax, values, axis: str = "x") -> None:
    """Ticks exactly at ``values`` (few distinct values: sweep grids), plain labels."""
    from matplotlib.ticker import FixedLocator, NullLocator

    values = sorted(set(float(v) for v in values))
    target = ax.xaxis if axis == "x" else ax.yaxis
    target.set_major_locator(FixedLocator(values))
    target.set_minor_locator(NullLocator())
    target.set_major_formatter(lambda value, _: f"{value:g}")


def _panels(figure_module, count: int, width: float = 4.2, height: float = 3.3,
            min_width: float = 0.0):
    rows, columns = _grid(count)
    fig = figure_module.Figure(figsize=(max(width * columns, min_width), height * rows + 1.2),
                               layout="constrained")
    axes = fig.subplots(rows, columns, squeeze=False).ravel()
    for ax in axes[count:]:
        ax.set_visible(False)
    return fig, axes[:count]


def _legend_below(fig, handles, labels, columns: int = 4) -> None:
    """A legend under the panels, in at most ``columns`` columns, as many as the figure's
    width holds for the longest label (about 0.075 inch per character at this font size)."""
    if handles:
        column_width = 0.075 * max(len(label) for label in labels) + 0.7
        fits = int(fig.get_figwidth() // column_width)
        columns = max(1, min(columns, len(labels), fits))
        fig.legend(handles, labels, loc="outside lower center", ncol=columns,
                   fontsize="small", frameon=False, markerscale=1.5)


def _chunks(items: list, size: int) -> list[list]:
    return [items[i:i + size] for i in range(0, len(items), size)] or [[]]


# ---------------------------------------------------------------------------------------------
# utility versus eps0
# ---------------------------------------------------------------------------------------------
def plot_utility(tables, figure_module):
    frame = tables.get("utility")
    if frame is None or frame.empty:
        return []
    out = []
    for estimator, rows in frame.groupby("estimator", sort=True):
        key, x_label, x_of_point = _utility_axis(rows)
        rows = rows.assign(
            x=rows.point.map(x_of_point).astype(float),
            setting=[_setting_label(r, o, n, p, key) for r, o, n, p in
                     zip(rows.randomizer, rows.overrides, rows.n, rows.path, strict=True)],
        )
        metrics = list(dict.fromkeys(rows.metric))
        stats = (rows.groupby(["setting", "reference", "metric", "x"], sort=False)
                 .value.agg(["mean", "std", "count"]).reset_index())
        stats["se"] = stats["std"].fillna(0.0) / np.sqrt(stats["count"])
        colors = _colors(stats.setting)
        fig, axes = _panels(figure_module, len(metrics))
        handles, labels = [], []
        for ax, metric in zip(axes, metrics, strict=True):
            signed = metric == "error"
            for (setting, reference), line in stats[stats.metric == metric].groupby(
                    ["setting", "reference"], sort=False):
                line = line.sort_values("x")
                style = "-" if reference == "empirical" else "--"
                handle = ax.errorbar(line.x, line["mean"], yerr=line.se, fmt="o",
                                     linestyle=style, color=colors[setting], markersize=3,
                                     capsize=2, linewidth=1.2)
                label = f"{setting} ({reference})"
                if label not in labels:
                    handles.append(handle)
                    labels.append(label)
            if signed:
                ax.axhline(0.0, color="grey", linewidth=0.8)
            else:
                ax.set_yscale("log")
                _plain_log_ticks(ax, "y")
            positive = stats.x.min() > 0
            if stats.x.nunique() > 1 and positive and stats.x.max() / stats.x.min() >= 8:
                ax.set_xscale("log")
                _plain_log_ticks(ax, "x")
            if stats.x.nunique() <= 6:
                _ticks_at(ax, stats.x, "x")
            ax.set_xlabel(x_label)
            ax.set_ylabel(f"mean {metric}")
            ax.set_title(metric)
            ax.grid(True, which="major", alpha=0.3)
        fig.suptitle(f"{estimator}: error versus {x_label.split(' (')[0]} "
                     f"(mean over repetitions, bars: standard error)")
        _legend_below(fig, handles, labels, columns=2)
        out.append((f"utility_{estimator}", fig))
    return out


def _utility_axis(rows: pd.DataFrame) -> tuple[str | None, str, dict]:
    """The x axis of the utility figure: ``(override key or None, label, {point: x})``.

    eps0 when settings that differ only in eps0 take two values or more; otherwise the first
    numeric sweep key that takes two values or more (e.g. the fraction of conservative users
    of 003's experiments); otherwise eps0 (single points).
    """
    points = rows.drop_duplicates("point")
    eps = dict(zip(points.point, points.epsilon0, strict=True))
    labels = [_setting_label(r, o, n, p, None) for r, o, n, p in
              zip(points.randomizer, points.overrides, points.n, points.path, strict=True)]
    by_setting = pd.Series(points.epsilon0.to_numpy()).groupby(labels).nunique()
    if by_setting.max() >= 2:
        return None, "local budget eps0", eps
    parsed = {p: _overrides(o) for p, o in zip(points.point, points.overrides, strict=True)}
    keys = list(dict.fromkeys(k for values in parsed.values() for k in values))
    for key in keys:
        values = [parsed[p].get(key) for p in parsed]
        numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
        if numeric and len(set(values)) >= 2 and not key.endswith("epsilon0"):
            return key, key.split(".")[-1], {p: parsed[p][key] for p in parsed}
    return None, "local budget eps0", eps


def _overrides(text: str) -> dict:
    try:
        values = json.loads(text) if text else {}
    except ValueError:
        return {}
    return values if isinstance(values, dict) else {}


#: Sweep keys left out of setting labels: shown elsewhere (axis, figure, label head).
_LABEL_DROP = ("epsilon0", "n", "estimator.name", "randomizer.name")


def _setting_label(randomizer: str, overrides: str, n: int, path: str,
                   axis_key: str | None) -> str:
    drop = _LABEL_DROP + ((axis_key,) if axis_key else ())
    rest = short_overrides(overrides, drop=drop)
    label = f"{randomizer}, n={n}"
    if path != "reports":
        label += f", {path}"
    return f"{label}, {rest}" if rest else label


# ---------------------------------------------------------------------------------------------
# eps versus n per bound
# ---------------------------------------------------------------------------------------------
def bound_curves(tables) -> pd.DataFrame | None:
    """Long-form bound values: columns panel, bound, kind, status, n, epsilon (plus the
    empirical lower bound as bound ``empirical``); None when the run has none."""
    bounds = tables.get("bounds")
    if bounds is not None and not bounds.empty:
        name = "bound" if "bound" in bounds else "method" if "method" in bounds else None
        if name is None or not {"n", "delta", "epsilon"} <= set(bounds.columns):
            return None
        status = "statuses" if "statuses" in bounds else "status" if "status" in bounds else None
        curves = pd.DataFrame({
            "bound": bounds[name].astype(str),
            "kind": bounds["kind"] if "kind" in bounds else "upper",
            "status": bounds[status].fillna("") if status else "proven",
            "n": bounds.n, "epsilon": bounds.epsilon,
            **{c: bounds[c] for c in _CONTEXT if c in bounds},
        })
        curves["panel"] = _panel_labels(curves)
        curves = curves.dropna(subset=["n", "epsilon"])
        return curves[np.isfinite(curves.epsilon.astype(float))]
    audit = tables.get("audit")
    if audit is None or audit.empty:
        return None
    verdicts = audit[(audit.row_type == "verdict") & audit.level.isin(["shuffle", "pipeline"])]
    if verdicts.empty:
        return None
    context = {c: verdicts[c] for c in _CONTEXT if c in verdicts}
    curves = pd.DataFrame({
        "bound": verdicts.bound, "kind": verdicts.bound_kind,
        "status": verdicts.bound_status, "n": verdicts.n, "epsilon": verdicts.bound_epsilon,
        **context,
    })
    settings = verdicts.drop_duplicates(["point", "delta"])
    empirical = pd.DataFrame({
        "bound": "empirical", "kind": "empirical", "status": "", "n": settings.n,
        "epsilon": settings.epsilon_lb, **{c: settings[c] for c in context},
    })
    curves = pd.concat([curves, empirical], ignore_index=True)
    curves["panel"] = _panel_labels(curves)
    return curves.dropna(subset=["n", "epsilon"])


#: Setting columns carried along with bound values (for panel labels and the x axis).
_CONTEXT = ("point", "overrides", "randomizer", "epsilon0", "budget", "delta")


def _panel_labels(frame: pd.DataFrame, axis_key: str | None = None) -> list[str]:
    """One label per row: the setting without n (the x axis), or without ``axis_key`` (then
    also without the budget multiset, which changes along such an axis)."""
    labels = []
    drop = _LABEL_DROP + ((axis_key,) if axis_key else ())
    for _, row in frame.iterrows():
        parts = []
        if "randomizer" in frame:
            parts.append(str(row["randomizer"]))
        budget = str(row["budget"]) if "budget" in frame else ""
        if budget and not budget.startswith("constant"):
            if axis_key is None:
                parts.append(f"budgets {budget}")
        elif "epsilon0" in frame:
            parts.append(f"eps0={row['epsilon0']:g}")
        if "overrides" in frame:
            rest = short_overrides(row["overrides"], drop=drop)
            if rest:
                parts.append(rest)
        parts.append(f"delta={row['delta']:g}")
        labels.append(textwrap.fill(", ".join(parts), 60))
    return labels


def _bounds_axis(curves: pd.DataFrame) -> tuple[str | None, str]:
    """x axis of the bound figure: n when some panel has two values of n or more; otherwise
    the first numeric sweep key with two values or more (columns ``x`` and ``panel`` are set
    accordingly); returns (key or None, axis label)."""
    curves["x"] = curves.n.astype(float)
    if curves.groupby("panel").n.nunique().max() >= 2 or "overrides" not in curves:
        return None, "n (users shuffled together)"
    parsed = {o: _overrides(o) for o in curves.overrides.unique()}
    keys = list(dict.fromkeys(k for values in parsed.values() for k in values))
    for key in keys:
        values = [v.get(key) for v in parsed.values()]
        numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
        if numeric and len(set(values)) >= 2:
            curves["x"] = curves.overrides.map(lambda o, k=key: parsed[o][k]).astype(float)
            curves["panel"] = _panel_labels(curves, axis_key=key)
            return key, key.split(".")[-1]
    return None, "n (users shuffled together)"


def _is_caveated(status: str) -> bool:
    return bool(status) and status != "proven"


def plot_bounds_vs_n(tables, figure_module):
    curves = bound_curves(tables)
    if curves is None or curves.empty:
        return []
    curves = curves[curves.epsilon > 0].copy()
    key, x_label = _bounds_axis(curves)
    panels = list(dict.fromkeys(curves.panel))
    names = [b for b in dict.fromkeys(curves.bound) if b != "empirical"]
    colors = _colors(names)
    out = []
    groups = _chunks(panels, MAX_PANELS)
    for number, group in enumerate(groups, 1):
        fig, axes = _panels(figure_module, len(group), min_width=13.0)
        legend: dict[str, object] = {}
        for ax, panel in zip(axes, group, strict=True):
            rows = curves[curves.panel == panel]
            for bound, line in rows.groupby("bound", sort=False):
                line = line.sort_values("x")
                kind = line.kind.iloc[0]
                status = str(line.status.iloc[0] or "")
                if bound == "empirical":
                    (handle,) = ax.plot(line.x, line.epsilon, "^", color="black", markersize=6)
                    legend.setdefault("empirical lower bound (audit)", handle)
                    continue
                if kind == "lower":
                    style = dict(color="black" if bound == "exact-lower" else "grey",
                                 linestyle=":", marker="d")
                else:
                    style = dict(color=colors[bound], marker="o",
                                 linestyle="--" if _is_caveated(status) else "-")
                (handle,) = ax.plot(line.x, line.epsilon, markersize=3.5, linewidth=1.2,
                                    **style)
                caveat = f", {status}" if _is_caveated(status) else ""
                legend.setdefault(f"{bound} ({kind}{caveat})", handle)
            if rows.x.min() > 0 and (key is None or rows.x.max() / rows.x.min() >= 8):
                ax.set_xscale("log")
                _plain_log_ticks(ax, "x")
            ax.set_yscale("log")
            _plain_log_ticks(ax, "y")
            if rows.x.nunique() <= 6:
                _ticks_at(ax, rows.x, "x")
            ax.set_xlabel(x_label)
            ax.set_ylabel("central eps")
            ax.set_title(panel, fontsize="small")
            ax.grid(True, which="major", alpha=0.3)
        suffix = f" ({number}/{len(groups)})" if len(groups) > 1 else ""
        axis_name = "n" if key is None else x_label
        fig.suptitle(f"Central eps versus {axis_name}, per bound" + suffix)
        _legend_below(fig, list(legend.values()), list(legend), columns=3)
        name = f"bounds_eps_vs_{axis_name}" + (f"_{number}" if len(groups) > 1 else "")
        out.append((name, fig))
    return out


# ---------------------------------------------------------------------------------------------
# audit sandwiches
# ---------------------------------------------------------------------------------------------
def plot_audit_sandwich(tables, figure_module):
    audit = tables.get("audit")
    if audit is None or audit.empty:
        return []
    verdicts = audit[audit.row_type == "verdict"].copy()
    if verdicts.empty:
        return []
    verdicts["delta"] = verdicts.delta.fillna(0.0)
    deltas = sorted(verdicts.delta.unique())
    uppers = verdicts[(verdicts.bound_kind == "upper") & verdicts.bound_epsilon.notna()
                      & (verdicts.bound_epsilon > 0)]
    colors = _colors(uppers.bound)
    width = max(8.0, 0.95 * verdicts.point.nunique() + 2.0)
    fig = figure_module.Figure(figsize=(width, 4.2 * len(deltas) + 1.6), layout="constrained")
    axes = fig.subplots(len(deltas), 1, squeeze=False).ravel()  # one row per delta
    legend: dict[str, object] = {}
    for ax, delta in zip(axes, deltas, strict=True):
        rows = verdicts[verdicts.delta == delta]
        settings = rows.drop_duplicates("point").sort_values("point")
        x_of = {point: i for i, point in enumerate(settings.point)}
        for _, row in rows[rows.bound.isin(colors) & rows.bound_epsilon.notna()].iterrows():
            x = x_of[row.point]
            if not row.bound_epsilon > 0:
                continue
            handle = ax.scatter([x], [row.bound_epsilon], marker="_", s=260, linewidths=2,
                                color=colors[row.bound], zorder=2)
            legend.setdefault(f"{row.bound} (upper)", handle)
            if row.verdict == "violated":
                h = ax.scatter([x], [row.bound_epsilon], marker="x", s=60, color="red",
                               zorder=4)
                legend.setdefault("violated", h)
        exact = settings[settings.exact_lower.notna() & (settings.exact_lower > 0)]
        if not exact.empty:
            h = ax.scatter([x_of[p] for p in exact.point], exact.exact_lower, marker="D",
                           s=30, color="black", zorder=3)
            legend.setdefault("exact lower bound (000 Thm 14)", h)
        empirical = settings[settings.epsilon_lb.notna() & (settings.epsilon_lb > 0)]
        if not empirical.empty:
            confidence = empirical.confidence.dropna()
            level = f" at {confidence.iloc[0]:.0%} confidence" if not confidence.empty else ""
            h = ax.scatter([x_of[p] for p in empirical.point], empirical.epsilon_lb,
                           marker="^", s=40, color="tab:green", edgecolors="black", zorder=3)
            legend.setdefault(f"empirical lower bound{level}", h)
        ax.set_yscale("log")
        _plain_log_ticks(ax, "y")
        ax.set_xticks(range(len(settings)))
        ax.set_xticklabels([_sandwich_label(r) for _, r in settings.iterrows()],
                           fontsize="x-small")
        ax.set_xlim(-0.6, len(settings) - 0.4)
        ax.set_ylabel("eps")
        level = ", ".join(sorted(rows.level.dropna().unique()))
        ax.set_title(f"{level} level" + (f", delta = {delta:g}" if delta > 0 else ""),
                     fontsize="medium")
        ax.grid(True, axis="y", which="major", alpha=0.3)
    fig.suptitle("Audit: empirical lower bound <= exact lower bound <= upper bounds")
    _legend_below(fig, list(legend.values()), list(legend), columns=max(1, int(width // 3.4)))
    return [("audit_sandwich", fig)]


def _sandwich_label(row) -> str:
    """One line per sweep value (the randomizer, eps0 and n when there is no sweep)."""
    rest = short_overrides(row["overrides"])
    if rest:
        return "\n".join(rest.split(", "))
    return f"{row['randomizer']}\neps0={row['epsilon0']:g}\nn={row['n']}"


# ---------------------------------------------------------------------------------------------
# per-batch eps of pipeline runs
# ---------------------------------------------------------------------------------------------
def plot_batches(tables, figure_module):
    batches = tables.get("batches")
    if batches is None or batches.empty:
        return []
    released = batches[~batches.dropped.astype(bool)]
    if released.empty:
        return []
    has_epsilon = released.epsilon.notna().any()
    column = "epsilon" if has_epsilon else "honest_size"
    labels = {p: short_overrides(o) or f"point {p}" for p, o in
              released.drop_duplicates("point")[["point", "overrides"]].itertuples(index=False)}
    colors = _colors(labels.values())
    fig, axes = _panels(figure_module, 2, width=6.0, height=4.2)
    first = released[released.repetition == released.repetition.min()]
    handles = []
    for point, label in labels.items():
        rows = first[first.point == point].sort_values("release_time")
        (h,) = axes[0].plot(rows.release_time, rows[column], ".", markersize=3,
                            color=colors[label], alpha=0.8)
        handles.append(h)
        everything = released[released.point == point]
        axes[1].scatter(everything.honest_size, everything[column], s=6, color=colors[label],
                        alpha=0.5)
    ylabel = "central eps of the batch" if has_epsilon else "honest batch size"
    axes[0].set_xlabel("release time (s), first repetition")
    axes[1].set_xlabel("honest messages in the batch")
    axes[1].set_xscale("log")
    for ax in axes:
        ax.set_ylabel(ylabel)
        ax.set_yscale("log")
        _plain_log_ticks(ax, "y")
        ax.grid(True, which="major", alpha=0.3)
    _plain_log_ticks(axes[1], "x")
    bound = batches.bound.dropna()
    delta = batches.delta.dropna()
    what = (f" ({bound.iloc[0]}, delta = {delta.iloc[0]:g})" if has_epsilon and not bound.empty
            and not delta.empty else "")
    fig.suptitle(("Per-batch central eps" if has_epsilon else "Batch sizes") + what)
    _legend_below(fig, handles, list(labels.values()), columns=4)
    return [("batches_epsilon", fig)]
