"""The units of work of a scenario run: enumeration, stable keys, and the function that runs one.

A run is a fixed, ordered list of :class:`WorkUnit`\\ s, a function of the scenario alone:

1. *simulation* units: for every sweep point, its repetition chunks
   (simulator.execution.simulation.plan_units). The unit (point p, chunk c) draws all its randomness
   from ``SeedSequence(entropy=seed, spawn_key=(p, c))`` and returns the ``utility`` rows of its
   repetitions (and, for pipeline points, the ``batches`` rows);
2. *producer* units: for every table producer registered with
   simulator.scenario.producers.register_table_producer, one unit per sweep point when the producer
   was registered with ``per_point=True`` (it is called with the scenario restricted to that
   point), else one unit for the whole run. Producers seed themselves from the scenario's seed
   and the point index (e.g. the audit: ``spawn_key=(point, AUDIT_KEY)``).

Every unit's randomness is its own, so a unit's rows depend neither on which worker runs it nor
on when: the tables, assembled in unit order (:func:`assemble`), are the same row for row
whatever the executor and the number of workers. A unit's *key* names it in part files
(simulator.execution.resume); it encodes the point, chunk and repetition range, so parts of a
different plan are never mistaken for this one's.

Shipping work to other processes. :class:`RunState` (the scenario, the setups built and
validated in the driver, and the producers) is sent once per worker; each task then carries only
a small :class:`WorkUnit`. Scenarios hold :class:`types.MappingProxyType` objects, which pickle
does not support: importing this module registers a :mod:`copyreg` reducer that rebuilds them
from a dict.
"""

from __future__ import annotations

import copyreg
import dataclasses
import re
import types
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from shufflesim.protocols.errors import ParameterError
from shufflesim.simulator.errors import UserError
from shufflesim.simulator.execution.simulation import Unit, execute_unit, plan_units, utility_rows
from shufflesim.simulator.scenario.model import Scenario
from shufflesim.simulator.scenario.producers import ProducerSpec

SIMULATE = "simulate"
PRODUCE = "produce"
UTILITY = "utility"
_KEY_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")


def _mapping_proxy(mapping: dict) -> types.MappingProxyType:
    return types.MappingProxyType(mapping)


copyreg.pickle(types.MappingProxyType, lambda proxy: (_mapping_proxy, (dict(proxy),)))


@dataclass(frozen=True)
class WorkUnit:
    """One unit of a run. ``index`` is its position in the run's order (the assembly order)."""

    index: int
    key: str
    kind: str
    point: int | None
    chunk: int | None = None
    start: int | None = None
    repetitions: int | None = None
    producer: str | None = None


@dataclass(frozen=True)
class RunState:
    """What every worker needs besides the unit: sent once per worker (see module docstring)."""

    scenario: Scenario
    setups: tuple[Any, ...]
    producers: tuple[ProducerSpec, ...]

    def producer(self, name: str) -> ProducerSpec:
        for spec in self.producers:
            if spec.name == name:
                return spec
        raise KeyError(name)


def simulation_key(point: int, chunk: int, start: int, repetitions: int) -> str:
    return f"sim-p{point:06d}-c{chunk:06d}-r{start}+{repetitions}"


def producer_key(name: str, point: int | None) -> str:
    key = f"prod-{name}" if point is None else f"prod-{name}-p{point:06d}"
    if not _KEY_PATTERN.match(key):
        raise RuntimeError(f"table producer name {name!r} cannot name a part file")
    return key


def plan_run(state: RunState) -> list[WorkUnit]:
    """Every unit of the run, in assembly order (module docstring)."""
    units: list[WorkUnit] = []
    for point, setup in zip(state.scenario.points, state.setups, strict=True):
        for unit in plan_units(point, setup):
            units.append(WorkUnit(
                index=len(units), key=simulation_key(point.index, unit.chunk, unit.start,
                                                     unit.repetitions),
                kind=SIMULATE, point=point.index, chunk=unit.chunk, start=unit.start,
                repetitions=unit.repetitions,
            ))
    for spec in state.producers:
        points: Iterable[int | None] = (
            [p.index for p in state.scenario.points] if spec.per_point else [None]
        )
        for point in points:
            units.append(WorkUnit(index=len(units), key=producer_key(spec.name, point),
                                  kind=PRODUCE, point=point, producer=spec.name))
    return units


