"""Run a scenario: sweep points x repetitions through the batch path, into result tables.

Units of work. Each sweep point's repetitions are cut into chunks of a fixed size (the setup's
``unit_repetitions``: ``batch.chunk_repetitions`` or a value derived from the memory budget, a
function of the scenario alone). The unit (point index p, chunk index c) draws all its
randomness from ``SeedSequence(entropy=seed, spawn_key=(p, c))``, the c-th child of the p-th
child of ``SeedSequence(seed)``. Units are independent, so the rows do not depend on the order
in which units run or on how many workers run them: the same scenario and seed always give the
same rows (for a given numpy version).

Extension point. Modules that add scenario sections (``[pipeline]``, ``[bounds]``, ...) can
contribute tables with :func:`register_table_producer`; a producer is called with a scenario and
a progress callback (None when it runs as a unit) and returns ``{table name: pyarrow.Table}``
(empty when its section is absent). Registered with ``per_point=True``, it is called once per
sweep point with the scenario restricted to that point (``scenario.points == (point,)``; the
point keeps its index), and the rows of the points are concatenated in point order: the work
then spreads over workers and resumes point by point. Otherwise it is called once per run.

Execution. :func:`run_scenario` runs the units of simulator.units (simulation chunks, then
producer calls) on an executor (simulator.executors; default: this process) and, given a run
directory, keeps every finished unit's rows as part files there so that an interrupted run
resumes where it stopped (simulator.resume).

Pipeline points. A sweep point whose scenario has a ``[pipeline]`` section runs through the
SimPy pipeline instead of the batch path (:class:`simulator.pipeline.unit.PipelineSetup`, same
units and seeding); its units also return rows of the ``batches`` table, concatenated in unit
order, and its utility rows have ``path = "pipeline"``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from simulator.batch import BatchSetup, run_unit
from simulator.memory import check_machine
from simulator.pipeline.unit import PipelineSetup, has_pipeline
from simulator.results import UTILITY_SCHEMA
from simulator.scenario import Scenario, SweepPoint
from simulator.units import ProducerSpec, RunState, assemble, plan_run, run_work_unit

if TYPE_CHECKING:
    from simulator.executors import Executor

Progress = Callable[[int, int], None]
TableProducer = Callable[[Scenario, Progress | None], dict[str, pa.Table]]
_PRODUCERS: dict[str, ProducerSpec] = {}


def register_table_producer(name: str, producer: TableProducer, per_point: bool = False) -> None:
    """Add tables to every run (see the module docstring)."""
    if name in _PRODUCERS:
        raise RuntimeError(f"table producer {name!r} registered twice")
    _PRODUCERS[name] = ProducerSpec(name, producer, per_point)


@dataclass(frozen=True)
class Unit:
    """Repetitions [start, start + repetitions) of sweep point ``point``; chunk ``chunk``."""

    point: int
    chunk: int
    start: int
    repetitions: int

    def seed_sequence(self, seed: int) -> np.random.SeedSequence:
        return np.random.SeedSequence(entropy=seed, spawn_key=(self.point, self.chunk))


def plan_units(point: SweepPoint, setup: BatchSetup | PipelineSetup) -> list[Unit]:
    """The units of one sweep point, in repetition order."""
    size = setup.unit_repetitions
    total = point.settings.repetitions
    return [
        Unit(point.index, chunk, start, min(size, total - start))
        for chunk, start in enumerate(range(0, total, size))
    ]


def make_setup(point: SweepPoint) -> BatchSetup | PipelineSetup:
    """The setup of one sweep point: the pipeline's when it has ``[pipeline]``, else the batch
    path's."""
    if has_pipeline(point):
        return PipelineSetup.from_point(point)
    return BatchSetup.from_settings(point.settings)


def execute_unit(setup: BatchSetup | PipelineSetup, unit: Unit, seed: int):
    """Run one unit with its own generator (the function a parallel executor distributes).

    Returns the metrics {(metric, reference): values}; for a pipeline setup, the pair
    (metrics, {table name: rows}).
    """
    rng = np.random.default_rng(unit.seed_sequence(seed))
    if isinstance(setup, PipelineSetup):
        return setup.run_unit(unit.repetitions, rng, first_repetition=unit.start)
    return run_unit(setup, unit.repetitions, rng)


