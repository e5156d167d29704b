"""Per-batch central eps of pipeline runs (``batches_epsilon.png``).

Left: every released batch's eps (all repetitions) per sweep point, jittered sideways, with the
median marked, so points whose batches share values do not hide each other. Right: eps versus
the batch's honest size. The title says where the values come from (the configured bound, the
best proven bound by default, or the local budget without a delta: the table's
``epsilon_reason``)."""

from __future__ import annotations

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


@register_plot("batches", table="batches")
def plot_batches(tables, figure_module):
    from matplotlib.lines import Line2D

    batches = tables.get("batches")
    if batches is None or batches.empty:
        return []
    released = batches[~batches.dropped.astype(bool)]
    if released.empty:
        return []
    has_epsilon = released.epsilon.notna().any()
    column = "epsilon" if has_epsilon else "honest_size"
    released = released[released[column].notna()]
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
    return [("batches_epsilon", fig)]
