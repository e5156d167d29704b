"""A ``[pipeline]`` run without ``pipeline.bound`` never writes a bare NaN epsilon: with a central
delta (``pipeline.delta`` or the ``[bounds]`` section's) every released batch gets the best proven
upper bound of the catalogue, without any delta the local budget at delta 0; the
``epsilon_reason`` column says which, and why a dropped batch has none."""

from __future__ import annotations

import math
import textwrap

import numpy as np
import pytest
from conftest import constant_budget, scenario_text, zipf

from shufflesim.protocols.bounds import catalogue
from shufflesim.protocols.bounds.result import BoundKind, BoundStatus
from shufflesim.simulator.execution.runner import run_scenario
from shufflesim.simulator.pipeline.unit import EXACT_UP_TO, GRID_STEPS, grid_size
from shufflesim.simulator.scenario.loader import parse_scenario

BASE = scenario_text(
    name="pipe-default", seed=11, repetitions=2, n=400, data=zipf(4, 0.8),
    budget=constant_budget(2.0)) + """[pipeline]
batch_size = 150
timeout = 0.3
min_batch = 100
arrival = "uniform"
"""


def _batches(extra: str):
    scenario = parse_scenario(textwrap.dedent(BASE) + textwrap.dedent(extra))
    tables = run_scenario(scenario)
    return scenario, tables["batches"].to_pandas()


def _best_proven(randomizer, n, delta):
    values = []
    for spec in catalogue.applicable_bounds(randomizer):
        if spec.kind is not BoundKind.UPPER or spec.status is not BoundStatus.PROVEN or spec.also:
            continue
        result = catalogue.evaluate(spec.name, randomizer, n, delta).result
        if result is not None and result.status is BoundStatus.PROVEN:
            values.append((result.epsilon, spec.name))
    return min(values)


def test_bounds_section_delta_gives_the_best_proven_bound():
    scenario, batches = _batches("""
        [bounds]
        delta = [1e-6, 1e-3]
    """)
    randomizer = scenario.points[0].settings.randomizer
    released = batches[~batches.dropped]
    assert len(released) > 0 and batches.dropped.any()
    # never NaN without a reason: released batches all have a finite epsilon; dropped ones
    # have none and say why
    assert np.isfinite(released.epsilon.to_numpy(dtype=float)).all()
    assert batches[batches.dropped].epsilon.isna().all()
    assert (batches.epsilon_reason.str.len() > 0).all()
    assert batches[batches.dropped].epsilon_reason.str.contains("dropped").all()
    assert (batches.delta == 1e-6).all()  # the smallest delta of [bounds]
    assert released.epsilon_reason.str.contains("bounds.delta").all()
    for h, rows in released.groupby("honest_size"):
        eps, name = _best_proven(randomizer, grid_size(int(h)), 1e-6)
        assert eps < 2.0
        np.testing.assert_allclose(rows.epsilon.to_numpy(dtype=float), eps)
        assert (rows.bound == name).all() and (rows.epsilon_source == "bound").all()
        spec = catalogue.get_bound(name)
        assert spec.kind is BoundKind.UPPER and spec.status is BoundStatus.PROVEN
    # amplification: below eps0 = 2 for batches of 100 or more
    assert released.epsilon.max() < 2.0


def test_pipeline_delta_alone_gives_the_best_proven_bound():
    _, batches = _batches('delta = 1e-5\n')
    released = batches[~batches.dropped]
    assert np.isfinite(released.epsilon.to_numpy(dtype=float)).all()
    assert (released.epsilon < 2.0).all() and (batches.delta == 1e-5).all()
    assert released.epsilon_reason.str.contains("pipeline.delta").all()


def test_grid_rounding_is_down_and_fine():
    sizes = range(1, 5000)
    grid = [grid_size(h) for h in sizes]
    assert all(g <= h for g, h in zip(grid, sizes, strict=True))
    assert all(g == h for g, h in zip(grid, sizes, strict=True) if h <= EXACT_UP_TO)
    assert all(g >= h * 2 ** (-1 / GRID_STEPS) - 1 for g, h in zip(grid, sizes, strict=True))
    assert grid == sorted(grid)  # monotone: more users never get a larger epsilon
    assert len(set(grid[EXACT_UP_TO:])) <= GRID_STEPS * math.ceil(math.log2(5000 / 64)) + 1


@pytest.mark.parametrize("h", [2, 10, 64, 65, 200, 1000])
def test_rounded_value_is_conservative(h):
    from shufflesim.protocols.randomizers.registry import make_randomizer

    randomizer = make_randomizer("krr", epsilon0=2.0, domain_size=4)
    exact, _ = _best_proven(randomizer, h, 1e-6)
    rounded, _ = _best_proven(randomizer, grid_size(h), 1e-6)
    assert rounded >= exact - 1e-12