def run_scenario(
    scenario: Scenario,
    progress: Progress | None = None,
    *,
    executor: Executor | None = None,
    run_dir: str | Path | None = None,
) -> dict[str, pa.Table]:
    """Run every unit; returns ``{"utility": table, ...}`` (plus pipeline and producers' tables).

    All setups are built (and validated, their memory plans included: simulator.memory) before
    any work starts. ``executor`` runs the units
    (default: one after the other in this process). With ``run_dir`` (the run's results
    directory) finished units are kept as part files in ``run_dir/.parts`` and units finished by
    an earlier, interrupted run of the same scenario are not run again (simulator.resume); the
    caller writes the returned tables and then calls :func:`simulator.resume.finish`.
    ``progress(done, total)`` is called with the number of finished units (resumed ones
    included) before the first unit and after each.
    """
    from simulator.executors import InlineExecutor
    from simulator.resume import DirectoryParts, MemoryParts, run_fingerprint

    setups = tuple(make_setup(point) for point in scenario.points)
    # before any part file: a unit that cannot fit in the machine is refused
    check_machine(scenario.points, setups)
    state = RunState(scenario, setups, tuple(_PRODUCERS.values()))
    units = plan_run(state)
    if run_dir is None:
        store = MemoryParts()
    else:
        store = DirectoryParts.open(run_dir, run_fingerprint(scenario, units), units)
    with store:
        finished = store.done
        missing = [unit for unit in units if unit.key not in finished]
        done = len(units) - len(missing)
        if progress is not None:
            progress(done, len(units))
        executor = InlineExecutor() if executor is None else executor
        for index, tables in executor.map_unordered(run_work_unit, state, missing):
            store.put(missing[index], tables)
            done += 1
            if progress is not None:
                progress(done, len(units))
        return assemble(units, store.get)


def utility_rows(
    point: SweepPoint, metrics: dict[tuple[str, str], np.ndarray], path: str | None = None,
    first_repetition: int = 0,
) -> pa.Table:
    """The utility rows of repetitions ``first_repetition, ...`` of one sweep point: one per
    (repetition, metric, reference).

    ``path`` labels how the estimates were produced (default: the batch path's option).

    Rows are ordered by repetition, then by metric and reference in the target's order.
    """
    settings = point.settings
    keys = list(metrics)
    values = np.stack([metrics[key] for key in keys], axis=1)  # (repetitions, metrics)
    repetitions, per_repetition = values.shape
    rows = repetitions * per_repetition
    columns = {
        "point": np.full(rows, point.index, dtype=np.int32),
        "overrides": pa.array([point.overrides_json()] * rows, type=pa.string()),
        "randomizer": pa.array([settings.randomizer_name] * rows, type=pa.string()),
        "estimator": pa.array([settings.estimator_name] * rows, type=pa.string()),
        "n": np.full(rows, settings.population.n, dtype=np.int64),
        "epsilon0": np.full(rows, settings.epsilon0, dtype=np.float64),
        "path": pa.array([path or settings.batch.path.value] * rows, type=pa.string()),
        "repetition": np.repeat(
            np.arange(first_repetition, first_repetition + repetitions, dtype=np.int32),
            per_repetition,
        ),
        "metric": pa.array([k[0] for k in keys] * repetitions, type=pa.string()),
        "reference": pa.array([k[1] for k in keys] * repetitions, type=pa.string()),
        "value": values.ravel(),
    }
    return pa.table(columns, schema=UTILITY_SCHEMA)


# Table producers shipped with the package register themselves on import (they import this
# module, hence the import at its end).
from simulator.audit import producer as _audit_producer  # noqa: E402, F401
from simulator.bounds_section import TABLE as _BOUNDS_TABLE  # noqa: E402
from simulator.bounds_section import produce as _bounds_produce  # noqa: E402

register_table_producer(_BOUNDS_TABLE, _bounds_produce, per_point=True)
