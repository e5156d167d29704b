"""The ``[learning]`` section end to end (issue 19): parsing, the shipped 003 scenarios, the
learning table, reproducibility across worker counts, the figure."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from shufflesim.protocols.learning.accounting import BOUND_COLUMNS
from shufflesim.simulator.cli import main
from shufflesim.simulator.errors import UserError
from shufflesim.simulator.execution.executors import InlineExecutor, ProcessExecutor
from shufflesim.simulator.execution.runner import run_scenario
from shufflesim.simulator.learning.section import LEARNING_SCHEMA, LearningSection
from shufflesim.simulator.scenario.loader import load_scenario, parse_scenario

ROOT = Path(__file__).resolve().parents[1]
LEARNING = ROOT / "scenarios" / "learning"
COMPARISON = {"gspa_constant": "gspa-constant", "gspa_unif2": "gspa-unif2",
              "gspa_unif3": "gspa-unif3", "gspa_three_groups": "gspa-three-groups"}

SMALL = """
name = "learning_small"
seed = 7
repetitions = 1

[population]
n = 200
data = { distribution = "categorical", weights = [0.5, 0.5] }
budget = { distribution = "preset", preset = "gspa-constant" }

[randomizer]
name = "brr"

[estimator]
name = "gspa_frequency"

[learning]
pca_components = 10
examples_per_client = 20
clients_per_step = 3
epochs = 2
learning_rate = 0.2
clip = 0.5
repetitions = 2
delta = 0.01
delta0 = 1e-6

