"""``shufflesim plot`` (simulator/plotting.py): the figures each table allows, on small
synthetic tables with the real schemas, and the error paths."""

from __future__ import annotations

import json
import re
import sys

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from shufflesim.simulator.audit.tables import AUDIT_SCHEMA
from shufflesim.simulator.cli import main
from shufflesim.simulator.errors import UserError
from shufflesim.simulator.pipeline.unit import BATCHES_TABLE_SCHEMA
from shufflesim.simulator.plotting import _utility_axis, bound_curves, find_runs, short_overrides
from shufflesim.simulator.results.tables import UTILITY_SCHEMA

pytest.importorskip("matplotlib")
PNG = b"\x89PNG\r\n\x1a\n"


def utility_table() -> pa.Table:
    rows = []
    for point, eps in enumerate((0.5, 1.0, 2.0)):
        overrides = json.dumps({"population.budget.epsilon0": eps})
        for repetition in range(5):
            for metric in ("l2", "mse"):
                for reference in ("empirical", "population"):
                    rows.append(dict(point=point, overrides=overrides, randomizer="krr",
                                     estimator="frequency", n=1000, epsilon0=eps,
                                     path="reports", repetition=repetition, metric=metric,
                                     reference=reference, value=0.1 / eps + 0.001 * repetition))
    return pa.Table.from_pylist(rows, schema=UTILITY_SCHEMA)


def audit_table() -> pa.Table:
    rows = []
    for point, n in enumerate((100, 1000, 10000)):
        base = dict.fromkeys(AUDIT_SCHEMA.names)
        base.update(point=point, overrides=json.dumps({"population.n": n}), randomizer="krr",
                    n=n, epsilon0=1.0, delta=1e-6, level="shuffle")
        exact = 2.0 / np.sqrt(n)
        rows.append({**base, "row_type": "attack", "attack": "lr", "epsilon_lb": exact / 3,
                     "exact_lower": exact})
        for bound, kind, status, eps, verdict in (
                ("optimal-blanket", "upper", "proven", 1.1 * exact, "consistent"),
                ("variation-ratio", "upper", "relies-on-stronger-clone-reduction",
                 0.9 * exact, "violated"),
                ("exact-lower", "lower", "proven", exact, "reference")):
            rows.append({**base, "row_type": "verdict", "bound": bound, "bound_kind": kind,
                         "bound_status": status, "bound_epsilon": eps, "exact_lower": exact,
                         "epsilon_lb": exact / 3, "confidence": 0.95, "verdict": verdict})
    return pa.Table.from_pylist(rows, schema=AUDIT_SCHEMA)


def batches_table() -> pa.Table:
    rows = []
    for point, timeout in enumerate((1.0, 60.0)):
        for batch in range(6):
            size = int(5 * timeout ** 0.5) + batch
            rows.append(dict(point=point, overrides=json.dumps({"pipeline.timeout": timeout}),
                             repetition=0, round=0, batch=batch, open_time=batch * timeout,
                             release_time=(batch + 1) * timeout, size=size, honest_size=size,
                             honest_blanket=0,
                             dropped=batch == 5, reason="timeout",
                             epsilon=2.0 / np.sqrt(size), epsilon_source="bound",
                             bound="fmt21_numerical", delta=1e-6,
                             epsilon_reason=""))
    return pa.Table.from_pylist(rows, schema=BATCHES_TABLE_SCHEMA)


@pytest.fixture
def run_dir(tmp_path):
    run = tmp_path / "results" / "demo"
    run.mkdir(parents=True)
    pq.write_table(utility_table(), run / "utility.parquet")
    pq.write_table(audit_table(), run / "audit.parquet")
    pq.write_table(batches_table(), run / "batches.parquet")
    return run


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def test_every_figure_is_written_as_png(run_dir):
    result = invoke("plot", run_dir)
    assert result.exit_code == 0, result.output
    names = sorted(p.name for p in (run_dir / "plots").iterdir())
    assert names == ["audit_sandwich.png", "batches_epsilon.png", "bounds_eps_vs_n.png",
                     "utility_frequency.png"]
    for name in names:
        assert (run_dir / "plots" / name).read_bytes()[:8] == PNG
        assert f"wrote {run_dir / 'plots' / name}" in result.output


