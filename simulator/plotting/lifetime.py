"""Privacy over a deployment's lifetime (issue 16): ``lifetime_users.png`` and
``bounds_eps_vs_rounds.png``.

* ``lifetime_users.png`` (users table of pipeline runs with rounds): left, the empirical CDF of
  the users' lifetime eps per sweep point (honest users of every repetition); right, lifetime
  eps against the number of rounds the user was in a released batch (median and range per
  count), so the spread from dropouts and batch sizes is visible. The title names the method
  and delta of the table.
* ``bounds_eps_vs_rounds.png`` (bounds table with two values of ``rounds`` or more): central eps
  against the number of rounds T per bound, log-log, one panel per setting (randomizer, eps0,
  n, budget, delta; sweep points that differ only in keys the bounds do not read, e.g. the
  pipeline's dropout, share a panel). Styles as in bounds_eps_vs_n (solid: proven upper bounds,
  dashed: caveats, dotted: lower bounds, black: exact lower bound). The naive T x eps line
  (``naive_epsilon``: T times the single-round optimal-blanket eps) is drawn in grey dashes as a
  reference: it is not a guarantee at delta. When the run also has a users table at the same
  delta, the users' median lifetime eps is marked at the pipeline's number of rounds.
"""

from __future__ import annotations

import numpy as np

from . import bounds as b
from . import common as c
from .kinds import register_plot

PANEL = ("randomizer", "epsilon0", "n", "budget", "delta")


