"""Run a scenario: sweep points x repetitions through the batch path, into result tables.

Units of work. Each sweep point's repetitions are cut into chunks of a fixed size (the setup's
``unit_repetitions``: ``batch.chunk_repetitions`` or a value derived from the memory budget, a
function of the scenario alone). The unit (point index p, chunk index c) draws all its
randomness from ``SeedSequence(entropy=seed, spawn_key=(p, c))``, the c-th child of the p-th
child of ``SeedSequence(seed)``. Units are independent, so the rows do not depend on the order
in which units run or on how many workers run them: the same scenario and seed always give the
same rows (for a given numpy version).

Extension point. Modules that add scenario sections (``[pipeline]``, ``[bounds]``, ...) can
contribute tables with :func:`register_table_producer`; each producer is called once per run
with the scenario and the run's progress callback and returns ``{table name: pyarrow.Table}``
(empty when its section is absent).

Pipeline points. A sweep point whose scenario has a ``[pipeline]`` section runs through the
SimPy pipeline instead of the batch path (:class:`simulator.pipeline.unit.PipelineSetup`, same
units and seeding); its units also return rows of the ``batches`` table, concatenated in unit
order, and its utility rows have ``path = "pipeline"``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from simulator.batch import BatchSetup, run_unit
from simulator.pipeline.unit import PipelineSetup, has_pipeline
from simulator.results import UTILITY_SCHEMA
from simulator.scenario import Scenario, SweepPoint

Progress = Callable[[int, int], None]
TableProducer = Callable[[Scenario, Progress | None], dict[str, pa.Table]]
_PRODUCERS: dict[str, TableProducer] = {}


def register_table_producer(name: str, producer: TableProducer) -> None:
    """Add tables to every run (see the module docstring)."""
    if name in _PRODUCERS:
        raise RuntimeError(f"table producer {name!r} registered twice")
    _PRODUCERS[name] = producer


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


def run_scenario(scenario: Scenario, progress: Progress | None = None) -> dict[str, pa.Table]:
    """Run every sweep point; returns ``{"utility": table, ...}`` (plus producers' tables).

    All setups are built (and validated) before any work starts.
    """
    setups = [make_setup(point) for point in scenario.points]
    plans = [plan_units(point, setup) for point, setup in zip(scenario.points, setups, strict=True)]
    total = sum(len(plan) for plan in plans)
    done = 0
    batches = []
    unit_tables: dict[str, list[pa.Table]] = {}
    for point, setup, plan in zip(scenario.points, setups, plans, strict=True):
        results = []
        for unit in plan:  # a loop over units (each vectorized over its repetitions)
            result = execute_unit(setup, unit, scenario.seed)
            if isinstance(result, tuple):  # (metrics, tables) of a pipeline unit
                result, extra = result
                for name, table in extra.items():
                    unit_tables.setdefault(name, []).append(table)
            results.append(result)
            done += 1
            if progress is not None:
                progress(done, total)
        merged = {key: np.concatenate([r[key] for r in results]) for key in results[0]}
        batches.append(utility_rows(point, merged, getattr(setup, "path_label", None)))
    tables = {"utility": pa.concat_tables(batches)}
    tables.update({name: pa.concat_tables(parts) for name, parts in unit_tables.items()})
    for name, producer in _PRODUCERS.items():
        extra = producer(scenario, progress)
        clash = set(extra) & set(tables)
        if clash:
            raise RuntimeError(f"table producer {name!r} returned existing tables {clash}")
        tables.update(extra)
    return tables


def utility_rows(
    point: SweepPoint, metrics: dict[tuple[str, str], np.ndarray], path: str | None = None
) -> pa.Table:
    """The utility rows of one sweep point: one per (repetition, metric, reference).

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
        "repetition": np.repeat(np.arange(repetitions, dtype=np.int32), per_repetition),
        "metric": pa.array([k[0] for k in keys] * repetitions, type=pa.string()),
        "reference": pa.array([k[1] for k in keys] * repetitions, type=pa.string()),
        "value": values.ravel(),
    }
    return pa.table(columns, schema=UTILITY_SCHEMA)
