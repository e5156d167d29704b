"""Per-batch central eps of pipeline runs (``batches_epsilon.png``).

Left: every released batch's eps (all repetitions) per sweep point, jittered sideways, with the
median marked, so points whose batches share values do not hide each other. Right: eps versus
the batch's honest size. The title says where the values come from (the configured bound, the
best proven bound by default, or the local budget without a delta: the table's
``epsilon_reason``)."""

from __future__ import annotations

import re

import numpy as np

from . import common as c
from .kinds import register_plot


def _source(released) -> str:
    bounds = sorted(released.bound.dropna().unique()) if "bound" in released else []
    delta = released.delta.dropna() if "delta" in released else []
    reason = released.epsilon_reason.fillna("") if "epsilon_reason" in released else None
    at = f", delta = {delta.iloc[0]:g}" if len(delta) and delta.iloc[0] > 0 else ""
    if reason is not None and reason.str.contains("best proven").any():
        return f"best proven upper bound{at}: {', '.join(bounds)}"
    if len(delta) and delta.iloc[0] == 0:
        return "local budget, pure DP: no central delta in the scenario"
    return f"{', '.join(bounds)}{at}" if bounds else ""


#: Most distinct eps values per sweep point for the compact figure (:func:`_few_values`).
FEW_VALUES = 3


def _few_values(figure_module, released):
    """The figure when every sweep point's batches share at most :data:`FEW_VALUES` eps values
    (the bound evaluated once per point, e.g. at the smallest batch): a scatter would leave
    the axes empty between two lines. Left: each point's eps values as bars from 0, labelled
    with the value and its number of batches; right: what does vary, the honest batch sizes
    (histogram per point), counted from the size the eps was evaluated at when the table says
    it (the bound holds for every larger batch)."""
    labels = {p: c.short_overrides(o) or f"point {p}" for p, o in
              released.drop_duplicates("point")[["point", "overrides"]].itertuples(index=False)}
    colors = c.colors(labels.values())
    width = max(5.5, 1.2 * len(labels) + 2.0)
    fig, axes = c.panels(figure_module, 2, width=width, height=4.2)
    ticks, names = [], []
    position = 0
    for point, label in labels.items():
        rows = released[released.point == point]
        counts = rows.epsilon.round(12).value_counts().sort_index()
        for value, count in counts.items():
            axes[0].bar(position, value, width=0.7, color=colors[label])
            axes[0].annotate(f"{value:.4g}\n({count} batches)", (position, value),
                             xytext=(0, 3), textcoords="offset points", ha="center",
                             va="bottom", fontsize="x-small")
            ticks.append(position)
            names.append(label.replace(", ", "\n"))
            position += 1
        sizes = rows.honest_size.to_numpy(dtype=float)
        evaluated = _evaluated_at(released)
        if evaluated is not None:
            sizes = sizes - evaluated[point]
        axes[1].hist(sizes, bins=min(30, max(5, np.unique(sizes).size)), color=colors[label],
                     alpha=0.8, histtype="step", linewidth=1.6, label=label)
    axes[0].set_xticks(ticks)
    axes[0].set_xticklabels(names, fontsize="x-small")
    axes[0].set_xlim(-0.6, position - 0.4)
    axes[0].set_ylim(0, released.epsilon.max() * 1.25)
    axes[0].set_ylabel("central eps of the batch")
    axes[0].set_xlabel("sweep point (one bar per distinct eps value)")
    if _evaluated_at(released) is not None:
        axes[1].set_xlabel("honest messages in the batch beyond the size eps was evaluated at")
        axes[1].axvline(0, color="black", linewidth=1)
    else:
        axes[1].set_xlabel("honest messages in the batch")
    axes[1].set_ylabel("batches (all repetitions)")
    for ax in axes:
        ax.grid(True, axis="y", alpha=0.3)
    what = _source(released)
    fig.suptitle("Per-batch central eps: one value per sweep point"
                 + (f"\n({what})" if what else ""))
    c.legend_below(fig, *axes[1].get_legend_handles_labels(), columns=4)
    return fig


def _evaluated_at(released) -> dict | None:
    """Per sweep point, the batch size its eps was evaluated at, from ``epsilon_reason``
    (``... evaluated at 8933 users``); None unless every point names exactly one."""
    if "epsilon_reason" not in released:
        return None
    out = {}
    for point, reasons in released.groupby("point").epsilon_reason:
        found = {m.group(1) for m in (re.search(r"evaluated at (\d+) users", str(text))
                                      for text in reasons.unique()) if m}
        if len(found) != 1:
            return None
        out[point] = float(found.pop())
    return out


@register_plot("batches", table="batches")
def plot_batches(tables, figure_module):
    from matplotlib.lines import Line2D

    batches = tables.get("batches")
    if batches is None or batches.empty:
        return
    released = batches[~batches.dropped.astype(bool)]
    if released.empty:
        return
    has_epsilon = released.epsilon.notna().any()
    column = "epsilon" if has_epsilon else "honest_size"
    released = released[released[column].notna()]
    if has_epsilon and released.groupby("point").epsilon.nunique().max() <= FEW_VALUES:
        yield "batches_epsilon", _few_values(figure_module, released)
        return
    labels = {p: c.short_overrides(o) or f"point {p}" for p, o in
              released.drop_duplicates("point")[["point", "overrides"]].itertuples(index=False)}
    colors = c.colors(labels.values())
    width = max(6.0, 0.8 * len(labels) + 1.5)
    fig, axes = c.panels(figure_module, 2, width=width, height=4.4)
    rng = np.random.default_rng(0)  # jitter only
    handles = []
    values = released[column].astype(float)
    log = values.min() > 0 and values.max() / values.min() >= 10
    for i, (point, label) in enumerate(labels.items()):
        rows = released[released.point == point]
        y = rows[column].astype(float).to_numpy()
        x = i + rng.uniform(-0.3, 0.3, size=y.size)
        marker = "os^vD<>p"[i % 8]
        axes[0].scatter(x, y, s=5, color=colors[label], alpha=0.4, linewidths=0)
        axes[0].plot([i - 0.38, i + 0.38], [np.median(y)] * 2, color="black", linewidth=1.5)
        axes[1].scatter(rows.honest_size, y, s=8, color=colors[label], alpha=0.5, linewidths=0,
                        marker=marker)
        handles.append(Line2D([], [], color=colors[label], marker=marker, linestyle="",
                              markersize=5))  # opaque legend entries
    axes[0].set_xticks(range(len(labels)))
    axes[0].set_xticklabels([label.replace(", ", "\n") for label in labels.values()],
                            fontsize="x-small")
    axes[0].set_xlim(-0.6, len(labels) - 0.4)
    axes[0].set_xlabel("sweep point (black bar: median over the batches of all repetitions)")
    axes[1].set_xlabel("honest messages in the batch")
    if released.honest_size.min() > 0 and released.honest_size.max() >= 10 * max(
            1, released.honest_size.min()):
        axes[1].set_xscale("log")
        c.plain_log_ticks(axes[1], "x")
    ylabel = "central eps of the batch" if has_epsilon else "honest batch size"
    for ax in axes:
        ax.set_ylabel(ylabel)
        if log:
            ax.set_yscale("log")
            c.plain_log_ticks(ax, "y")
        ax.grid(True, which="major", alpha=0.3)
    what = _source(released) if has_epsilon else ""
    fig.suptitle(("Per-batch central eps" if has_epsilon else "Batch sizes")
                 + (f"\n({what})" if what else ""))
    c.legend_below(fig, handles, list(labels.values()), columns=4)
    yield "batches_epsilon", fig
