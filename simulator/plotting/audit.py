"""Audit sandwiches: empirical lower bound <= exact lower bound <= every upper bound.

One column per audited setting, one row of panels per delta. So that the columns stay
readable with many bounds, only the upper bounds that matter get a colour: those that are the
tightest proven upper bound at some setting, and those judged ``violated`` (red cross), side
by side within the column so that equal values (an upper bound on the exact lower bound) do
not hide each other. Every
other upper bound is a grey tick (solid: proven, light: with a caveat), named in the legend as
a group. An empirical lower bound of 0 (no event significant at the audit's confidence) is an
open triangle at the foot of the axis, not a point lost off the log axis.
"""

from __future__ import annotations

import pandas as pd

from . import common as c
from .kinds import register_plot

#: Grey of the upper bounds that get no colour: proven, and with a caveat.
OTHER_PROVEN, OTHER_CAVEATED = "0.45", "0.75"


def _highlighted(uppers: pd.DataFrame) -> list[str]:
    """The upper bounds drawn in colour: the tightest proven one of some (setting, delta),
    then those judged violated somewhere."""
    proven = uppers[uppers.bound_status.fillna("proven") == "proven"]
    tightest = proven.loc[proven.groupby(["point", "delta"]).bound_epsilon.idxmin()]
    violated = uppers[uppers.verdict == "violated"]
    return list(dict.fromkeys([*tightest.bound, *violated.bound]))


@register_plot("audit_sandwich", table="audit")
def plot_audit_sandwich(tables, figure_module):
    audit = tables.get("audit")
    if audit is None or audit.empty:
        return
    verdicts = audit[audit.row_type == "verdict"].copy()
    if verdicts.empty:
        return
    verdicts["delta"] = verdicts.delta.fillna(0.0)
    deltas = sorted(verdicts.delta.unique())
    uppers = verdicts[(verdicts.bound_kind == "upper") & verdicts.bound_epsilon.notna()
                      & (verdicts.bound_epsilon > 0)]
    colors = c.colors(_highlighted(uppers))
    width = max(8.0, 0.95 * verdicts.point.nunique() + 2.0)
    fig = figure_module.Figure(figsize=(width, 4.2 * len(deltas) + 1.6), layout="constrained")
    axes = fig.subplots(len(deltas), 1, squeeze=False).ravel()  # one row per delta
    legend: dict[str, object] = {}
    others: set[str] = set()
    for ax, delta in zip(axes, deltas, strict=True):
        rows = verdicts[verdicts.delta == delta]
        settings = rows.drop_duplicates("point").sort_values("point")
        x_of = {point: i for i, point in enumerate(settings.point)}
        here = uppers[uppers.delta == delta]
        _draw_uppers(ax, here, x_of, colors, legend, others)
        _draw_lowers(ax, settings, x_of, legend)
        ax.set_yscale("log")
        c.plain_log_ticks(ax, "y")
        ax.set_xticks(range(len(settings)))
        ax.set_xticklabels([_sandwich_label(r) for _, r in settings.iterrows()],
                           fontsize="x-small")
        ax.set_xlim(-0.6, len(settings) - 0.4)
        ax.set_ylabel("eps")
        level = ", ".join(sorted(rows.level.dropna().unique()))
        ax.set_title(f"{level} level" + (f", delta = {delta:g}" if delta > 0 else ""),
                     fontsize="medium")
        ax.grid(True, axis="y", which="major", alpha=0.3)
    fig.suptitle("Audit: empirical lower bound <= exact lower bound <= upper bounds"
                 + (f"\n(coloured: the tightest proven upper bound of some setting and the "
                    f"bounds judged violated; grey: the {len(others)} other upper bounds)"
                    if others else ""))
    c.legend_below(fig, list(legend.values()), list(legend), columns=max(1, int(width // 3.4)))
    yield "audit_sandwich", fig


def _draw_uppers(ax, uppers: pd.DataFrame, x_of: dict, colors: dict, legend: dict,
                 others: set) -> None:
    """Every upper bound of one delta: a coloured tick when highlighted, else grey."""
    grey = uppers[~uppers.bound.isin(colors)]
    for caveated, part in grey.groupby(grey.bound_status.fillna("proven") != "proven"):
        if part.empty:
            continue
        others.update(part.bound)
        tone = OTHER_CAVEATED if caveated else OTHER_PROVEN
        handle = ax.scatter(part.point.map(x_of), part.bound_epsilon, marker="_", s=160,
                            linewidths=1.2, color=tone, zorder=1)
        legend.setdefault("other upper bounds" + (" with a caveat" if caveated else
                                                  ", proven"), handle)
    step = min(0.2, 0.7 / max(1, len(colors)))
    offsets = {bound: (i - (len(colors) - 1) / 2) * step for i, bound in enumerate(colors)}
    for bound, part in uppers[uppers.bound.isin(colors)].groupby("bound", sort=False):
        # side by side: bounds with equal values (the tightest proven one on the exact lower
        # bound) stay visible
        handle = ax.scatter(part.point.map(x_of) + offsets[bound], part.bound_epsilon,
                            marker="_", s=max(40, 600 * step), linewidths=2.4,
                            color=colors[bound], zorder=2)
        status = str(part.bound_status.iloc[0] or "")
        caveat = f"; {status}" if status and status != "proven" else ""
        legend.setdefault(f"{bound} (upper{caveat})", handle)
    violated = uppers[uppers.verdict == "violated"]
    if not violated.empty:
        handle = ax.scatter(violated.point.map(x_of) + violated.bound.map(offsets).fillna(0.0),
                            violated.bound_epsilon, marker="x", s=60,
                            color="red", zorder=4)
        legend.setdefault("violated (an upper bound below a lower bound)", handle)


def _draw_lowers(ax, settings: pd.DataFrame, x_of: dict, legend: dict) -> None:
    """The exact lower bound and the empirical one (0: an open triangle at the axis foot)."""
    exact = settings[settings.exact_lower.notna() & (settings.exact_lower > 0)]
    if not exact.empty:
        handle = ax.scatter(exact.point.map(x_of), exact.exact_lower, marker="D", s=30,
                            color="black", zorder=3)
        legend.setdefault("exact lower bound (000 Thm 14)", handle)
    measured = settings[settings.epsilon_lb.notna()]
    confidence = measured.confidence.dropna()
    level = f" at {confidence.iloc[0]:.0%} confidence" if not confidence.empty else ""
    positive = measured[measured.epsilon_lb > 0]
    if not positive.empty:
        handle = ax.scatter(positive.point.map(x_of), positive.epsilon_lb, marker="^", s=40,
                            color="tab:green", edgecolors="black", zorder=3)
        legend.setdefault(f"empirical lower bound{level}", handle)
    zero = measured[measured.epsilon_lb <= 0]
    if not zero.empty:
        handle = ax.scatter(zero.point.map(x_of), [0.03] * len(zero), marker="v", s=40,
                            facecolors="white", edgecolors="tab:green", linewidths=1.5,
                            transform=ax.get_xaxis_transform(), clip_on=False, zorder=3)
        legend.setdefault(f"empirical lower bound = 0 (no event significant{level}; "
                          "drawn at the foot of the axis)", handle)


def _sandwich_label(row) -> str:
    """One line per sweep value (the randomizer, eps0 and n when there is no sweep)."""
    rest = c.short_overrides(row["overrides"])
    if rest:
        return "\n".join(rest.split(", "))
    return f"{row['randomizer']}\neps0={row['epsilon0']:g}\nn={row['n']}"