def test_a_directory_of_runs_and_out(run_dir, tmp_path):
    other = run_dir.parent / "second"
    other.mkdir()
    pq.write_table(utility_table(), other / "utility.parquet")
    out = tmp_path / "figures"
    result = invoke("plot", run_dir.parent, "--out", out, "-q")
    assert result.exit_code == 0 and result.output == ""
    assert sorted(p.name for p in out.iterdir()) == [
        "demo_audit_sandwich.png", "demo_batches_epsilon.png", "demo_bounds_eps_vs_n.png",
        "demo_utility_frequency.png", "second_utility_frequency.png"]
    assert find_runs(run_dir.parent) == [run_dir, other]


def test_bound_curves_from_the_audit_and_from_a_bounds_table(run_dir):
    tables = {"audit": pd.read_parquet(run_dir / "audit.parquet")}
    curves = bound_curves(tables)
    assert set(curves.bound) == {"optimal-blanket", "variation-ratio", "exact-lower",
                                 "empirical"}
    assert curves[curves.bound == "optimal-blanket"].n.tolist() == [100, 1000, 10000]
    assert curves.panel.nunique() == 1  # n is the x axis, not a panel
    bounds = pd.DataFrame({"method": ["a", "a", "b"], "n": [10, 100, 10],
                           "delta": [1e-6] * 3, "epsilon": [1.0, 0.5, 2.0],
                           "epsilon0": [1.0] * 3})
    curves = bound_curves({"bounds": bounds, **tables})
    assert set(curves.bound) == {"a", "b"}  # a bounds table takes precedence
    assert bound_curves({"bounds": bounds.drop(columns="n")}) is None


def test_the_utility_axis_is_eps0_or_else_the_swept_number():
    frame = utility_table().to_pandas()
    key, label, x = _utility_axis(frame)
    assert key is None and label == "local budget eps0" and x == {0: 0.5, 1: 1.0, 2: 2.0}
    # 003-style: a three-group budget with the same reference eps0 at every point
    fractions = {0: 0.01, 1: 0.2, 2: 0.5}
    frame["epsilon0"] = 0.1
    frame["overrides"] = [json.dumps({"population.budget.conservative_fraction": fractions[p],
                                      "estimator.name": "gspa_mean"}) for p in frame.point]
    key, label, x = _utility_axis(frame)
    assert key == "population.budget.conservative_fraction" and label == "conservative_fraction"
    assert x == fractions


def test_short_overrides():
    text = json.dumps({"population.budget.epsilon0": 0.5, "population.n": 100})
    assert short_overrides(text) == "epsilon0=0.5, n=100"
    assert short_overrides(text, drop=("n",)) == "epsilon0=0.5"
    assert short_overrides("{}") == ""
    assert short_overrides(text, drop=("population.n",)) == "epsilon0=0.5"


def test_missing_matplotlib_is_a_one_line_error(run_dir, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    result = CliRunner().invoke(main, ["plot", str(run_dir)])
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        "error: plotting needs matplotlib: pip install 'shufflesim[plot]' "
        "(or pip install matplotlib)"]


def test_no_tables_is_a_one_line_error(tmp_path):
    result = CliRunner().invoke(main, ["plot", str(tmp_path)])
    assert result.exit_code == 2
    assert result.output.strip() == (
        f"error: no result tables (*.parquet) in {tmp_path} or its sub-directories")
    with pytest.raises(UserError, match="not found"):
        find_runs(tmp_path / "absent")


# -- regressions: panels never keyed by the x variable, other protocols marked, utility versus
# -- every swept key, one metric name --------------------------------------------------------
PERSONALIZED_N = """
name = "pers-n"
seed = 1
repetitions = 1
[population]
n = 1000
data = { distribution = "categorical", weights = [0.3, 0.7] }
budget = { distribution = "three_groups" }
[randomizer]
name = "brr"
[estimator]
name = "gspa_frequency"
[bounds]
delta = 1e-4
methods = ["optimal-blanket-personalized", "exact-lower-personalized", "baseline-min-budget"]
[sweep]
"""


def _visible_axes(fig):
    return [ax for ax in fig.axes if ax.get_visible()]