[sweep]
"population.budget.preset" = ["gspa-constant", "gspa-unif2"]
"learning.randomizer" = ["gaussian", "duchi"]
"""


def test_shipped_scenarios_follow_003s_design():
    for stem, preset in COMPARISON.items():
        scenario = load_scenario(LEARNING / f"{stem}.toml")
        (point,) = scenario.points
        section = point.settings.sections["learning"]
        assert isinstance(section, LearningSection)
        assert point.settings.population.budget.preset == preset
        # 003 Table 3 / Alg. 3: one client per step, delta0 = 1e-5, 50 epochs, example-level
        assert (section.clients_per_step, section.delta0, section.epochs) == (1, 1e-5, 50)
        assert section.privacy_unit == "example" and section.randomizer == "gaussian"
        assert section.repetitions >= 10
    (duchi,) = load_scenario(LEARNING / "duchi_clients.toml").points
    section = duchi.settings.sections["learning"]
    assert (section.randomizer, section.examples_per_client) == ("duchi", 1)
    assert section.clients_per_step > 1
    fig4 = load_scenario(LEARNING / "fig4.toml")
    assert [p.settings.population.budget.preset for p in fig4.points] == list(
        COMPARISON.values())


def test_section_errors_name_the_key():
    bad = SMALL.replace("epochs = 2", "epochs = 0")
    with pytest.raises(UserError, match="learning.epochs"):
        parse_scenario(bad)
    with pytest.raises(UserError, match="learning.learning_rat"):
        parse_scenario(SMALL.replace("learning_rate = 0.2", "learning_rat = 0.2"))
    with pytest.raises(UserError, match="learning.delta"):
        parse_scenario(SMALL.replace("delta = 0.01", "delta = 2.0"))


@pytest.fixture(scope="module")
def small_tables():
    return run_scenario(parse_scenario(SMALL), executor=InlineExecutor())


def test_learning_table_rows_and_accounting(small_tables):
    table = small_tables["learning"]
    assert table.schema.names == LEARNING_SCHEMA.names
    frame = table.to_pandas()
    # 4 points x 2 repetitions x (epochs + 1) rows, in point, repetition, epoch order
    assert len(frame) == 4 * 2 * 3
    assert frame.groupby(["point", "repetition"]).epoch.apply(list).map(
        lambda e: e == [0, 1, 2]).all()
    assert set(frame.randomizer) == {"gaussian", "duchi"}
    assert set(frame.budget) == {"gspa-constant", "gspa-unif2"}
    start, end = frame[frame.epoch == 0], frame[frame.epoch == 2]
    for column in BOUND_COLUMNS:
        assert (start[f"epsilon_{column}"] == 0).all()
    # the accounting grows with the epochs and the per-user bound never exceeds the local one
    last = end.set_index(["point", "repetition"])
    first = frame[frame.epoch == 1].set_index(["point", "repetition"])
    assert (last.epsilon_local_max >= first.epsilon_local_max).all()
    assert (last.epsilon_user_max <= last.epsilon_local_max + 1e-12).all()
    assert (last.epsilon_user_median <= last.epsilon_user_max).all()
    # constant budgets: every client 0.5; Unif 2: drawn in (0.01, 2)
    const = frame[frame.budget == "gspa-constant"]
    assert (const.epsilon0_min == 0.5).all() and (const.epsilon0_max == 0.5).all()
    unif = frame[frame.budget == "gspa-unif2"]
    assert (unif.epsilon0_min > 0.01).all() and (unif.epsilon0_max < 2).all()
    # Duchi (pure): local lifetime = epochs x the largest budget
    duchi = end[end.randomizer == "duchi"]
    np.testing.assert_allclose(duchi.epsilon_local_max, 2 * duchi.epsilon0_max)
    # the two repetitions differ (own seeds), the points' splits too
    reps = end.groupby("point").test_accuracy.nunique()
    assert (reps >= 1).all() and frame.test_loss.nunique() > 4


def test_same_rows_whatever_the_worker_count(small_tables):
    # the pure pool (the calling process does not compute): every unit runs in a worker
    with ProcessExecutor(2, inline_seconds=0, driver_computes=False) as pool:
        again = run_scenario(parse_scenario(SMALL), executor=pool)
        assert pool.inline_items == 0  # every unit ran in a worker process
    assert again["learning"].equals(small_tables["learning"])


def test_cli_run_and_plot(tmp_path):
    text = re.sub(r'"learning.randomizer" = .*', "", SMALL)
    path = tmp_path / "small.toml"
    path.write_text(text)
    runner = CliRunner()
    result = runner.invoke(main, ["run", str(path), "--out", str(tmp_path / "out"),
                                  "--workers", "1", "--quiet"])
    assert result.exit_code == 0, result.output
    run = tmp_path / "out" / "learning_small"
    assert pq.read_table(run / "learning.parquet").num_rows == 2 * 2 * 3
    pytest.importorskip("matplotlib")
    result = runner.invoke(main, ["plot", str(run), "--out", str(tmp_path / "fig")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "fig" / "learning_accuracy.png").stat().st_size > 10_000
    assert (tmp_path / "fig" / "learning_epsilon.png").stat().st_size > 10_000


FIG2 = ROOT / "scenarios" / "gspa_fig2.toml"


def test_fig2_scenario_covers_table_2_and_n_from_1e3_to_1e4():
    scenario = load_scenario(FIG2)
    presets = {p.settings.population.budget.preset for p in scenario.points}
    assert presets == {"gspa-unif1", "gspa-unif2", "gspa-constant", "gspa-mixed"}
    ns = sorted({p.settings.population.n for p in scenario.points})
    assert ns[0] == 1000 and ns[-1] == 10_000 and len(ns) >= 10  # curves, not single points
    assert {p.settings.sections["bounds"].delta for p in scenario.points} == {(1e-4,)}
    methods = scenario.points[0].settings.sections["bounds"].methods
    assert "gspa-gdp-personalized" in methods and "optimal-blanket-personalized" in methods


def test_fig2_reduced_run_orders_its_bounds(tmp_path):
    text = FIG2.read_text()
    text = re.sub(r'^"population.n" = \[.*\]$', '"population.n" = [1000, 3000]', text,
                  flags=re.M)
    text = re.sub(r'^"population.budget.preset" = \[.*\]$',
                  '"population.budget.preset" = ["gspa-unif2", "gspa-mixed"]', text, flags=re.M)
    tables = run_scenario(parse_scenario(text), executor=InlineExecutor())
    bounds = tables["bounds"].to_pandas()
    bounds = bounds[bounds.epsilon.notna()]
    for _, rows in bounds.groupby(["point"]):
        lower = rows[rows.kind == "lower"].epsilon.max()
        proven_upper = rows[(rows.kind == "upper") & (rows.status == "proven")].epsilon
        assert len(proven_upper) >= 2 and (proven_upper >= lower).all()
    # every bound decreases with n (one curve per bound and budget distribution)
    bounds["preset"] = bounds.overrides.map(lambda o: json.loads(o)["population.budget.preset"])
    curves = 0
    for _, rows in bounds.groupby(["preset", "method"]):
        if rows.n.nunique() == 2:
            curves += 1
            assert rows.sort_values("n").epsilon.is_monotonic_decreasing
    assert curves >= 6


@pytest.mark.parametrize("path", sorted(LEARNING.glob("*.toml")), ids=lambda p: p.name)
def test_learning_scenarios_pass_the_json_schema(path):
    """docs/scenario.schema.json covers [learning] (tests/test_scenario_schema.py checks only
    the top-level scenarios/ folder)."""
    import tomllib

    from test_scenario_schema import errors

    from shufflesim.simulator.scenario.schema import scenario_schema

    assert errors(tomllib.loads(path.read_text()), scenario_schema()) == []


def test_a_csv_file_relative_to_the_scenario(tmp_path):
    rng = np.random.default_rng(3)
    labels = rng.integers(0, 3, 300)
    features = rng.normal(size=(300, 4)) + labels[:, None]  # separable enough to learn
    lines = ["a,b,c,d,kind"] + [",".join(f"{v:.6f}" for v in row) + f",{y}"
                                for row, y in zip(features, labels, strict=True)]
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "points.csv").write_text("\n".join(lines) + "\n")
    text = re.sub(r'"learning.randomizer" = .*', "", SMALL).replace(
        "pca_components = 10", 'pca_components = 0\ndata = "data/points.csv"\n'
        'label_column = "kind"\nrandomizer = "none"').replace(
        '"population.budget.preset" = ["gspa-constant", "gspa-unif2"]', "")
    path = tmp_path / "csv.toml"
    path.write_text(text)
    scenario = load_scenario(path)
    section = scenario.points[0].settings.sections["learning"]
    assert Path(section.data) == tmp_path / "data" / "points.csv"
    frame = run_scenario(scenario, executor=InlineExecutor())["learning"].to_pandas()
    assert set(frame.data) == {"points.csv"} and frame.epsilon_local_max.isna().all()
    assert frame[frame.epoch == 2].test_accuracy.min() > 0.6


def test_clip_nonprivate_false_trains_the_non_private_run_unclipped():
    """``clip_nonprivate = false``: plain SGD for ``randomizer = "none"`` only (the
    non-private baseline of 003 Fig. 4); the private runs keep their clip, and the default keeps
    the old behaviour (clipped SGD without noise)."""
    assert LearningSection(randomizer="none", clip=2.0).config(1.0).clip == 2.0
    plain = LearningSection(randomizer="none", clip=2.0, clip_nonprivate=False)
    assert plain.config(1.0).clip is None
    private = LearningSection(randomizer="gaussian", clip=2.0, clip_nonprivate=False)
    assert private.config(1.0).clip == 2.0
