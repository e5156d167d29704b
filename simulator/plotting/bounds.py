"""Central eps versus n (or the swept number) per bound, from a ``bounds`` table or the audit's
verdict rows.

Panels are keyed by the setting *without* the x-axis variable: the sweep values other than the
x key (and never n, the estimator, or the budget multiset, whose group sizes change with n), and
delta. Rows that describe another protocol (``mechanism`` of the bounds table says
``baseline ...``, e.g. ``baseline-min-budget``: every user at the smallest budget) are drawn
dash-dotted in grey and labelled ``other protocol``, never as an upper bound of the mechanism.
"""

from __future__ import annotations

import re
import textwrap

import numpy as np
import pandas as pd

from . import common as c
from .kinds import register_plot

#: Setting columns carried along with bound values (for panel keys, labels and the x axis).
CONTEXT = ("point", "overrides", "randomizer", "epsilon0", "budget", "delta", "mechanism",
           "rounds")
#: Mechanisms of the bounds table that are *not* the scenario's mechanism.
OTHER_PROTOCOL = "other protocol"
TAGGED = "tagged"


def role(mechanism) -> str:
    """``main``, ``other protocol`` (a baseline protocol: not a bound on this mechanism) or
    ``tagged`` (the privacy of tagged reports, the weighted estimators' protocol)."""
    text = str(mechanism or "").lower()
    if text.startswith("baseline") or "another protocol" in text or "other protocol" in text:
        return OTHER_PROTOCOL
    if "tagged" in text:
        return TAGGED
    return "main"


def bound_curves(tables) -> pd.DataFrame | None:
    """Long-form bound values: columns panel, bound, kind, status, role, n, epsilon (plus the
    empirical lower bound as bound ``empirical``); None when the run has none. ``panel`` is
    the setting without n."""
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
            **{col: bounds[col] for col in CONTEXT if col in bounds},
        })
        curves["role"] = [role(m) for m in curves.get("mechanism", [""] * len(curves))]
        curves = curves.dropna(subset=["n", "epsilon"])
        curves = curves[np.isfinite(curves.epsilon.astype(float))].copy()
        curves["panel"], curves["panel_key"] = _panels_without(curves, None)
        return curves
    audit = tables.get("audit")
    if audit is None or audit.empty:
        return None
    verdicts = audit[(audit.row_type == "verdict") & audit.level.isin(["shuffle", "pipeline"])]
    if verdicts.empty:
        return None
    context = {col: verdicts[col] for col in CONTEXT if col in verdicts}
    curves = pd.DataFrame({
        "bound": verdicts.bound, "kind": verdicts.bound_kind,
        "status": verdicts.bound_status, "n": verdicts.n, "epsilon": verdicts.bound_epsilon,
        **context,
    })
    settings = verdicts.drop_duplicates(["point", "delta"])
    empirical = pd.DataFrame({
        "bound": "empirical", "kind": "empirical", "status": "", "n": settings.n,
        "epsilon": settings.epsilon_lb, **{col: settings[col] for col in context},
    })
    curves = pd.concat([curves, empirical], ignore_index=True)
    curves["role"] = "main"
    curves = curves.dropna(subset=["n", "epsilon"]).copy()
    curves["panel"], curves["panel_key"] = _panels_without(curves, None)
    return curves


def budget_shares(budget: str) -> str:
    """A budget multiset label without its n-dependent counts, to follow the word "budgets":
    ``5400 x 0.1, 3700 x 0.5, 900 x 1`` -> ``54% x 0.1, 37% x 0.5, 9% x 1``; ``10000 distinct
    budgets in [0.010495, 0.999505]`` -> ``in [0.0105, 1]`` (3 significant digits)."""
    parts = re.findall(r"(\d+) x ([^,]+)", budget)
    if parts:
        total = sum(int(count) for count, _ in parts)
        return ", ".join(f"{100 * int(count) / total:.3g}% x {value.strip()}"
                         for count, value in parts)
    text = re.sub(r"^\d+ distinct budgets\s*", "", budget)
    return re.sub(r"\d+\.\d+(?:e-?\d+)?", lambda m: f"{float(m.group()):.3g}", text)


