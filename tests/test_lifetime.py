"""Privacy over a deployment's lifetime in scenarios (issue 16): ``[bounds] rounds`` and the
per-user accounting of pipeline runs (users.parquet, simulator/pipeline/lifetime.py)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pyarrow as pa
import pytest
from conftest import scenario_text, uniform

from shufflesim.protocols.bounds import catalogue
from shufflesim.protocols.bounds.numerical.optimal import optimal_blanket_epsilon
from shufflesim.protocols.randomizers import make_randomizer
from shufflesim.simulator.execution.executors import InlineExecutor, ProcessExecutor
from shufflesim.simulator.execution.runner import run_scenario
from shufflesim.simulator.pipeline import PipelineConfig, run_pipeline
from shufflesim.simulator.pipeline.lifetime import _signatures, grid_sizes, lifetime_columns
from shufflesim.simulator.pipeline.unit import grid_size
from shufflesim.simulator.scenario.loader import parse_scenario

BOUNDS = scenario_text(name="lifetime_bounds", seed=None, repetitions=None, n=1000,
                       data=uniform(4)) + """[bounds]
delta = 1e-6
methods = ["optimal-blanket", "exact-lower", "fmt21_numerical", "blanket_hoeffding", "basic"]
"""

PIPELINE = scenario_text(name="lifetime_users", seed=11, repetitions=3, n=400,
                         data=uniform(4)) + """[batch]