def _personalized_bounds(sweep: str) -> pd.DataFrame:
    from shufflesim.simulator.scenario import bounds as bounds_section
    from shufflesim.simulator.scenario.loader import parse_scenario

    scenario = parse_scenario(PERSONALIZED_N + sweep)
    return bounds_section.produce(scenario)["bounds"].to_pandas()


@pytest.mark.parametrize("sweep", [
    '"population.n" = [500, 1000, 2000]\n"estimator.name" = ["gspa_frequency", '
    '"weighted_frequency"]\n',
    # another numeric key first: n must still be the x axis, never a panel
    '"population.budget.conservative_epsilon" = [0.05, 0.2]\n'
    '"population.n" = [500, 1000, 2000]\n',
])
def test_personalized_sweep_over_n_gives_curves_not_single_point_panels(sweep):
    from matplotlib import figure

    from shufflesim.simulator.plotting import plot_bounds_vs_n

    bounds = _personalized_bounds(sweep)
    assert bounds.budget.nunique() >= 3  # the budget multiset changes with n
    figures = list(plot_bounds_vs_n({"bounds": bounds}, figure))
    assert [name for name, _ in figures] == ["bounds_eps_vs_n"]
    axes = _visible_axes(figures[0][1])
    assert len(axes) == max(1, bounds.overrides.map(
        lambda o: json.loads(o).get("population.budget.conservative_epsilon")).nunique())
    for ax in axes:
        assert ax.get_xlabel().startswith("n")
        assert not re.search(r"\bn=", ax.get_title()) and not re.search(r"\d x ", ax.get_title())
        assert "%" in ax.get_title()  # the budget multiset as shares, free of n
        lines = [line for line in ax.get_lines() if len(line.get_xdata())
                 and not line.get_label().startswith("_")]  # not the lower bound's band
        assert len(lines) == 3  # one curve per bound
        for line in lines:
            assert sorted(line.get_xdata()) == [500, 1000, 2000]


def test_baseline_of_another_protocol_is_marked_and_never_an_upper_bound():
    from matplotlib import figure

    from shufflesim.simulator.plotting import plot_bounds_vs_n

    bounds = _personalized_bounds('"population.n" = [500, 2000]\n')
    assert set(bounds[bounds.method == "baseline-min-budget"].kind) == {"upper"}
    (_, fig), = list(plot_bounds_vs_n({"bounds": bounds}, figure))
    (ax,) = _visible_axes(fig)
    by_label = {line.get_label(): line for line in ax.get_lines()}
    (baseline,) = [label for label in by_label if label.startswith("baseline-min-budget")]
    assert "other protocol" in baseline and "upper" not in baseline
    assert by_label[baseline].get_linestyle() == "-."
    main = [line for label, line in by_label.items() if label != baseline]
    assert all(line.get_linestyle() != "-." for line in main)
    legend = [text.get_text() for text in fig.legends[0].get_texts()]
    assert baseline in legend
    assert "optimal-blanket-personalized (upper bound)" in legend


def _fraction_utility() -> pd.DataFrame:
    rows = []
    point = 0
    for fraction in (0.01, 0.2, 0.5):
        for budget in (0.05, 0.1):
            for estimator in ("gspa_mean", "weighted_mean"):
                overrides = json.dumps({"population.budget.conservative_fraction": fraction,
                                        "population.budget.conservative_epsilon": budget,
                                        "estimator.name": estimator})
                for repetition in range(3):
                    for metric in ("error", "mse", "mae"):
                        rows.append(dict(point=point, overrides=overrides, randomizer="laplace",
                                         estimator=estimator, n=1000, epsilon0=1.0,
                                         path="reports", repetition=repetition, metric=metric,
                                         reference="empirical",
                                         value=fraction / budget + 0.01 * repetition))
                point += 1
    return pa.Table.from_pylist(rows, schema=UTILITY_SCHEMA).to_pandas()