def _panels_without(frame: pd.DataFrame, axis_key: str | None) -> tuple[list[str], list[str]]:
    """(label, key) per row: the setting without the x-axis variable (n when ``axis_key`` is
    None, else ``axis_key``; n is then part of the setting). The key comes from the sweep
    values (when the table has them) and delta, so that nothing that varies with the x axis
    (the budget multiset's group sizes vary with n) splits a curve."""
    columns = [col for col in ("randomizer", "budget", "epsilon0", "overrides", "delta",
                               "rounds", "n") if col in frame]
    settings = frame[columns].drop_duplicates()
    found: dict[tuple, tuple[str, str]] = {}
    for row in settings.itertuples(index=False):
        found[tuple(row)] = _panel_of(row._asdict(), axis_key)
    pairs = [found[tuple(row)] for row in frame[columns].itertuples(index=False)]
    return [label for label, _ in pairs], [key for _, key in pairs]


def _panel_of(row: dict, axis_key: str | None) -> tuple[str, str]:
    """(label, key) of one setting (:func:`_panels_without`)."""
    drop = c.LABEL_DROP + ((axis_key,) if axis_key else ())
    budget_axis = bool(axis_key) and "budget" in axis_key
    parts = []
    if "randomizer" in row:
        parts.append(str(row["randomizer"]))
    budget = str(row["budget"]) if "budget" in row else ""
    if budget and not budget.startswith("constant"):
        if not budget_axis:
            parts.append(f"budgets {budget_shares(budget)}")
    elif "epsilon0" in row and not (axis_key or "").endswith("epsilon0"):
        parts.append(f"eps0={row['epsilon0']:g}")
    if axis_key is not None and "n" in row:
        parts.append(f"n={int(row['n'])}")
    if "overrides" in row:
        rest = c.short_overrides(row["overrides"], drop=drop)
        if rest:
            parts.append(rest)
    parts.append(f"delta={row['delta']:g}")
    rounds = ""
    if "rounds" in row and not (axis_key or "").endswith("rounds"):
        rounds = f" T={int(row['rounds'])}"
        if int(row["rounds"]) != 1:
            parts.append(f"over T={int(row['rounds'])} rounds")
    label = textwrap.fill(", ".join(parts), 60)
    if "overrides" not in row:
        return label, label
    key_drop = ("estimator.name",) + ((axis_key,) if axis_key else ("n",))
    n = f" n={int(row['n'])}" if axis_key is not None and "n" in row else ""
    return label, f"{c.without(row['overrides'], key_drop)} delta={row['delta']!r}{rounds}{n}"


def _bounds_axis(curves: pd.DataFrame) -> tuple[str | None, str]:
    """x axis of the bound figure: the swept number with the most values, n on a tie (its
    values counted within a panel, since a budget multiset's label changes with n), then
    the sweep keys in file order (columns ``x``, ``panel`` and ``panel_key`` are set
    accordingly); returns (key or None for n, axis label)."""
    curves["x"] = curves.n.astype(float)
    n_values = curves.groupby("panel_key").n.nunique().max()
    best, count = None, n_values
    if "overrides" in curves:
        swept = c.numeric_swept_keys(curves.overrides)  # eps0 first on a tie, then file order
        for key in sorted(swept, key=lambda k: not k.endswith("epsilon0")):
            if key.split(".")[-1] == "n":
                continue
            values = curves.overrides.map(lambda o, k=key: c.parse_overrides(o).get(k))
            if values.nunique() > count:
                best, count = key, values.nunique()
    if best is None:
        return None, "n (users shuffled together)"
    parsed = {o: c.parse_overrides(o)[best] for o in curves.overrides.unique()}
    curves["x"] = curves.overrides.map(parsed).astype(float)
    curves["panel"], curves["panel_key"] = _panels_without(curves, best)
    if best.endswith("epsilon0") and "randomizer" in curves:
        multi = all(c.is_multi_message(r) for r in curves.randomizer.unique())
        return best, c.epsilon0_label(multi)
    return best, c.short_key(best)


def _is_caveated(status: str) -> bool:
    return bool(status) and status != "proven"


def legend_label(bound: str, kind: str, status: str, row_role: str) -> str:
    if bound == "empirical":
        return "empirical lower bound (audit)"
    if row_role == OTHER_PROTOCOL:
        return f"{bound} (other protocol, not a bound on this mechanism)"
    caveat = f"; {status}" if _is_caveated(status) else ""
    what = f"{kind} bound" + (", tagged reports" if row_role == TAGGED else "")
    return f"{bound} ({what}{caveat})"


