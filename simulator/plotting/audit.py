"""Audit sandwiches: empirical lower bound <= exact lower bound <= every upper bound."""

from __future__ import annotations

from . import common as c
from .kinds import register_plot


@register_plot("audit_sandwich", table="audit")
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
    colors = c.colors(uppers.bound)
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
            status = str(row.bound_status or "")
            caveat = f"; {status}" if status and status != "proven" else ""
            legend.setdefault(f"{row.bound} (upper{caveat})", handle)
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
    fig.suptitle("Audit: empirical lower bound <= exact lower bound <= upper bounds")
    c.legend_below(fig, list(legend.values()), list(legend), columns=max(1, int(width // 3.4)))
    return [("audit_sandwich", fig)]


def _sandwich_label(row) -> str:
    """One line per sweep value (the randomizer, eps0 and n when there is no sweep)."""
    rest = c.short_overrides(row["overrides"])
    if rest:
        return "\n".join(rest.split(", "))
    return f"{row['randomizer']}\neps0={row['epsilon0']:g}\nn={row['n']}"
