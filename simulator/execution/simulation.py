"""Simulation work of one sweep point: its setup (the batch path's or the pipeline's), its
repetition chunks and their seeds, running one chunk, and the chunk's ``utility`` rows.

Each sweep point's repetitions are cut into chunks of a fixed size (the setup's
``unit_repetitions``: ``batch.chunk_repetitions`` or a value derived from the memory budget, a
function of the scenario alone). The unit (point index p, chunk index c) draws all its
randomness from ``SeedSequence(entropy=seed, spawn_key=(p, c))``, the c-th child of the p-th
child of ``SeedSequence(seed)``.

Pipeline points. A sweep point whose scenario has a ``[pipeline]`` section runs through the
SimPy pipeline instead of the batch path (:class:`simulator.pipeline.unit.PipelineSetup`, same
units and seeding); its units also return rows of the ``batches`` table, and its utility rows
have ``path = "pipeline"``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from shufflesim.simulator.batch.run import BatchSetup, run_unit
from shufflesim.simulator.lazy import lazy_module
from shufflesim.simulator.results.tables import UtilityRow
from shufflesim.simulator.scenario.model import SweepPoint

#: the SimPy pipeline's units (and pandas, which its analyzer uses): imported for a point with
#: ``[pipeline]`` only (a batch-path run does not need them; issue 32)
pipeline = lazy_module("shufflesim.simulator.pipeline.unit")


@dataclass(frozen=True)
class Unit:
    """Repetitions [start, start + repetitions) of sweep point ``point``; chunk ``chunk``."""

    point: int
    chunk: int
    start: int
    repetitions: int

    def seed_sequence(self, seed: int) -> np.random.SeedSequence:
        return np.random.SeedSequence(entropy=seed, spawn_key=(self.point, self.chunk))


def plan_units(point: SweepPoint, setup: BatchSetup | pipeline.PipelineSetup) -> list[Unit]:
    """The units of one sweep point, in repetition order."""
    size = setup.unit_repetitions
    total = point.settings.repetitions
    return [
        Unit(point.index, chunk, start, min(size, total - start))
        for chunk, start in enumerate(range(0, total, size))
    ]


def make_setup(point: SweepPoint) -> BatchSetup | pipeline.PipelineSetup:
    """The setup of one sweep point: the pipeline's when it has ``[pipeline]``, else the batch
    path's."""
    if "pipeline" in point.settings.sections:  # pipeline.has_pipeline, without importing it
        return pipeline.PipelineSetup.from_point(point)
    return BatchSetup.from_settings(point.settings)


def execute_unit(setup: BatchSetup | pipeline.PipelineSetup, unit: Unit, seed: int):
    """Run one unit with its own generator (the function a parallel executor distributes).

    Returns the metrics {(metric, reference): values}; for a pipeline setup, the pair
    (metrics, {table name: rows}).
    """
    rng = np.random.default_rng(unit.seed_sequence(seed))
    if not isinstance(setup, BatchSetup):  # a pipeline.PipelineSetup
        return setup.run_unit(unit.repetitions, rng, first_repetition=unit.start)
    return run_unit(setup, unit.repetitions, rng)


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
    return UtilityRow.from_columns(columns)