def line_style(bound: str, kind: str, status: str, row_role: str, color,
               marker: str = "o") -> dict:
    """Solid proven upper bounds, dashed caveated ones (each with its own hollow ``marker``, so
    coinciding curves stay apart), dotted lower bounds (black: the exact lower bound),
    grey dash-dotted another protocol."""
    if row_role == OTHER_PROTOCOL:
        return dict(color="0.55", linestyle="-.", marker="x", linewidth=1.4)
    if kind == "lower":
        return dict(color="black" if is_exact_lower(bound, kind) else "grey",
                    linestyle=":", marker="d")
    if _is_caveated(status):  # over the proven curves: its dashes show on one it equals
        return dict(color=color, marker=marker, markerfacecolor="none", markeredgewidth=1.1,
                    linestyle="--", markersize=6.5, zorder=2.5)
    return dict(color=color, marker=marker, markerfacecolor="none", markeredgewidth=1.1,
                linestyle="-")


#: Most upper bounds drawn in one bounds figure; with more, only those that come within
#: COMPETITIVE of the tightest proven upper bound somewhere are drawn and the others named.
MAX_UPPER = 8
COMPETITIVE = 1.1
#: Relative gap under which the tightest proven upper bound meets the exact lower bound.
COINCIDE = 0.01


def is_exact_lower(bound: str, kind: str) -> bool:
    """The exact lower bound (000 Thm 14, or 001's for multi-message protocols)."""
    return kind == "lower" and "exact-lower" in bound


def competitive_bounds(curves: pd.DataFrame) -> tuple[list[str], list[str]]:
    """(upper bounds drawn, upper bounds left out): all when there are at most
    :data:`MAX_UPPER`, else those within :data:`COMPETITIVE` of the tightest proven upper
    bound at some (panel, x), or below it (a caveated bound under a proven one)."""
    upper = curves[(curves.kind == "upper") & (curves.role == "main")]
    names = list(dict.fromkeys(upper.bound))
    if len(names) <= MAX_UPPER:
        return names, []
    proven = upper[upper.status.astype(str).isin(["proven", ""])]
    best = proven.groupby(["panel_key", "x"]).epsilon.min().rename("best")
    joined = upper.join(best, on=["panel_key", "x"])
    close = joined[joined.epsilon <= COMPETITIVE * joined.best.fillna(np.inf)]
    kept = set(close.bound)
    return [b for b in names if b in kept], [b for b in names if b not in kept]


def meeting_text(rows: pd.DataFrame) -> str:
    """Where the tightest proven upper bound meets the exact lower bound (within
    :data:`COINCIDE`): the curves then lie on each other, so the panel says it in words."""
    upper = rows[(rows.kind == "upper") & (rows.role == "main")
                 & rows.status.astype(str).isin(["proven", ""])]
    lower = rows[[is_exact_lower(b, k) for b, k in zip(rows.bound, rows.kind, strict=True)]]
    if upper.empty or lower.empty:
        return ""
    best = upper.groupby("x").epsilon.min()
    exact = lower.groupby("x").epsilon.max()
    both = pd.concat([best.rename("upper"), exact.rename("lower")], axis=1).dropna()
    if both.empty:
        return ""
    meets = both.upper <= (1 + COINCIDE) * both.lower
    if not meets.any():
        return ""
    where = "every point" if meets.all() else f"{int(meets.sum())} of {len(both)} points"
    return f"tightest proven upper = exact lower ({COINCIDE:.0%}): {where}"


