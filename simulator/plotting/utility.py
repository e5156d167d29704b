"""Utility figures: every error metric versus eps0 (or the swept number), and one metric versus
every numeric swept key."""

from __future__ import annotations

import numpy as np
import pandas as pd

from . import common as c
from .kinds import register_plot

#: The metric of the utility-versus-swept-key figures: defined for every estimator (the mean
#: absolute error over the estimated coordinates; docs/results.md), 003's utility measure.
KEY_METRIC = "mae"
#: Metrics drawn on a linear axis around 0 (signed).
SIGNED = ("error",)


def _setting_label(randomizer: str, overrides: str, n: int, path: str,
                   drop: tuple[str, ...] = (), estimator: str | None = None) -> str:
    rest = c.short_overrides(overrides, drop=c.LABEL_DROP + tuple(drop))
    label = randomizer if estimator is None else f"{estimator}, {randomizer}"
    if not any(c.short_key(key) == "n" for key in drop):  # n on the x axis: not a line key
        label += f", n={n}"
    if path != "reports":
        label += f", {path}"
    return f"{label}, {rest}" if rest else label


def _draw_lines(ax, stats: pd.DataFrame, colors: dict, handles: list, labels: list,
                signed: bool) -> None:
    """One line per (setting, reference): solid empirical, dashed population; standard-error
    bars when the points have two repetitions or more (single draws: markers only)."""
    for (setting, reference), line in stats.groupby(["setting", "reference"], sort=False):
        line = line.sort_values("x")
        style = "-" if reference == "empirical" else "--"
        bars = line.se if (line["count"] >= 2).any() else None
        handle = ax.errorbar(line.x, line["mean"], yerr=bars, fmt="o", linestyle=style,
                             color=colors[setting], markersize=3, capsize=2, linewidth=1.2)
        label = f"{setting} ({reference})"
        if label not in labels:
            handles.append(handle)
            labels.append(label)
    if signed:
        ax.axhline(0.0, color="grey", linewidth=0.8)
    elif (stats["mean"] > 0).all():
        ax.set_yscale("log")
        c.plain_log_ticks(ax, "y")


def _what(counts: pd.Series) -> tuple[str, str]:
    """(y-label prefix, subtitle) of a utility figure, from the repetitions per sweep point."""
    if counts.max() < 2:
        return "", "one repetition per point: single draws, no error bars"
    return "mean ", f"mean over {c.repetitions_text(counts)}, bars: standard error"


def _single_draws_left_out(counts: pd.Series, x: pd.Series) -> c.LeftOut | None:
    """Single draws (one repetition per point) on curves of fewer than
    ``MIN_SINGLE_DRAW_POINTS`` x values show noise, not a trend: the figure is left out."""
    if counts.max() >= 2 or x.nunique() >= c.MIN_SINGLE_DRAW_POINTS:
        return None
    return c.LeftOut(f"one repetition per point and {x.nunique()} values on the x axis: "
                     "single noisy draws (run with repetitions >= 2 for means and errors)")


def _x_axis(ax, x: pd.Series, label: str) -> None:
    positive = x.min() > 0
    if x.nunique() > 1 and positive and x.max() / x.min() >= 8:
        ax.set_xscale("log")
        c.plain_log_ticks(ax, "x")
    if x.nunique() <= 6:
        c.ticks_at(ax, x, "x")
    ax.set_xlabel(label)
    ax.grid(True, which="major", alpha=0.3)