#: Estimated seconds per user's report of a simulation unit on the batch path, and per
#: message through the pipeline (rough: they only order the units and decide when worker
#: processes start; simulator/calls/cost.py has the run's lower estimates).
REPORT_SECONDS = 5e-8
MESSAGE_SECONDS = 2e-6
#: Estimated seconds of a producer unit whose point has the producer's section (an audit, a
#: bounds table, a training run: unknown in advance, taken as heavier than a small
#: simulation unit, and low enough that a few of them do not start worker processes at once:
#: executors.ProcessExecutor.expect); the same for every point, so that producer units keep
#: the plan's order among themselves (session 12: an estimate growing like sqrt(n) put
#: audit_krr's and scaling_audit's cheap n = 1000 audits first and their n = 100 ones, 2-3x
#: dearer, last, where they decide when the processes finish); a producer whose section is
#: absent returns nothing at once.
PRODUCER_SECONDS = 0.5


def unit_cost(state: RunState, unit: WorkUnit) -> float:
    """A rough estimate of a unit's seconds, to run the longest first on several workers
    (longest-processing-time order: the last units, which decide when the workers finish,
    are then the shortest). It never changes a result: every unit has its own randomness."""
    if unit.kind == SIMULATE:
        point = state.scenario.points[unit.point]
        per_report = MESSAGE_SECONDS if "pipeline" in point.settings.sections else REPORT_SECONDS
        return unit.repetitions * point.settings.population.n * per_report
    points = (state.scenario.points if unit.point is None
              else (state.scenario.points[unit.point],))
    return PRODUCER_SECONDS * sum(unit.producer in point.settings.sections for point in points)


class UnitError(UserError):
    """A user error raised inside a unit, carried across processes as its one-line message
    (ScenarioError and ParameterError take three arguments and do not survive pickling)."""


class OutOfMemory(Exception):
    """A unit ran out of memory (MemoryError), carried across processes as one line (numpy's
    MemoryError subclass does not survive pickling). Not a user error: the finished units stay
    valid, so a run that stops on it keeps its parts for resuming."""


def run_work_unit(state: RunState, unit: WorkUnit) -> dict[str, pa.Table]:
    """Run one unit; returns ``{table name: rows}`` (possibly empty). The function every
    executor distributes."""
    try:
        if unit.kind == SIMULATE:
            return _simulate(state, unit)
        return _produce(state, unit)
    except UnitError:
        raise
    except (UserError, ParameterError) as error:
        raise UnitError(str(error)) from None
    except MemoryError as error:
        detail = f": {error}" if str(error) else ""
        raise OutOfMemory(f"out of memory in unit {unit.key}{detail}") from None


def _simulate(state: RunState, unit: WorkUnit) -> dict[str, pa.Table]:
    point = state.scenario.points[unit.point]
    setup = state.setups[unit.point]
    result = execute_unit(setup, Unit(unit.point, unit.chunk, unit.start, unit.repetitions),
                          state.scenario.seed)
    extra: Mapping[str, pa.Table] = {}
    if isinstance(result, tuple):  # (metrics, tables) of a pipeline unit
        result, extra = result
    tables = {UTILITY: utility_rows(point, result, getattr(setup, "path_label", None),
                                    first_repetition=unit.start)}
    tables.update(extra)
    return tables


def _produce(state: RunState, unit: WorkUnit) -> dict[str, pa.Table]:
    spec = state.producer(unit.producer)
    scenario = state.scenario
    if unit.point is not None:
        scenario = dataclasses.replace(scenario, points=(scenario.points[unit.point],))
    tables = dict(spec.function(scenario, None))
    if UTILITY in tables:
        raise RuntimeError(f"table producer {spec.name!r} returned the utility table")
    return tables


def assemble(units: list[WorkUnit], results: Callable[[WorkUnit], Mapping[str, pa.Table]]
             ) -> dict[str, pa.Table]:
    """Concatenate every unit's tables in unit order: ``{table: rows}``, tables in order of
    first appearance (utility first). ``results(unit)`` gives a finished unit's tables."""
    parts: dict[str, list[pa.Table]] = {}
    producers_of: dict[str, str] = {}
    for unit in units:
        for name, table in results(unit).items():
            owner = unit.producer or SIMULATE
            if producers_of.setdefault(name, owner) != owner:
                raise RuntimeError(
                    f"table {name!r} produced by both {producers_of[name]!r} and {owner!r}"
                )
            parts.setdefault(name, []).append(table)
    return {name: pa.concat_tables(tables) for name, tables in parts.items()}