@register_plot("bounds_vs_n", table="bounds")
def plot_bounds_vs_n(tables, figure_module):
    """Central eps versus n (or the swept number with the most values) per bound (module
    docstring). Lower bounds are drawn over a grey band, so that an upper bound lying on them
    stays visible; where the tightest proven upper bound meets the exact lower bound, the
    panel says so. An empirical lower bound of 0 (no significant event) is marked at the foot
    of the axis. With many upper bounds only the competitive ones are drawn
    (:func:`competitive_bounds`), the others named in the title."""
    curves = bound_curves(tables)
    if curves is None or curves.empty:
        return
    zero = curves[(curves.bound == "empirical") & (curves.epsilon <= 0)]
    curves = curves[curves.epsilon > 0].copy()
    if curves.empty:
        return
    if "rounds" in curves and curves.rounds.nunique() > 1 \
            and curves.groupby("panel_key").n.nunique().max() < 2:
        return  # n does not vary: bounds_eps_vs_rounds.png (lifetime.py) shows these rows
    if not zero.empty:
        curves = pd.concat([curves, zero], ignore_index=True)
    key, x_label = _bounds_axis(curves)
    # sweep points that differ only in keys left out of the panel (e.g. the estimator) repeat
    # the same bound values: one value per (panel, bound, x)
    curves = curves.drop_duplicates(["panel_key", "bound", "x"])
    drawn, left_out = competitive_bounds(curves[curves.epsilon > 0])
    curves = curves[~curves.bound.isin(left_out)]
    keys = list(dict.fromkeys(curves.panel_key))
    uppers = [b for b, k, r in zip(curves.bound, curves.kind, curves.role, strict=True)
              if k == "upper" and r != OTHER_PROTOCOL]
    colors, shapes = c.colors(uppers), c.markers(uppers)
    groups = c.chunks(keys, c.MAX_PANELS)
    axis_name = "n" if key is None else c.short_key(key)
    for number, group in enumerate(groups, 1):
        fig, axes = c.panels(figure_module, len(group), min_width=13.0)
        legend: dict[str, object] = {}
        for ax, panel_key in zip(axes, group, strict=True):
            _draw_panel(ax, curves[curves.panel_key == panel_key], key, x_label,
                        (colors, shapes), legend)
        suffix = f" ({number}/{len(groups)})" if len(groups) > 1 else ""
        title = f"Central eps versus {x_label.split(' (')[0]}, per bound" + suffix
        if left_out:
            title += "\n" + textwrap.fill(
                f"not drawn ({len(left_out)} upper bounds never within "
                f"{COMPETITIVE - 1:.0%} of the tightest proven one; in the table): "
                + ", ".join(left_out), 150)
        fig.suptitle(title)
        c.legend_below(fig, list(legend.values()), list(legend), columns=3)
        yield f"bounds_eps_vs_{axis_name}" + (f"_{number}" if len(groups) > 1 else ""), fig


def draw_bound(ax, x, y, style: dict, bound: str, kind: str):
    """One bound's curve (:func:`line_style`); the exact lower bound over a grey band and
    under the upper bounds, so that an upper bound equal to it is drawn on it and shows."""
    if is_exact_lower(bound, kind):
        ax.plot(x, y, color="0.35", linewidth=7, alpha=0.3, solid_capstyle="round", zorder=1,
                label=f"_band of {bound}")
    (handle,) = ax.plot(x, y, **{"markersize": 4.5, "linewidth": 1.2,
                                 "zorder": 1.5 if kind == "lower" else 2, **style})
    return handle


def _draw_panel(ax, rows: pd.DataFrame, key, x_label: str, looks: tuple[dict, dict],
                legend: dict) -> None:
    """One panel of :func:`plot_bounds_vs_n`; ``looks``: (colour, marker) per upper bound."""
    colors, shapes = looks
    zero = rows[(rows.bound == "empirical") & (rows.epsilon <= 0)]
    rows = rows[rows.epsilon > 0]
    for bound, line in rows.groupby("bound", sort=False):
        line = line.sort_values("x")
        kind, row_role = line.kind.iloc[0], line.role.iloc[0]
        status = str(line.status.iloc[0] or "")
        label = legend_label(bound, kind, status, row_role)
        if bound == "empirical":
            (handle,) = ax.plot(line.x, line.epsilon, "^", color="black", markersize=6,
                                zorder=5)
        else:
            handle = draw_bound(ax, line.x, line.epsilon, line_style(
                bound, kind, status, row_role, colors.get(bound), shapes.get(bound, "o")),
                bound, kind)
        handle.set_label(label)
        legend.setdefault(label, handle)
    if not zero.empty:
        (handle,) = ax.plot(zero.x, [0.03] * len(zero), "v", color="black", markersize=6,
                            markerfacecolor="white", transform=ax.get_xaxis_transform(),
                            clip_on=False, zorder=5)
        legend.setdefault("empirical lower bound = 0 (no significant event; drawn at the "
                          "foot of the axis)", handle)
    x = pd.concat([rows.x, zero.x])
    if x.min() > 0 and (key is None or x.max() / x.min() >= 8):
        ax.set_xscale("log")
        c.plain_log_ticks(ax, "x")
    ax.set_yscale("log")
    c.plain_log_ticks(ax, "y")
    if x.nunique() <= 6:
        c.ticks_at(ax, x, "x")
    text = meeting_text(rows)
    ax.set_xlabel(x_label)
    ax.set_ylabel("central eps")
    ax.set_title((rows.panel.iloc[0] if not rows.empty else zero.panel.iloc[0])
                 + (f"\n{text}" if text else ""), fontsize="small")
    ax.grid(True, which="major", alpha=0.3)
