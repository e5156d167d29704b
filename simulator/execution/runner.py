"""Run a scenario: its units of work (simulator.execution.units) on an executor, into result
tables.

Units are independent, so the rows do not depend on the order in which units run or on how
many workers run them: the same scenario and seed always give the same rows (for a given numpy
version). :func:`run_scenario` runs the units (simulation chunks, then the registered table
producers' calls: simulator.scenario.producers) on an executor (simulator.execution.executors;
default: this process) and, given a run directory, keeps every finished unit's rows as part
files there so that an interrupted run resumes where it stopped (simulator.execution.resume).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pyarrow as pa

from shufflesim.simulator.batch.memory import check_machine
from shufflesim.simulator.execution.blas import one_blas_thread
from shufflesim.simulator.execution.executors import Executor, InlineExecutor
from shufflesim.simulator.execution.resume import DirectoryParts, MemoryParts, run_fingerprint
from shufflesim.simulator.execution.simulation import make_setup
from shufflesim.simulator.execution.trace import Traced, span, target
from shufflesim.simulator.execution.units import (
    RunState,
    assemble,
    plan_run,
    run_work_unit,
    unit_cost,
)
from shufflesim.simulator.scenario.model import Scenario
from shufflesim.simulator.scenario.producers import run_producers

Progress = Callable[[int, int], None]


def run_scenario(
    scenario: Scenario,
    progress: Progress | None = None,
    *,
    executor: Executor | None = None,
    run_dir: str | Path | None = None,
    memory_per_worker: tuple[float, str] | None = None,
) -> dict[str, pa.Table]:
    """Run every unit; returns ``{"utility": table, ...}`` (plus pipeline and producers' tables).

    All setups are built (and validated, their memory plans included: simulator.batch.memory)
    before any work starts. ``executor`` runs the units (default: one after the other in this
    process). With ``run_dir`` (the run's results directory) finished units are kept as part
    files in ``run_dir/.parts`` and units finished by an earlier, interrupted run of the same
    scenario are not run again (simulator.execution.resume); the caller writes the returned
    tables and then calls :func:`shufflesim.simulator.execution.resume.finish`.
    ``progress(done, total)`` is called with the number of finished units (resumed ones
    included) before the first unit and after each.

    Every process of the run computes with one BLAS thread (simulator/execution/blas.py), so
    that the rows do not depend on the number of workers. With several workers the units run
    longest first (units.unit_cost; the order never changes a row).
    """
    with one_blas_thread():
        return _run(scenario, progress, executor, run_dir, memory_per_worker)


def _run(scenario, progress, executor, run_dir, memory_per_worker):
    with span("setups"):
        setups = tuple(make_setup(point) for point in scenario.points)
        # before any part file: a unit that cannot fit in the machine is refused
        # (memory_per_worker: the bytes a worker may take and where that limit comes from)
        check_machine(scenario.points, setups, *(memory_per_worker or ()))
    state = RunState(scenario, setups, run_producers(scenario))  # its sections' producers
    units = plan_run(state)
    with span("parts-open"):
        store = (MemoryParts() if run_dir is None else
                 DirectoryParts.open(run_dir, run_fingerprint(scenario, units), units))
    with store:
        finished = store.done
        missing = [unit for unit in units if unit.key not in finished]
        done = len(units) - len(missing)
        if progress is not None:
            progress(done, len(units))
        executor = InlineExecutor() if executor is None else executor
        if executor.workers > 1:  # longest first (stable: ties keep the plan's order)
            costs = {unit.key: unit_cost(state, unit) for unit in missing}
            missing.sort(key=lambda unit: -costs[unit.key])
            executor.expect([costs[unit.key] for unit in missing])
        task = run_work_unit if target() is None else Traced(run_work_unit)  # trace.py
        for index, tables in executor.map_unordered(task, state, missing):
            with span("unit-store", key=missing[index].key):
                store.put(missing[index], tables)
            done += 1
            if progress is not None:
                progress(done, len(units))
        with span("assemble"):
            return assemble(units, store.get)