def test_utility_versus_every_numeric_swept_key():
    from matplotlib import figure

    from shufflesim.simulator.plotting import plot_utility_vs_keys

    figures = dict(plot_utility_vs_keys({"utility": _fraction_utility()}, figure))
    assert sorted(figures) == ["utility_mae_vs_conservative_epsilon",
                               "utility_mae_vs_conservative_fraction"]
    axes = _visible_axes(figures["utility_mae_vs_conservative_fraction"])
    assert [ax.get_title() for ax in axes] == ["conservative_epsilon=0.05",
                                               "conservative_epsilon=0.1"]
    for ax in axes:
        assert ax.get_xlabel() == "conservative_fraction" and ax.get_ylabel() == "mean mae"
        lines = [line for line in ax.get_lines() if line.get_linestyle() in ("-", "--")]
        assert len(lines) == 2  # one per estimator
        for line in lines:
            assert list(line.get_xdata()) == [0.01, 0.2, 0.5]
    # a run that sweeps eps0 alone has its one figure already (utility_<estimator>)
    assert list(plot_utility_vs_keys({"utility": utility_table().to_pandas()}, figure)) == []


def test_every_figure_of_a_run_with_one_sweep_key(run_dir):
    from shufflesim.simulator.plotting import figures, load_tables

    names = [name for name, _ in figures(load_tables(run_dir))]
    assert "utility_frequency" in names and not any("mae_vs" in n for n in names)


def test_frequency_and_mean_tables_share_the_metric_names():
    from shufflesim.simulator.batch.targets import target_for

    frequency = set(target_for("frequency").metric_names)
    for name in ("mean", "sum", "gspa_mean", "weighted_mean"):
        scalar = set(target_for(name).metric_names)
        assert scalar == {"error", "mse", "mae"}
        assert {"mse", "mae"} <= frequency
    assert not (frequency | scalar) & {"squared_error", "abs_error"}
    # and the values agree: a scalar is a frequency vector of one coordinate
    freq = target_for("frequency").metrics(np.array([[0.5]]), np.array([[0.2]]))
    mean = target_for("mean").metrics(np.array([0.5]), np.array([0.2]))
    for metric in ("mse", "mae"):
        np.testing.assert_allclose(freq[metric], mean[metric])


def test_no_utility_line_is_a_single_point_when_n_is_swept():
    from matplotlib import figure

    from shufflesim.simulator.plotting import plot_utility, plot_utility_vs_keys

    rows = []
    for point, (d, n) in enumerate([(d, n) for d in (2, 4) for n in (100, 1000)]):
        overrides = json.dumps({"population.data.domain_size": d, "population.n": n})
        for metric in ("l2", "mae"):
            for reference in ("empirical", "population"):
                for repetition in range(2):
                    rows.append(dict(point=point, overrides=overrides, randomizer="krr",
                                     estimator="frequency", n=n, epsilon0=1.0, path="reports",
                                     repetition=repetition, metric=metric,
                                     reference=reference, value=d / n + repetition))
    tables = {"utility": pa.Table.from_pylist(rows, schema=UTILITY_SCHEMA).to_pandas()}
    figures = [*plot_utility(tables, figure), *plot_utility_vs_keys(tables, figure)]
    assert {name for name, _ in figures} >= {"utility_mae_vs_n", "utility_mae_vs_domain_size"}
    for name, fig in figures:
        for ax in _visible_axes(fig):
            for line in ax.get_lines():
                if line.get_linestyle() in ("-", "--") and ax.get_xlabel() in ("n", "domain_size"):
                    assert len(line.get_xdata()) == 2, (name, ax.get_title(), line.get_label())


def test_figures_draws_every_registered_plot_kind_in_declared_order():
    """Issue 27: plot kinds are a declared registry (plotting/kinds.py, simulator/plugins.py
    PLOTS); ``figures`` draws each, a kind registered later included."""
    from shufflesim.simulator.plotting import PLOTS, figures, register_plot

    assert list(PLOTS)[:2] == ["utility", "utility_vs_keys"] and "audit_sandwich" in PLOTS
    assert {kind.table for kind in PLOTS.values()} >= {"utility", "bounds", "audit"}

    @register_plot("toy_plot", table="utility")
    def toy(tables, figure_module):
        return [("toy", figure_module)]  # a kind may return a list or yield

    marker = object()
    try:
        drawn = figures({}, figure_module=marker)  # no table: only the toy kind draws
    finally:
        PLOTS.remove("toy_plot")
    assert drawn == [("toy", marker)]
    assert "toy_plot" not in PLOTS
