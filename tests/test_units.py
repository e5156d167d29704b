"""Work units (simulator/units.py): the plan, keys, seeding, per-point producers, pickling, and
that assembling units in any completion order gives the tables of a whole run."""

from __future__ import annotations

import dataclasses
import pickle

import numpy as np
import pyarrow as pa
import pytest
from conftest import SWEEP_EPS, scenario_text

from shufflesim.simulator.audit.section import produce as audit_produce
from shufflesim.simulator.batch.run import BatchSetup
from shufflesim.simulator.errors import ScenarioError, UserError
from shufflesim.simulator.execution.runner import run_scenario
from shufflesim.simulator.execution.simulation import (
    execute_unit,
    make_setup,
    plan_units,
    utility_rows,
)
from shufflesim.simulator.execution.units import (
    PRODUCE,
    SIMULATE,
    RunState,
    UnitError,
    WorkUnit,
    assemble,
    plan_run,
    run_work_unit,
)
from shufflesim.simulator.scenario.loader import parse_scenario
from shufflesim.simulator.scenario.producers import (
    PRODUCERS,
    ProducerSpec,
    register_table_producer,
)

BASE = scenario_text(name="units", seed=11, repetitions=10, n=120,
                     sections="[batch]\nchunk_repetitions = 4\n" + SWEEP_EPS)

#: A cheap audit (the randomizer level evaluates no amplification bound).
AUDIT = """
[audit]
level = "randomizer"
trials = 20000
"""

PIPELINE = """
[pipeline]
batch_size = 40
timeout = 0.05
min_batch = 2
arrival = "poisson"
"""


def points_table(name: str):
    """A module-level producer (picklable): one row per point it is given."""
    def table(scenario, progress=None):
        return {"points_" + name: pa.table({"point": [p.index for p in scenario.points],
                                            "seed": [scenario.seed] * len(scenario.points)})}
    return table


def per_point_rows(scenario, progress=None):
    return {"points": pa.table({"point": pa.array([p.index for p in scenario.points],
                                                  type=pa.int32())})}


def failing_producer(scenario, progress=None):
    raise ScenarioError("audit.trials", 0, "must be an integer >= 1")


def comparable(table: pa.Table) -> pa.Table:
    """The table without wall-time columns (audit ``seconds``), which no run reproduces."""
    return table.drop([c for c in ("seconds",) if c in table.column_names])


def state_of(scenario, producers=()):
    setups = tuple(make_setup(point) for point in scenario.points)
    return RunState(scenario, setups, tuple(producers))


def run_all(state, order=None):
    units = plan_run(state)
    results = {}
    for unit in (units if order is None else [units[i] for i in order]):
        results[unit.key] = run_work_unit(state, unit)
    return units, assemble(units, lambda unit: results[unit.key])


def test_plan_lists_chunks_in_point_order_then_producers():
    scenario = parse_scenario(BASE)
    state = state_of(scenario, [ProducerSpec("whole", per_point_rows, False),
                                ProducerSpec("points", per_point_rows, True)])
    units = plan_run(state)
    simulation = [u for u in units if u.kind == SIMULATE]
    assert [(u.point, u.chunk, u.start, u.repetitions) for u in simulation] == [
        (p, c, 4 * c, r) for p in (0, 1) for c, r in enumerate((4, 4, 2))
    ]
    produce = [u for u in units if u.kind == PRODUCE]
    assert [(u.producer, u.point) for u in produce] == [
        ("whole", None), ("points", 0), ("points", 1)]
    assert [u.index for u in units] == list(range(len(units)))
    keys = [u.key for u in units]
    assert len(set(keys)) == len(keys)
    assert keys[0] == "sim-p000000-c000000-r0+4" and keys[2] == "sim-p000000-c000002-r8+2"
    assert keys[-3:] == ["prod-whole", "prod-points-p000000", "prod-points-p000001"]


def test_a_different_chunk_size_gives_different_keys():
    """Parts of another plan can never be taken for this plan's (same point and chunk index,
    other repetition range)."""
    other = parse_scenario(BASE.replace("chunk_repetitions = 4", "chunk_repetitions = 5"))
    keys = {u.key for u in plan_run(state_of(parse_scenario(BASE)))}
    assert keys.isdisjoint(u.key for u in plan_run(state_of(other)))


def test_a_simulation_unit_gives_the_rows_of_its_repetitions():
    scenario = parse_scenario(BASE)
    state = state_of(scenario)
    point = scenario.points[1]
    setup = BatchSetup.from_settings(point.settings)
    whole = []
    for unit in plan_units(point, setup):
        whole.append(execute_unit(setup, unit, scenario.seed))
    merged = {k: np.concatenate([r[k] for r in whole]) for k in whole[0]}
    expected = utility_rows(point, merged)
    units = [u for u in plan_run(state) if u.point == 1]
    tables = [run_work_unit(state, u)["utility"] for u in units]
    assert pa.concat_tables(tables).equals(expected)
    assert tables[1].column("repetition").to_pylist()[0] == 4


