"""Figures of shuffled DP-SGD runs (issue 19), from the ``learning`` table.

* ``learning_accuracy.png``: like 003 Fig. 4, test accuracy against epochs, one line per sweep
  point (labelled by its budget distribution and the other swept keys): the mean over the
  repetitions with a 95% confidence band (Student t over the repetitions); right, the test
  loss the same way. The final mean and its interval are in the legend.
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


def _label(rows) -> str:
    first = rows.iloc[0]
    extra = c.short_overrides(first.overrides, drop=("population.budget.preset",))
    return f"{first.budget}" + (f" ({extra})" if extra else "")


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
        return []
    points = [table[table.point == p] for p in sorted(table.point.unique())]
    labels = [_label(rows) for rows in points]
    colors = c.colors(labels)
    fig, axes = c.panels(figure_module, 2, width=5.4, height=4.0)
    handles, names = [], []
    for rows, label in zip(points, labels, strict=True):
        for ax, column in zip(axes, ("test_accuracy", "test_loss"), strict=True):
            epochs, mean, half = _curves(rows, column)
            ax.fill_between(epochs, mean - half, mean + half, color=colors[label], alpha=0.2,
                            linewidth=0)
            (line,) = ax.plot(epochs, mean, color=colors[label], linewidth=1.4)
            if column == "test_accuracy":
                reps = rows.repetition.nunique()
                handles.append(line)
                names.append(f"{label}: {mean[-1]:.3f} ± {half[-1]:.3f} "
                             f"(epoch {epochs[-1]}, {reps} reps)")
    axes[0].set(xlabel="epoch", ylabel="test accuracy",
                title="test accuracy (mean, 95% CI over repetitions)")
    axes[1].set(xlabel="epoch", ylabel="test loss (cross-entropy)", title="test loss")
    for ax in axes:
        ax.grid(alpha=0.3)
    first = table.iloc[0]
    fig.suptitle(f"shuffled SGD on {first.data}: {first.model}, {first.randomizer} randomizer, "
                 f"{first.n_clients} clients x {first.examples_per_client} examples")
    c.legend_below(fig, handles, names, columns=2)
    out = [("learning_accuracy", fig)]
    eps_fig = _epsilon_figure(figure_module, table, points, labels)
    if eps_fig is not None:
        out.append(("learning_epsilon", eps_fig))
    return out


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
