"""Figures of shuffled DP-SGD runs (issue 19), from the ``learning`` table.

* ``learning_accuracy.png``: like 003 Fig. 4, test accuracy against epochs, one line per sweep
  point (labelled by its budget distribution, the other swept keys and whatever else differs
  between points, e.g. the randomizer; the title names only what every point shares): the
  mean over the repetitions with a 95% confidence band (Student t over the repetitions; no
  band, and the title says so, for one repetition); right, the test loss the same way. The
  final mean and its interval are in the legend.
* ``learning_epsilon.png``: the privacy accounting of each point after every epoch: one curve
  per bound of the table (``epsilon_*`` columns; the largest value over repetitions, since the
  budgets, and so the bound, may differ between repetitions), log y axis, one panel per point.
  Solid: proven upper bounds; dashed: 003's mu-GDP (approximate); dotted grey: no
  amplification (each client's own reports).
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from . import common as c
from .kinds import register_plot

BOUND_STYLES = {
    "epsilon_fmt21_pass": ("002 Thm 3.8/3.1, one pass", "-"),
    "epsilon_clone_epochs": ("002 clone pair, composed over epochs", "-"),
    "epsilon_clone_steps": ("002 clone pair per step, composed", "-"),
    "epsilon_gspa_epochs": ("003 Thm 2 sqrt(T) mu-GDP (approximate)", "--"),
    "epsilon_local_max": ("no shuffling: most exposed client", ":"),
    "epsilon_user_max": ("per-user lifetime, max over clients", "-"),
    "epsilon_user_median": ("per-user lifetime, median client", "-."),
}


#: Columns that describe a point's setting: in the title when every point shares them, else in
#: each line's label.
SETTING = ("data", "model", "randomizer", "n_clients", "examples_per_client")


def _label(rows, varying: list[str] = ()) -> str:
    first = rows.iloc[0]
    extra = c.short_overrides(first.overrides, drop=("population.budget.preset",)
                              + tuple(varying))
    own = ", ".join(f"{first[k]}" if k in ("data", "model", "randomizer") else
                    f"{k}={first[k]}" for k in varying)
    rest = ", ".join(part for part in (own, extra) if part)
    return f"{first.budget}" + (f" ({rest})" if rest else "")


def mean_interval(values: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """Mean and half-width of its Student-t confidence interval (0 for one value)."""
    values = np.asarray(values, dtype=float)
    mean = float(values.mean())
    if values.size < 2:
        return mean, 0.0
    half = float(stats.t.ppf(0.5 + level / 2, values.size - 1)
                 * values.std(ddof=1) / np.sqrt(values.size))
    return mean, half


def _curves(rows, column: str):
    epochs = np.sort(rows.epoch.unique())
    out = np.array([mean_interval(rows.loc[rows.epoch == e, column].to_numpy())
                    for e in epochs])
    return epochs, out[:, 0], out[:, 1]


@register_plot("learning", table="learning")
def plot_learning(tables, figure_module):
    table = tables.get("learning")
    if table is None or table.empty:
        return
    points = [table[table.point == p] for p in sorted(table.point.unique())]
    varying = [k for k in SETTING if k in table and table[k].nunique() > 1]
    labels = [_label(rows, varying) for rows in points]
    colors = c.colors(labels)
    reps = [rows.repetition.nunique() for rows in points]
    fig, axes = c.panels(figure_module, 2, width=5.4, height=4.0)
    handles, names = [], []
    for rows, label, count in zip(points, labels, reps, strict=True):
        for ax, column in zip(axes, ("test_accuracy", "test_loss"), strict=True):
            epochs, mean, half = _curves(rows, column)
            if count >= 2:
                ax.fill_between(epochs, mean - half, mean + half, color=colors[label],
                                alpha=0.2, linewidth=0)
            (line,) = ax.plot(epochs, mean, color=colors[label], linewidth=1.4)
            if column == "test_accuracy":
                handles.append(line)
                final = f"{mean[-1]:.3f} ± {half[-1]:.3f}" if count >= 2 else f"{mean[-1]:.3f}"
                names.append(f"{label}: {final} (epoch {epochs[-1]}, "
                             f"{count} repetition{'s' if count != 1 else ''})")
    if min(reps) >= 2:
        what = f"mean, band: 95% CI over {c.repetitions_text(reps)}"
    elif max(reps) < 2:
        what = "one repetition: a single run, no interval"
    else:
        what = "mean; band (95% CI) where a point has 2 repetitions or more"
    axes[0].set(xlabel="epoch", ylabel="test accuracy", title=f"test accuracy\n({what})")
    axes[1].set(xlabel="epoch", ylabel="test loss (cross-entropy)", title="test loss")
    for ax in axes:
        ax.grid(alpha=0.3)
    fig.suptitle(f"shuffled SGD: {_common(table, varying)}")
    c.legend_below(fig, handles, names, columns=2)
    yield "learning_accuracy", fig
    eps_fig = _epsilon_figure(figure_module, table, points, labels)
    if eps_fig is not None:
        yield "learning_epsilon", eps_fig


def _common(table, varying: list[str]) -> str:
    """What every point of the run shares (data, model, randomizer, clients), for the title;
    what varies is in each line's label."""
    first = table.iloc[0]
    parts = []
    if "data" not in varying:
        parts.append(f"on {first.data}")
    if "model" not in varying:
        parts.append(f"{first.model}")
    if "randomizer" not in varying:
        parts.append(f"{first.randomizer} randomizer")
    if "n_clients" not in varying and "examples_per_client" not in varying:
        parts.append(f"{first.n_clients} clients x {first.examples_per_client} examples")
    return ", ".join(parts)


def _epsilon_figure(figure_module, table, points, labels):
    columns = [k for k in BOUND_STYLES if k in table and table[k].notna().any()]
    if not columns:
        return None
    fig, axes = c.panels(figure_module, len(points), width=4.6, height=3.6, min_width=7.5)
    bound_colors = c.colors(columns)
    handles: dict[str, object] = {}
    for ax, rows, label in zip(axes, points, labels, strict=True):
        worst = rows[rows.epoch > 0].groupby("epoch")[columns].max()
        for column in columns:
            values = worst[column]
            if values.notna().any():
                name, style = BOUND_STYLES[column]
                color = "grey" if column == "epsilon_local_max" else bound_colors[column]
                (line,) = ax.plot(worst.index, values, linestyle=style, color=color,
                                  linewidth=1.3)
                handles.setdefault(name, line)
        ax.set_yscale("log")
        ax.set(xlabel="epochs", ylabel=f"central eps at delta = {rows.delta.iloc[0]:g}",
               title=label)
        ax.grid(alpha=0.3, which="both")
    fig.suptitle("privacy accounting of the run (largest value over repetitions)")
    c.legend_below(fig, list(handles.values()), list(handles), columns=2)
    return fig
