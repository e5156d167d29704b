"""Issue 32 item 5: figures that say what they show. Labels and structure of the figures
(simulator/plotting/), on small synthetic tables: single draws are labelled as such or left out
with a reason, multi-message eps' is not called a local budget, coinciding bounds stay visible,
many bounds do not become a rainbow, an empirical bound of 0 is drawn, one eps value per point
does not leave an empty figure, learning titles name only what every curve shares."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from shufflesim.simulator.audit.tables import AUDIT_SCHEMA
from shufflesim.simulator.pipeline.unit import BATCHES_TABLE_SCHEMA
from shufflesim.simulator.results.tables import UTILITY_SCHEMA

pytest.importorskip("matplotlib")


@pytest.fixture
def figure():
    from matplotlib import figure

    return figure


def _utility(repetitions: int, epsilons=(0.5, 1.0, 2.0), randomizer="krr") -> pd.DataFrame:
    rows = []
    for point, eps in enumerate(epsilons):
        overrides = json.dumps({"population.budget.epsilon0": eps})
        for repetition in range(repetitions):
            for reference in ("empirical", "population"):
                rows.append(dict(point=point, overrides=overrides, randomizer=randomizer,
                                 estimator="frequency", n=1000, epsilon0=eps, path="reports",
                                 repetition=repetition, metric="mae", reference=reference,
                                 value=0.1 / eps + 0.01 * repetition))
    return pa.Table.from_pylist(rows, schema=UTILITY_SCHEMA).to_pandas()


def _visible(fig):
    return [ax for ax in fig.axes if ax.get_visible()]


def test_single_draws_on_few_points_are_left_out_with_a_reason(figure):
    from shufflesim.simulator.plotting import LeftOut, plot_utility

    (name, left_out), = list(plot_utility({"utility": _utility(1)}, figure))
    assert name == "utility_frequency" and isinstance(left_out, LeftOut)
    assert "one repetition" in left_out.reason and "3 values" in left_out.reason


def test_single_draws_on_a_curve_are_labelled_single_draws_without_bars(figure):
    from shufflesim.simulator.plotting import plot_utility

    frame = _utility(1, epsilons=(0.25, 0.5, 1.0, 2.0, 4.0))
    (name, fig), = list(plot_utility({"utility": frame}, figure))
    title = fig._suptitle.get_text()
    assert "single draws" in title and "mean" not in title and "standard error" not in title
    (ax,) = _visible(fig)
    assert ax.get_ylabel() == "mae"
    assert not ax.collections  # no error bars


def test_means_say_over_how_many_repetitions(figure):
    from shufflesim.simulator.plotting import plot_utility

    (_, fig), = list(plot_utility({"utility": _utility(5)}, figure))
    title = fig._suptitle.get_text()
    assert "mean over 5 repetitions, bars: standard error" in title
    assert _visible(fig)[0].get_ylabel() == "mean mae"


def test_a_multi_message_epsilon0_is_the_central_target(figure):
    from shufflesim.simulator.plotting import _utility_axis

    _, label, _ = _utility_axis(_utility(2, randomizer="cheu"))
    assert label == "target central eps' (epsilon0)"
    _, label, _ = _utility_axis(_utility(2))
    assert label == "local budget eps0"


def test_budget_labels_say_budgets_once_with_short_numbers():
    from shufflesim.simulator.plotting.bounds import _panel_of, budget_shares

    assert budget_shares("10000 distinct budgets in [0.010495, 0.999505]") == "in [0.0105, 1]"
    label, _ = _panel_of({"randomizer": "brr", "budget": "1000 distinct budgets in "
                          "[0.010495, 0.999505]", "delta": 1e-4}, None)
    assert label == "brr, budgets in [0.0105, 1], delta=0.0001"


def _bounds(names: int, n=(1000, 2000, 4000, 8000)) -> pd.DataFrame:
    """A bounds table: exact-lower, optimal-blanket equal to it, and ``names`` looser bounds
    (the first within 5 % of optimal-blanket, the rest a factor 2 and more above it)."""
    rows = []
    for size in n:
        exact = 3.0 / np.sqrt(size)
        values = {"exact-lower": exact, "optimal-blanket": exact * 1.0005}
        for i in range(names):
            values[f"loose-{i}"] = exact * (1.05 if i == 0 else 2.0 + i)
        for method, value in values.items():
            rows.append(dict(method=method, kind="lower" if method == "exact-lower"
                             else "upper", statuses="proven", n=size, delta=1e-6,
                             epsilon=value, epsilon0=1.0, randomizer="krr",
                             overrides=json.dumps({"population.n": size})))
    return pd.DataFrame(rows)


def test_many_upper_bounds_show_the_competitive_ones_and_name_the_rest(figure):
    from shufflesim.simulator.plotting import plot_bounds_vs_n

    (name, fig), = list(plot_bounds_vs_n({"bounds": _bounds(12)}, figure))
    assert name == "bounds_eps_vs_n"
    (ax,) = _visible(fig)
    drawn = {line.get_label().split(" (")[0] for line in ax.get_lines()
             if not line.get_label().startswith("_")}
    assert drawn == {"exact-lower", "optimal-blanket", "loose-0"}
    title = fig._suptitle.get_text()
    assert "not drawn (11 upper bounds" in title and "loose-11" in title
    # with few bounds, every one is drawn
    (_, fig), = list(plot_bounds_vs_n({"bounds": _bounds(3)}, figure))
    assert "not drawn" not in fig._suptitle.get_text()


def test_an_upper_bound_on_the_exact_lower_bound_stays_visible(figure):
    from shufflesim.simulator.plotting import plot_bounds_vs_n

    (_, fig), = list(plot_bounds_vs_n({"bounds": _bounds(2)}, figure))
    (ax,) = _visible(fig)
    assert "tightest proven upper = exact lower (1%): every point" in ax.get_title()
    lines = {line.get_label(): line for line in ax.get_lines()}
    band = lines["_band of exact-lower"]
    assert band.get_linewidth() > 4 * lines["optimal-blanket (upper bound)"].get_linewidth()
    # the lower bound is drawn under the upper bounds, its band under both
    assert band.get_zorder() < lines["exact-lower (lower bound)"].get_zorder() \
        < lines["optimal-blanket (upper bound)"].get_zorder()


def test_the_x_axis_is_the_swept_number_with_most_values(figure):
    """audit_krr: n takes 2 values, eps0 3: curves over eps0, one panel per n (not 2-point
    panels over n)."""
    from shufflesim.simulator.plotting import plot_bounds_vs_n

    rows = []
    for n in (100, 1000):
        for eps in (0.5, 2.0, 4.0):
            for method, factor in (("optimal-blanket", 1.2), ("exact-lower", 1.0)):
                rows.append(dict(method=method, kind="lower" if factor == 1 else "upper",
                                 statuses="proven", n=n, delta=1e-6, epsilon0=eps,
                                 epsilon=factor * eps / np.sqrt(n), randomizer="krr",
                                 overrides=json.dumps({"population.budget.epsilon0": eps,
                                                       "population.n": n})))
    (name, fig), = list(plot_bounds_vs_n({"bounds": pd.DataFrame(rows)}, figure))
    assert name == "bounds_eps_vs_epsilon0"
    axes = _visible(fig)
    assert len(axes) == 2
    assert [ax.get_title().split("\n")[0] for ax in axes] == [
        "krr, n=100, delta=1e-06", "krr, n=1000, delta=1e-06"]
    for ax in axes:
        assert ax.get_xlabel() == "local budget eps0"
        for line in ax.get_lines():
            assert len(line.get_xdata()) == 3


def _audit(bounds: int) -> pd.DataFrame:
    rows = []
    for point, n in enumerate((100, 1000)):
        base = dict.fromkeys(AUDIT_SCHEMA.names)
        base.update(point=point, overrides=json.dumps({"population.n": n}), randomizer="krr",
                    n=n, epsilon0=1.0, delta=1e-6, level="shuffle", row_type="verdict",
                    confidence=0.95, exact_lower=1.0 / np.sqrt(n),
                    epsilon_lb=0.0 if point else 0.5 / np.sqrt(n))
        exact = base["exact_lower"]
        rows.append({**base, "bound": "optimal-blanket", "bound_kind": "upper",
                     "bound_status": "proven", "bound_epsilon": exact, "verdict": "consistent"})
        rows.append({**base, "bound": "variation-ratio", "bound_kind": "upper",
                     "bound_status": "relies-on-stronger-clone-reduction",
                     "bound_epsilon": 0.9 * exact, "verdict": "violated"})
        for i in range(bounds):
            rows.append({**base, "bound": f"loose-{i}", "bound_kind": "upper",
                         "bound_status": "proven", "bound_epsilon": (2 + i) * exact,
                         "verdict": "consistent"})
    return pa.Table.from_pylist(rows, schema=AUDIT_SCHEMA).to_pandas()


def test_the_sandwich_colours_only_the_bounds_that_matter(figure):
    from shufflesim.simulator.plotting import plot_audit_sandwich

    (_, fig), = list(plot_audit_sandwich({"audit": _audit(17)}, figure))
    legend = [text.get_text() for text in fig.legends[0].get_texts()]
    coloured = [label for label in legend if label.endswith(")") and "(upper" in label]
    assert sorted(label.split(" ")[0] for label in coloured) == [
        "optimal-blanket", "variation-ratio"]
    assert "other upper bounds, proven" in legend
    assert "17 other upper bounds" in fig._suptitle.get_text()
    # the empirical lower bound of 0 is drawn (at the foot of the axis) and said
    assert any(label.startswith("empirical lower bound = 0") for label in legend)
    # optimal-blanket on the exact lower bound: beside the diamond, not under the other tick
    (ax,) = _visible(fig)
    at_exact = [tuple(xy) for col in ax.collections for xy in col.get_offsets()
                if np.isclose(xy[1], 0.1)]  # point 0: optimal-blanket = exact lower = 0.1
    assert len(at_exact) == 2 and at_exact[0][0] != at_exact[1][0]


def test_one_eps_per_point_gives_bars_and_sizes_not_an_empty_scatter(figure):
    from shufflesim.simulator.plotting import plot_batches

    rows = []
    for point, (dropout, n) in enumerate(((0.1, 9000), (0.3, 7000))):
        for batch in range(20):
            rows.append(dict(point=point, overrides=json.dumps({"pipeline.dropout": dropout}),
                             repetition=0, round=batch, batch=0, open_time=0.0,
                             release_time=1.0, size=n + batch, honest_size=n + batch,
                             honest_blanket=0, dropped=False, reason="timeout",
                             epsilon=2.0 / np.sqrt(n), epsilon_source="bound",
                             bound="optimal-blanket", delta=1e-6,
                             epsilon_reason="the best proven upper bound, evaluated at "
                                            f"{n} users"))
    batches = pa.Table.from_pylist(rows, schema=BATCHES_TABLE_SCHEMA).to_pandas()
    (name, fig), = list(plot_batches({"batches": batches}, figure))
    assert name == "batches_epsilon"
    left, right = _visible(fig)
    assert len(left.patches) == 2 and left.get_ylim()[0] == 0  # one bar per point, from 0
    assert [t.get_text().split("\n")[1] for t in left.texts] == ["(20 batches)"] * 2
    assert "beyond the size eps was evaluated at" in right.get_xlabel()
    assert "one value per sweep point" in fig._suptitle.get_text()


def _learning(randomizers, repetitions: int) -> pd.DataFrame:
    from shufflesim.simulator.learning.section import LEARNING_SCHEMA

    rows = []
    for point, randomizer in enumerate(randomizers):
        for repetition in range(repetitions):
            for epoch in range(3):
                row = dict.fromkeys(LEARNING_SCHEMA.names)
                row.update(point=point, overrides="{}", repetition=repetition, epoch=epoch,
                           step=epoch, data="digits", model="softmax", randomizer=randomizer,
                           budget="constant 1", n_clients=10, clients_per_step=1,
                           examples_per_client=5, delta0=1e-5, delta=1e-4, train_loss=1.0,
                           train_accuracy=0.5, test_loss=1.0, test_accuracy=0.5 + 0.1 * epoch)
                rows.append(row)
    return pa.Table.from_pylist(rows, schema=LEARNING_SCHEMA).to_pandas()


def test_learning_titles_name_what_every_curve_shares(figure):
    from shufflesim.simulator.plotting import plot_learning

    figures = dict(plot_learning({"learning": _learning(["gaussian", "l2ball"], 1)}, figure))
    fig = figures["learning_accuracy"]
    assert "gaussian" not in fig._suptitle.get_text()
    legend = [text.get_text() for text in fig.legends[0].get_texts()]
    assert any("gaussian" in label for label in legend)
    assert any("l2ball" in label for label in legend)
    accuracy = _visible(fig)[0]
    assert "one repetition" in accuracy.get_title() and "CI" not in accuracy.get_title()
    assert not accuracy.collections  # no confidence band for one repetition
    fig = dict(plot_learning({"learning": _learning(["gaussian"], 3)}, figure))[
        "learning_accuracy"]
    assert "gaussian randomizer" in fig._suptitle.get_text()
    assert "95% CI over 3 repetitions" in _visible(fig)[0].get_title()


def test_plot_says_which_figures_it_left_out(tmp_path):
    from click.testing import CliRunner

    from shufflesim.simulator.cli import main

    run = tmp_path / "run"
    run.mkdir()
    pq.write_table(pa.Table.from_pandas(_utility(1), schema=UTILITY_SCHEMA,
                                        preserve_index=False), run / "utility.parquet")
    result = CliRunner().invoke(main, ["plot", str(run)], catch_exceptions=False)
    assert result.exit_code == 0
    assert "utility_frequency.png left out: one repetition per point" in result.output
    assert "nothing to plot" in result.output


def test_multi_message_figures_say_target_eps_and_keep_equal_curves_apart(figure):
    from shufflesim.simulator.plotting import plot_bounds_vs_n, plot_extra_amplification

    rows = []
    for eps in (0.5, 1.0, 1.5):
        for method, kind, status, factor in (
                ("multi-message-exact-upper", "upper", "proven", 0.3),
                ("multi-message-variation-ratio", "upper",
                 "relies-on-stronger-clone-reduction", 0.3),
                ("multi-message-exact-lower", "lower", "proven", 0.25)):
            rows.append(dict(method=method, kind=kind, status=status, statuses=status,
                             n=10000, delta=1e-6, epsilon0=eps, epsilon=factor * eps,
                             randomizer="cheu",
                             overrides=json.dumps({"population.budget.epsilon0": eps})))
    tables = {"bounds": pd.DataFrame(rows)}
    (_, fig), = list(plot_extra_amplification(tables, figure))
    assert "001 Figs. 3-4" in fig._suptitle.get_text()
    (ax,) = _visible(fig)
    assert ax.get_xlabel() == "target central eps' (epsilon0)"
    lines = {line.get_label(): line for line in ax.get_lines()}
    upper, caveated = (lines["exact-upper (upper)"],
                       lines["variation-ratio (upper, stronger-clone reduction)"])
    assert upper.get_marker() != caveated.get_marker()  # equal values, both visible
    assert caveated.get_zorder() > upper.get_zorder()
    (name, fig), = list(plot_bounds_vs_n(tables, figure))
    assert name == "bounds_eps_vs_epsilon0"
    assert "versus target central eps'" in fig._suptitle.get_text()
    assert _visible(fig)[0].get_xlabel() == "target central eps' (epsilon0)"
