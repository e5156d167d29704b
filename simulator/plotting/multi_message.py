"""``multi_message_extra_amplification.png``: 001 Figs. 3 and 4 (Sec. 8.2) from a ``bounds``
table of a multi-message randomizer swept over its target eps' (``epsilon0``).

001 plots the *extra amplification ratio* eps'/eps (base-2 logarithm) against eps', where eps'
is the privacy the protocol's original analysis promises for its parameters and eps the bound's
value. One panel per setting (randomizer, n, delta), one line per bound: solid proven upper
bounds, dashed the variation-ratio bound (it relies on the stronger-clone reduction), dotted
the exact lower bound (its ratio is the most any upper bound can show).
"""

from __future__ import annotations

import numpy as np

from . import common as c
from .kinds import register_plot


@register_plot("extra_amplification", table="bounds")
def plot_extra_amplification(tables, figure_module):
    bounds = tables.get("bounds")
    if bounds is None or bounds.empty or not {"randomizer", "epsilon0", "epsilon",
                                               "method", "n", "delta"} <= set(bounds.columns):
        return
    rows = bounds[[c.is_multi_message(r) for r in bounds.randomizer]]
    rows = rows[np.isfinite(rows.epsilon.astype(float)) & (rows.epsilon > 0)]
    if rows.empty or rows.epsilon0.nunique() < 2:
        return
    rows = rows.assign(ratio=np.log2(rows.epsilon0 / rows.epsilon))
    keys = list(dict.fromkeys(zip(rows.randomizer, rows.n, rows.delta, strict=True)))
    names = list(dict.fromkeys(rows.method))
    colors, shapes = c.colors(names), c.markers(names)
    fig, axes = c.panels(figure_module, len(keys), min_width=7.5)
    legend: dict[str, object] = {}
    for ax, (randomizer, n, delta) in zip(axes, keys, strict=True):
        panel = rows[(rows.randomizer == randomizer) & (rows.n == n) & (rows.delta == delta)]
        for method, line in panel.groupby("method", sort=False):
            line = line.drop_duplicates("epsilon0").sort_values("epsilon0")
            kind = str(line.kind.iloc[0])
            status = str(line.status.iloc[0])
            style = ":" if kind == "lower" else "-" if status == "proven" else "--"
            (handle,) = ax.plot(line.epsilon0, line.ratio, style, color=colors[method],
                                marker="d" if kind == "lower" else shapes[method],
                                markersize=4.5 if status == "proven" else 6.5,
                                markerfacecolor="none",
                                zorder=1.5 if kind == "lower" else 2 if status == "proven"
                                else 2.5)  # caveated over proven: its dashes show
            caveat = "" if status == "proven" else ", " + status.split(",")[0].replace(
                "relies-on-stronger-clone-reduction", "stronger-clone reduction")
            label = f"{method.removeprefix('multi-message-')} ({kind}{caveat})"
            handle.set_label(label)
            legend.setdefault(label, handle)
        ax.set_title(f"{randomizer}, n = {n:g}, delta = {delta:g}", fontsize="small")
        ax.set_xlabel(c.epsilon0_label(True))
        ax.set_ylabel("log2(eps' / eps)")
        ax.grid(True, alpha=0.3)
    fig.suptitle("Extra amplification over the protocol's own analysis (001 Figs. 3-4)\n"
                 "eps': the central target the parameters were chosen for; eps: the bound")
    c.legend_below(fig, list(legend.values()), list(legend), columns=2)
    yield "multi_message_extra_amplification", fig