def test_completion_order_does_not_change_the_tables():
    scenario = parse_scenario(BASE + AUDIT)
    state = state_of(scenario, PRODUCERS.values())
    units, forward = run_all(state)
    order = np.random.default_rng(3).permutation(len(units))
    _, shuffled = run_all(state, order)
    assert list(forward) == ["utility", "audit"]
    for name in forward:
        assert comparable(shuffled[name]).equals(comparable(forward[name]))


def test_run_scenario_equals_the_assembled_units():
    scenario = parse_scenario(BASE + PIPELINE)
    tables = run_scenario(scenario)
    _, assembled = run_all(state_of(scenario, PRODUCERS.values()), order=None)
    assert set(tables) == {"utility", "batches"}
    for name in tables:
        assert tables[name].equals(assembled[name])
    repetitions = tables["batches"].column("repetition").to_numpy()
    assert set(repetitions) == set(range(10))


def test_per_point_producer_rows_equal_a_whole_run_call():
    scenario = parse_scenario(BASE)
    split = state_of(scenario, [ProducerSpec("points", per_point_rows, True)])
    _, tables = run_all(split)
    assert tables["points"].column("point").to_pylist() == [0, 1]


def test_the_audit_producer_can_be_split_by_point():
    """The audit seeds each point from (seed, point, AUDIT_KEY), so calling it on one point at a
    time gives the rows of one call on the whole scenario (wall-time column aside)."""
    scenario = parse_scenario(BASE + AUDIT)
    whole = audit_produce(scenario)["audit"]
    parts = [audit_produce(dataclasses.replace(scenario, points=(p,)))["audit"]
             for p in scenario.points]
    split = pa.concat_tables(parts)
    assert whole.num_rows == split.num_rows > 0
    assert comparable(whole).equals(comparable(split))


def test_producers_may_not_claim_the_utility_table_or_each_others():
    scenario = parse_scenario(BASE)
    steal = ProducerSpec("steal", lambda s, p=None: {"utility": pa.table({"x": [1]})}, False)
    with pytest.raises(RuntimeError, match="utility"):
        run_all(state_of(scenario, [steal]))
    twice = [ProducerSpec("a", per_point_rows, False), ProducerSpec("b", per_point_rows, False)]
    with pytest.raises(RuntimeError, match="produced by both"):
        run_all(state_of(scenario, twice))


def test_run_state_and_units_survive_pickling():
    """Workers receive the state by pickle: scenarios hold MappingProxyType sections."""
    scenario = parse_scenario(BASE + AUDIT)
    state = state_of(scenario, PRODUCERS.values())
    copy = pickle.loads(pickle.dumps(state))
    assert copy.scenario == scenario
    assert dict(copy.scenario.points[0].settings.sections) == dict(
        scenario.points[0].settings.sections)
    unit = plan_run(state)[0]
    assert pickle.loads(pickle.dumps(unit)) == unit
    assert run_work_unit(copy, unit)["utility"].equals(run_work_unit(state, unit)["utility"])


def test_user_errors_inside_a_unit_cross_processes_as_one_line():
    scenario = parse_scenario(BASE)
    state = state_of(scenario, [ProducerSpec("bad", failing_producer, False)])
    unit = plan_run(state)[-1]
    with pytest.raises(UnitError) as info:
        run_work_unit(state, unit)
    error = pickle.loads(pickle.dumps(info.value))
    assert isinstance(error, UserError)
    assert str(error) == "audit.trials = 0: must be an integer >= 1"


def test_register_table_producer_rejects_duplicates(monkeypatch):
    assert PRODUCERS.values()  # the built-ins loaded before the copy the test restores
    monkeypatch.setattr(PRODUCERS, "_items", dict(PRODUCERS._items))
    register_table_producer("extra", per_point_rows, per_point=True)
    assert PRODUCERS.get("extra") == ProducerSpec("extra", per_point_rows, True)
    with pytest.raises(RuntimeError, match="twice"):
        register_table_producer("extra", per_point_rows)


def test_producer_names_must_name_files():
    scenario = parse_scenario(BASE)
    with pytest.raises(RuntimeError, match="part file"):
        plan_run(state_of(scenario, [ProducerSpec("a/b", per_point_rows, False)]))


def test_work_units_are_frozen():
    unit = WorkUnit(0, "k", SIMULATE, 0, 0, 0, 1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        unit.key = "other"