chunk_repetitions = 1
[pipeline]
rounds = 6
dropout = 0.25
batch_size = 90
arrival = "poisson"
colluding_fraction = 0.05
delta = 1e-6
"""


def _frame(tables, name):
    return tables[name].to_pandas()


def test_rounds_one_rows_equal_the_single_round_bounds_and_grow_with_rounds():
    single = _frame(run_scenario(parse_scenario(BOUNDS), executor=InlineExecutor()), "bounds")
    text = BOUNDS + "rounds = [1, 4, 16]\n"
    rows = _frame(run_scenario(parse_scenario(text), executor=InlineExecutor()), "bounds")
    assert set(single.rounds) == {1}
    one = rows[rows.rounds == 1].set_index("method")
    for _, row in single.iterrows():  # catalogue rows at T = 1 are the single-round rows
        assert one.loc[row.method, "epsilon"] == pytest.approx(row.epsilon, rel=0, abs=0)
    # the composed-only methods come along at T = 1 when rounds is given
    assert "basic" in set(one.index)
    assert one.loc["basic", "epsilon"] == pytest.approx(one.loc["optimal-blanket", "epsilon"],
                                                        rel=1e-9)
    for method, line in rows.groupby("method"):
        values = line.sort_values("rounds").epsilon.to_numpy()
        if method == "blanket_hoeffding":  # does not compose: a reason, never a bare NaN
            later = line[line.rounds > 1]
            assert later.epsilon.isna().all()
            assert later.error.str.contains("does not compose").all()
            continue
        assert np.all(np.isfinite(values)), method
        assert np.all(np.diff(values) >= -1e-12), (method, values)
    naive = rows.drop_duplicates("rounds").set_index("rounds").naive_epsilon
    assert naive[16] == pytest.approx(16 * one.loc["optimal-blanket", "epsilon"], rel=1e-12)
    at16 = rows[rows.rounds == 16].set_index("method").epsilon
    # composed proven upper bounds sit between the composed exact lower bound and basic
    assert at16["exact-lower"] <= at16["optimal-blanket"] <= at16["basic"]
    assert at16["optimal-blanket"] < naive[16]


def _pipeline_run(seed=5):
    randomizer = make_randomizer("krr", epsilon0=1.0, domain_size=4)
    values = np.random.default_rng(seed).integers(0, 4, size=300)
    config = PipelineConfig(arrival="poisson", rounds=5, dropout=0.3, batch_size=40,
                            timeout=0.1, min_batch=3, colluding_fraction=0.1)
    result = run_pipeline(randomizer, values, config, np.random.default_rng(seed + 1),
                          keep_outputs=True, track_clients=True)
    return randomizer, result


def test_member_sizes_are_the_batches_each_client_was_in():
    _, result = _pipeline_run()
    expected = np.zeros_like(result.member_sizes)
    for batch in result.outputs:  # released batches only, with their clients (ground truth)
        expected[batch.round, batch.clients] = batch.honest_size
    np.testing.assert_array_equal(result.member_sizes, expected)
    # a client who dropped out of a round is in no batch that round
    for r, stream in enumerate(result.streams):
        absent = np.setdiff1d(np.arange(result.member_sizes.shape[1]), stream.client)
        assert np.all(result.member_sizes[r, absent] == 0)


def _largest_grid_point(h: int, base: int, steps: int) -> int:
    """By enumeration: h itself up to base, else the largest floor(base 2^(j/steps)) <= h."""
    if h <= base:
        return h
    points = (math.floor(base * 2.0 ** (j / steps) + 1e-9) for j in range(steps * 40))
    return max(p for p in points if p <= h)


def test_grid_sizes_are_the_largest_grid_points_below():
    sizes = np.array([1, 2, 63, 64, 65, 100, 1000, 7942, 7950, 99_999, 10**6])
    for base, steps in ((64, 16), (4, 2)):
        assert grid_sizes(sizes, base, steps).tolist() == [
            _largest_grid_point(int(s), base, steps) for s in sizes]
    assert [grid_size(int(s)) for s in sizes] == grid_sizes(sizes).tolist()


def test_lifetime_eps_invariants():
    """What is provable for each user of a run:

    * eps <= k eps0 (each of the k rounds is eps0-DP; pure DP composes additively);
    * eps >= the single-round exact lower bound at the user's smallest honest batch (dropping
      the other rounds is a post-processing, and rounding sizes down only raises upper bounds);
    * eps <= basic composition of the per-round optimal-blanket eps at delta / k with the same
      rounded sizes (a valid but looser bound on the same dominating pairs; 1% numerical slack
      of the PLD discretisation, docs/composition.md: measured below 0.2%);
    * a user whose (rounded) batches are a sub-multiset of another's never gets a larger eps.
    """
    delta, eps0 = 1e-6, 1.0
    randomizer, result = _pipeline_run()
    cols = lifetime_columns(result.member_sizes, result.colluding, randomizer, eps0, delta)
    eps = np.asarray(cols["epsilon"].to_numpy(zero_copy_only=False), dtype=float)
    rounds, smallest = np.asarray(cols["rounds"]), np.asarray(cols["smallest_batch"])
    colluding = np.asarray(cols["colluding"])
    assert np.all(np.isnan(eps[colluding]))
    honest = ~colluding
    assert np.all(eps[honest] <= rounds[honest] * eps0 + 1e-12)
    assert np.all(eps[honest & (rounds == 0)] == 0)
    notes = cols["note"].to_pylist()
    assert all(notes[i] for i in np.flatnonzero(honest & (rounds > 0)))
    sizes = np.where(colluding[None, :], 0, result.member_sizes)
    grid = grid_sizes(sizes)
    lower_cache, basic_cache = {}, {}
    checked = 0
    for i in np.flatnonzero(honest & (rounds > 0)):
        h = int(smallest[i])
        if h >= 2:
            if h not in lower_cache:
                lower_cache[h] = catalogue.evaluate("exact-lower", randomizer, h,
                                                    delta).result.epsilon
            assert eps[i] >= lower_cache[h] * (1 - 1e-9), (i, eps[i], lower_cache[h])
        k = int(rounds[i])
        total = 0.0
        for g in grid[:, i][sizes[:, i] > 0]:
            if g < 2:
                total += eps0
                continue
            key = (int(g), k)
            if key not in basic_cache:
                basic_cache[key] = optimal_blanket_epsilon(randomizer, int(g), delta / k).epsilon
            total += basic_cache[key]
        assert eps[i] <= min(total, k * eps0) * 1.01 + 1e-12, (i, eps[i], total)
        checked += 1
    assert checked > 100
    # sub-multisets (the grid actually used: the first that gives few signatures)
    values, unique, inverse = _signatures(np.where(colluding[None, :], 0, result.member_sizes),
                                          64, 16)
    by_signature = {j: eps[(inverse == j) & honest] for j in range(unique.shape[0])}
    for a, b in itertools.permutations(range(unique.shape[0]), 2):
        if by_signature[a].size and by_signature[b].size and np.all(unique[a] <= unique[b]):
            assert by_signature[a].max() <= by_signature[b].min() + 1e-12


# ~17 s; worker-count invariance runs by default in test_executors and test_learning_scenarios
@pytest.mark.slow
def test_users_table_same_rows_whatever_the_worker_count():
    scenario = parse_scenario(PIPELINE)
    one = run_scenario(scenario, executor=InlineExecutor())
    with ProcessExecutor(2, inline_seconds=0) as executor:
        two = run_scenario(parse_scenario(PIPELINE), executor=executor)
    assert "users" in one
    assert one["users"].num_rows == 3 * 400
    assert one["users"].equals(two["users"])
    users = one["users"].to_pandas()
    assert set(users.method) == {"optimal-blanket"}
    assert users.delta.eq(1e-6).all()
    assert users.colluding.sum() == 3 * 20


def test_no_users_table_without_rounds():
    text = PIPELINE.replace("rounds = 6\n", "")
    tables = run_scenario(parse_scenario(text), executor=InlineExecutor())
    assert "users" not in tables and "batches" in tables


def test_without_delta_users_get_k_eps0_pure_dp():
    randomizer, result = _pipeline_run()
    cols = lifetime_columns(result.member_sizes, result.colluding, randomizer, 1.0, None)
    eps = np.asarray(cols["epsilon"].to_numpy(zero_copy_only=False), dtype=float)
    honest = ~np.asarray(cols["colluding"])
    np.testing.assert_array_equal(eps[honest], np.asarray(cols["rounds"])[honest] * 1.0)
    assert set(cols["method"].to_pylist()) == {"local"}
    assert set(np.asarray(cols["delta"])) == {0.0}
    assert isinstance(cols["note"], pa.Array)


def test_lifetime_figures():
    pytest.importorskip("matplotlib")
    from shufflesim.simulator.plotting import figures

    tables = run_scenario(parse_scenario(PIPELINE.replace("repetitions = 3", "repetitions = 1")
                                         + "[bounds]\ndelta = 1e-6\nrounds = [1, 6]\n"
                                         'methods = ["optimal-blanket", "blanket_hoeffding", '
                                         '"basic"]\n'),
                          executor=InlineExecutor())
    frames = {name: table.to_pandas() for name, table in tables.items()}
    names = [name for name, _ in figures(frames)]
    assert "lifetime_users" in names and "bounds_eps_vs_rounds" in names
    assert not any(name.startswith("bounds_eps_vs_n") for name in names)
