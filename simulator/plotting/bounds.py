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
    """A budget multiset label without its n-dependent counts: ``5400 x 0.1, 3700 x 0.5, 900 x
    1`` -> ``54% x 0.1, 37% x 0.5, 9% x 1``; ``10000 distinct budgets in [a, b]`` -> ``budgets
    in [a, b]``."""
    parts = re.findall(r"(\d+) x ([^,]+)", budget)
    if parts:
        total = sum(int(count) for count, _ in parts)
        return ", ".join(f"{100 * int(count) / total:.3g}% x {value.strip()}"
                         for count, value in parts)
    return re.sub(r"^\d+ distinct budgets", "budgets", budget)


def _panels_without(frame: pd.DataFrame, axis_key: str | None) -> tuple[list[str], list[str]]:
    """(label, key) per row: the setting without n and without ``axis_key``. The key comes
    from the sweep values (when the table has them) and delta, so that nothing that varies
    with the x axis (the budget multiset's group sizes vary with n) splits a curve."""
    drop = c.LABEL_DROP + ((axis_key,) if axis_key else ())
    budget_axis = bool(axis_key) and "budget" in axis_key
    labels, keys = [], []
    for _, row in frame.iterrows():
        parts = []
        if "randomizer" in frame:
            parts.append(str(row["randomizer"]))
        budget = str(row["budget"]) if "budget" in frame else ""
        if budget and not budget.startswith("constant"):
            if not budget_axis:
                parts.append(f"budgets {budget_shares(budget)}")
        elif "epsilon0" in frame and not (axis_key or "").endswith("epsilon0"):
            parts.append(f"eps0={row['epsilon0']:g}")
        if "overrides" in frame:
            rest = c.short_overrides(row["overrides"], drop=drop)
            if rest:
                parts.append(rest)
        parts.append(f"delta={row['delta']:g}")
        rounds = ""
        if "rounds" in frame and not (axis_key or "").endswith("rounds"):
            rounds = f" T={int(row['rounds'])}"
            if int(row["rounds"]) != 1:
                parts.append(f"over T={int(row['rounds'])} rounds")
        labels.append(textwrap.fill(", ".join(parts), 60))
        if "overrides" in frame:
            key_drop = ("n", "estimator.name") + ((axis_key,) if axis_key else ())
            keys.append(f"{c.without(row['overrides'], key_drop)} delta={row['delta']!r}"
                        + rounds)
        else:
            keys.append(labels[-1])
    return labels, keys


def _bounds_axis(curves: pd.DataFrame) -> tuple[str | None, str]:
    """x axis of the bound figure: n when some panel has two values of n or more; otherwise
    the first numeric sweep key with two values or more (columns ``x``, ``panel`` and
    ``panel_key`` are set accordingly); returns (key or None, axis label)."""
    curves["x"] = curves.n.astype(float)
    if curves.groupby("panel_key").n.nunique().max() >= 2 or "overrides" not in curves:
        return None, "n (users shuffled together)"
    for key in c.numeric_swept_keys(curves.overrides):
        parsed = {o: c.parse_overrides(o)[key] for o in curves.overrides.unique()}
        curves["x"] = curves.overrides.map(parsed).astype(float)
        curves["panel"], curves["panel_key"] = _panels_without(curves, key)
        return key, c.short_key(key)
    return None, "n (users shuffled together)"


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


def line_style(bound: str, kind: str, status: str, row_role: str, color) -> dict:
    if row_role == OTHER_PROTOCOL:
        return dict(color="0.55", linestyle="-.", marker="x", linewidth=1.4)
    if kind == "lower":
        return dict(color="black" if bound.startswith("exact-lower") else "grey",
                    linestyle=":", marker="d")
    return dict(color=color, marker="o", linestyle="--" if _is_caveated(status) else "-")


@register_plot("bounds_vs_n", table="bounds")
def plot_bounds_vs_n(tables, figure_module):
    curves = bound_curves(tables)
    if curves is None or curves.empty:
        return []
    curves = curves[curves.epsilon > 0].copy()
    if curves.empty:
        return []
    if "rounds" in curves and curves.rounds.nunique() > 1 \
            and curves.groupby("panel_key").n.nunique().max() < 2:
        return []  # n does not vary: bounds_eps_vs_rounds.png (lifetime.py) shows these rows
    key, x_label = _bounds_axis(curves)
    # sweep points that differ only in keys left out of the panel (e.g. the estimator) repeat
    # the same bound values: one value per (panel, bound, x)
    curves = curves.drop_duplicates(["panel_key", "bound", "x"])
    keys = list(dict.fromkeys(curves.panel_key))
    names = [b for b in dict.fromkeys(curves.bound) if b != "empirical"]
    colors = c.colors(names)
    out = []
    groups = c.chunks(keys, c.MAX_PANELS)
    for number, group in enumerate(groups, 1):
        fig, axes = c.panels(figure_module, len(group), min_width=13.0)
        legend: dict[str, object] = {}
        for ax, panel_key in zip(axes, group, strict=True):
            rows = curves[curves.panel_key == panel_key]
            for bound, line in rows.groupby("bound", sort=False):
                line = line.sort_values("x")
                kind, row_role = line.kind.iloc[0], line.role.iloc[0]
                status = str(line.status.iloc[0] or "")
                label = legend_label(bound, kind, status, row_role)
                if bound == "empirical":
                    (handle,) = ax.plot(line.x, line.epsilon, "^", color="black", markersize=6)
                else:
                    style = line_style(bound, kind, status, row_role, colors[bound])
                    (handle,) = ax.plot(line.x, line.epsilon, markersize=3.5,
                                        **{"linewidth": 1.2, **style})
                handle.set_label(label)
                legend.setdefault(label, handle)
            if rows.x.min() > 0 and (key is None or rows.x.max() / rows.x.min() >= 8):
                ax.set_xscale("log")
                c.plain_log_ticks(ax, "x")
            ax.set_yscale("log")
            c.plain_log_ticks(ax, "y")
            if rows.x.nunique() <= 6:
                c.ticks_at(ax, rows.x, "x")
            ax.set_xlabel(x_label)
            ax.set_ylabel("central eps")
            ax.set_title(rows.panel.iloc[0], fontsize="small")
            ax.grid(True, which="major", alpha=0.3)
        suffix = f" ({number}/{len(groups)})" if len(groups) > 1 else ""
        axis_name = "n" if key is None else x_label
        fig.suptitle(f"Central eps versus {axis_name}, per bound" + suffix)
        c.legend_below(fig, list(legend.values()), list(legend), columns=3)
        name = f"bounds_eps_vs_{axis_name}" + (f"_{number}" if len(groups) > 1 else "")
        out.append((name, fig))
    return out