def _ecdf(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    x = np.sort(values)
    return x, np.arange(1, x.size + 1) / x.size


@register_plot("lifetime_users", table="users")
def plot_lifetime_users(tables, figure_module):
    users = tables.get("users")
    if users is None or users.empty:
        return
    honest = users[~users.colluding.astype(bool) & users.epsilon.notna() & (users.rounds > 0)]
    if honest.empty:
        return
    labels = {p: c.short_overrides(o) or f"point {p}" for p, o in
              honest.drop_duplicates("point")[["point", "overrides"]].itertuples(index=False)}
    colors = c.colors(labels.values())
    fig, axes = c.panels(figure_module, 2, width=5.6, height=4.2)
    handles = []
    for point, label in labels.items():
        rows = honest[honest.point == point]
        eps = rows.epsilon.to_numpy(dtype=float)
        x, y = _ecdf(eps)
        (handle,) = axes[0].step(x, y, where="post", color=colors[label], linewidth=1.4)
        med = float(np.median(eps))
        axes[0].axvline(med, color=colors[label], linestyle=":", linewidth=1)
        handles.append(handle)
        per = rows.groupby("rounds").epsilon.agg(["median", "min", "max"]).sort_index()
        axes[1].fill_between(per.index, per["min"], per["max"], color=colors[label], alpha=0.2,
                             linewidth=0)
        axes[1].plot(per.index, per["median"], color=colors[label], marker="o", markersize=2.5,
                     linewidth=1.2)
        handle.set_label(f"{label}: median {med:.3g}, 99% {np.quantile(eps, 0.99):.3g}, "
                         f"max {eps.max():.3g}")
    axes[0].set_xlabel("lifetime eps of a user")
    axes[0].set_ylabel("fraction of users (ECDF)")
    axes[0].set_ylim(0, 1.01)
    axes[1].set_xlabel("rounds in which the user was in a released batch")
    axes[1].set_ylabel("lifetime eps (median, band: min to max)")
    for ax in axes:
        ax.grid(True, alpha=0.3)
    methods = ", ".join(sorted(honest.method.unique()))
    deltas = sorted(honest.delta.unique())
    delta = f"delta = {deltas[0]:g}" if len(deltas) == 1 else "deltas vary"
    fig.suptitle(f"Users' lifetime privacy over the run's rounds ({methods}, {delta}; "
                 "dotted: medians)")
    c.legend_below(fig, handles, [h.get_label() for h in handles], columns=2)
    yield "lifetime_users", fig


def _panel_label(row) -> str:
    parts = [str(row["randomizer"]), f"eps0={row['epsilon0']:g}", f"n={int(row['n'])}"]
    budget = str(row.get("budget", ""))
    if budget and not budget.startswith("constant"):
        parts.append(f"budgets {b.budget_shares(budget)}")
    parts.append(f"delta={row['delta']:g}")
    return ", ".join(parts)


@register_plot("bounds_vs_rounds", table="bounds")
def plot_bounds_vs_rounds(tables, figure_module):
    bounds = tables.get("bounds")
    if bounds is None or bounds.empty or "rounds" not in bounds or bounds.rounds.nunique() < 2:
        return
    keys = [k for k in PANEL if k in bounds]
    rows = bounds.drop_duplicates(keys + ["method", "rounds"]).copy()
    rows["panel"] = [_panel_label(r) for _, r in rows.iterrows()]
    users = tables.get("users")
    panels = list(dict.fromkeys(rows.panel))
    finite = rows[np.isfinite(rows.epsilon.astype(float)) & (rows.epsilon > 0)]
    composed = finite.groupby("method", sort=False).rounds.nunique()
    drawn = [m for m in dict.fromkeys(rows.method) if composed.get(m, 0) >= 2]
    colors = c.colors(m for m in drawn if set(rows[rows.method == m].kind) == {"upper"})
    shapes = c.markers(colors)
    groups = c.chunks(panels, c.MAX_PANELS)
    for number, group in enumerate(groups, 1):
        fig, axes = c.panels(figure_module, len(group), width=6.5, height=5.0, min_width=9.0)
        legend: dict[str, object] = {}
        single: set[str] = set()
        for ax, panel in zip(axes, group, strict=True):
            here = rows[rows.panel == panel]
            for method, line in here.groupby("method", sort=False):
                line = line[np.isfinite(line.epsilon.astype(float))].sort_values("rounds")
                line = line[line.epsilon > 0]
                if line.rounds.nunique() < 2:  # a single-round value only: no composition
                    if not line.empty:
                        single.add(method)
                    continue
                status = str(line.statuses.iloc[0] if "statuses" in line else "")
                kind = str(line.kind.iloc[0])
                style = b.line_style(method, kind, status, b.role(line.mechanism.iloc[0]),
                                     colors.get(method), shapes.get(method, "o"))
                handle = b.draw_bound(ax, line.rounds, line.epsilon, style, method, kind)
                label = b.legend_label(method, kind, status, b.role(line.mechanism.iloc[0]))
                legend.setdefault(label, handle)
            naive = here.drop_duplicates("rounds").sort_values("rounds")
            naive = naive[naive.naive_epsilon.notna()] if "naive_epsilon" in naive else naive[:0]
            if not naive.empty:
                (handle,) = ax.plot(naive.rounds, naive.naive_epsilon, color="0.35",
                                    linestyle=(0, (6, 3)), linewidth=2.0)
                legend.setdefault("naive T x eps (one-round optimal-blanket; not a guarantee "
                                  "at delta)", handle)
            _mark_users(ax, users, here, legend)
            ax.set_xscale("log")
            ax.set_yscale("log")
            c.ticks_at(ax, here.rounds, "x")
            c.plain_log_ticks(ax, "y")
            ax.set_xlabel("rounds T (identical rounds of n users)")
            ax.set_ylabel("lifetime central eps")
            meets = b.meeting_text(_as_curves(here))
            ax.set_title(panel + (f"\n{meets}" if meets else ""), fontsize="small")
            ax.grid(True, which="major", alpha=0.3)
        suffix = f" ({number}/{len(groups)})" if len(groups) > 1 else ""
        left_out = (f"\n(not drawn: {len(single)} bounds with a single-round value only, "
                    "they do not compose; bounds.parquet says why)") if single else ""
        fig.suptitle("Lifetime eps versus rounds, per bound" + suffix + left_out)
        c.legend_below(fig, list(legend.values()), list(legend), columns=2)
        yield "bounds_eps_vs_rounds" + (f"_{number}" if len(groups) > 1 else ""), fig


def _as_curves(rows):
    """The bounds rows of one panel in bound_curves' columns (x = rounds), for
    :func:`bounds.meeting_text`."""
    rows = rows[np.isfinite(rows.epsilon.astype(float)) & (rows.epsilon > 0)]
    return rows.assign(
        bound=rows.method, x=rows.rounds,
        status=rows.statuses.fillna("") if "statuses" in rows else "proven",
        role=[b.role(m) for m in rows.mechanism] if "mechanism" in rows else "main")


def _mark_users(ax, users, here, legend) -> None:
    """Per sweep point of the users table (same delta): the median lifetime eps of the users
    who were in released batches in the most rounds, at that number of rounds (black marks)."""
    if users is None or users.empty:
        return
    honest = users[~users.colluding.astype(bool) & users.epsilon.notna() & (users.rounds > 0)]
    honest = honest[np.isclose(honest.delta, here.delta.iloc[0])]
    markers = "*PXD"
    for i, (_, rows) in enumerate(honest.groupby("point", sort=True)):
        k = int(rows.rounds.max())
        eps = rows[rows.rounds == k].epsilon
        label = c.short_overrides(rows.overrides.iloc[0]) or f"point {rows.point.iloc[0]}"
        (handle,) = ax.plot([k], [float(eps.median())], marker=markers[i % 4],
                            color="black", markersize=10 if i == 0 else 8, linestyle="")
        legend.setdefault(f"pipeline users in {k} rounds (the most), {label}: median lifetime "
                          "eps (users.parquet; their batches hold fewer than n users)", handle)