def _stats(rows: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    stats = rows.groupby(by, sort=False).value.agg(["mean", "std", "count"]).reset_index()
    stats["se"] = stats["std"].fillna(0.0) / np.sqrt(stats["count"])
    return stats


def _repetitions(rows: pd.DataFrame) -> pd.Series:
    """Repetitions per sweep point."""
    return rows.groupby("point").repetition.nunique()


# ---------------------------------------------------------------------------------------------
# every metric versus eps0 (or the swept number), one figure per estimator
# ---------------------------------------------------------------------------------------------
@register_plot("utility", table="utility")
def plot_utility(tables, figure_module):
    frame = tables.get("utility")
    if frame is None or frame.empty:
        return
    for estimator, rows in frame.groupby("estimator", sort=True):
        key, x_label, x_of_point = _utility_axis(rows)
        drop = (key,) if key else ()
        rows = rows.assign(
            x=rows.point.map(x_of_point).astype(float),
            setting=[_setting_label(r, o, n, p, drop) for r, o, n, p in
                     zip(rows.randomizer, rows.overrides, rows.n, rows.path, strict=True)],
        )
        counts = _repetitions(rows)
        left_out = _single_draws_left_out(counts, rows.x)
        if left_out is not None:
            yield f"utility_{estimator}", left_out
            continue
        prefix, what = _what(counts)
        metrics = list(dict.fromkeys(rows.metric))
        stats = _stats(rows, ["setting", "reference", "metric", "x"])
        colors = c.colors(stats.setting)
        fig, axes = c.panels(figure_module, len(metrics))
        handles, labels = [], []
        for ax, metric in zip(axes, metrics, strict=True):
            _draw_lines(ax, stats[stats.metric == metric], colors, handles, labels,
                        signed=metric in SIGNED)
            _x_axis(ax, stats.x, x_label)
            ax.set_ylabel(f"{prefix}{metric}")
            ax.set_title(metric)
        fig.suptitle(f"{estimator}: error versus {x_label.split(' (')[0]}\n({what})")
        c.legend_below(fig, handles, labels, columns=2)
        yield f"utility_{estimator}", fig


def _utility_axis(rows: pd.DataFrame) -> tuple[str | None, str, dict]:
    """The x axis of the utility figure: ``(override key or None, label, {point: x})``.

    eps0 when settings that differ only in eps0 take two values or more; otherwise the first
    numeric sweep key that takes two values or more (e.g. the fraction of conservative users
    of 003's experiments); otherwise eps0 (single points).
    """
    points = rows.drop_duplicates("point")
    eps = dict(zip(points.point, points.epsilon0, strict=True))
    labels = [_setting_label(r, o, n, p) for r, o, n, p in
              zip(points.randomizer, points.overrides, points.n, points.path, strict=True)]
    by_setting = pd.Series(points.epsilon0.to_numpy()).groupby(labels).nunique()
    eps_label = c.epsilon0_label(all(c.is_multi_message(r) for r in points.randomizer.unique()))
    if by_setting.max() >= 2:
        return None, eps_label, eps
    parsed = {p: c.parse_overrides(o) for p, o in zip(points.point, points.overrides,
                                                        strict=True)}
    for key in c.numeric_swept_keys(points.overrides):
        if not key.endswith("epsilon0"):
            return key, c.short_key(key), {p: parsed[p][key] for p in parsed}
    return None, eps_label, eps


# ---------------------------------------------------------------------------------------------
# one metric versus every numeric swept key
# ---------------------------------------------------------------------------------------------
@register_plot("utility_vs_keys", table="utility")
def plot_utility_vs_keys(tables, figure_module):
    """``utility_mae_vs_<key>``: the mean ``mae`` versus each numeric swept key, one panel per
    value of the other numeric swept keys, one line per remaining setting (estimator,
    randomizer, other sweep values) and reference. Left out when the run sweeps one key only
    and the per-estimator figure already has it on its x axis."""
    frame = tables.get("utility")
    if frame is None or frame.empty or KEY_METRIC not in set(frame.metric):
        return
    rows = frame[frame.metric == KEY_METRIC]
    keys = c.numeric_swept_keys(rows.overrides)
    parsed = {o: c.parse_overrides(o) for o in rows.overrides.unique()}
    swept = {k for values in parsed.values() for k in values}
    if len(swept) <= 1 and len(keys) <= 1:
        return  # the per-estimator figure is this figure
    counts = _repetitions(rows)
    prefix, what = _what(counts)
    for key in keys:
        name = f"utility_{KEY_METRIC}_vs_{c.short_key(key)}"
        others = [k for k in keys if k != key]
        view = rows.assign(
            x=rows.overrides.map(lambda o, k=key: parsed[o][k]).astype(float),
            panel=rows.overrides.map(lambda o, ks=tuple(others): ", ".join(
                f"{c.short_key(k)}={c.number(parsed[o][k])}" for k in ks)),
            setting=[_setting_label(r, o, n, p, tuple(keys), e) for r, o, n, p, e in zip(
                rows.randomizer, rows.overrides, rows.n, rows.path, rows.estimator,
                strict=True)],
        )
        left_out = _single_draws_left_out(counts, view.x)
        if left_out is not None:
            yield name, left_out
            continue
        stats = _stats(view, ["panel", "setting", "reference", "x"])
        colors = c.colors(stats.setting)
        panel_names = list(dict.fromkeys(stats.panel))
        groups = c.chunks(panel_names, c.MAX_PANELS)
        for number, group in enumerate(groups, 1):
            fig, axes = c.panels(figure_module, len(group))
            handles, labels = [], []
            for ax, panel in zip(axes, group, strict=True):
                part = stats[stats.panel == panel]
                _draw_lines(ax, part, colors, handles, labels, signed=False)
                _x_axis(ax, part.x, c.short_key(key))
                ax.set_ylabel(f"{prefix}{KEY_METRIC}")
                if panel:
                    ax.set_title(panel, fontsize="small")
            suffix = f" ({number}/{len(groups)})" if len(groups) > 1 else ""
            fig.suptitle(f"{KEY_METRIC} (mean absolute error) versus {c.short_key(key)}"
                         f"{suffix}\n({what})")
            c.legend_below(fig, handles, labels, columns=2)
            yield name + (f"_{number}" if len(groups) > 1 else ""), fig
