"""The registry of table producers: modules that contribute result tables to every run
(``[bounds]``, ``[audit]``, ...).

A producer is called with a scenario and a progress callback (None when it runs as a unit) and
returns ``{table name: pyarrow.Table}`` (empty when its section is absent). Registered with
``per_point=True``, it is called once per sweep point with the scenario restricted to that point
(``scenario.points == (point,)``; the point keeps its index), and the rows of the points are
concatenated in point order: the work then spreads over workers and resumes point by point.
Otherwise it is called once per run. Producers run in registration order, after the simulation
units (simulator.execution.units).

A run uses :func:`run_producers`: the producers of the sections its points have (a built-in
section module's producer returns nothing without its section, so the others are left out,
and their modules, such as the audit's and the learning's, are not imported; issue 32), and
every producer registered outside simulator/plugins.py.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import pyarrow as pa

from shufflesim.protocols.registry import Registry, declared_names
from shufflesim.simulator.scenario.model import Scenario

Progress = Callable[[int, int], None]
TableProducer = Callable[[Scenario, Progress | None], Mapping[str, pa.Table]]


@dataclass(frozen=True)
class ProducerSpec:
    """A registered table producer: the callable and whether it is split by sweep point."""

    name: str
    function: Callable[..., Mapping[str, pa.Table]]
    per_point: bool


#: Table producers by name, in registration order (the order of their units).
PRODUCERS: Registry[ProducerSpec] = Registry(
    "table producer", field="producer", declared="shufflesim.simulator.plugins:SECTIONS")


def register_table_producer(name: str, producer: TableProducer, per_point: bool = False) -> None:
    """Add tables to every run (see the module docstring)."""
    PRODUCERS.register(name, ProducerSpec(name, producer, per_point))


def run_producers(scenario: Scenario) -> tuple[ProducerSpec, ...]:
    """The producers of a run of ``scenario``, in registration order (module docstring): those
    of the built-in sections its points have, importing only their modules, and every producer
    registered outside the declaration (third-party, by a call)."""
    sections = declared_names(PRODUCERS.declared)  # section name -> module
    present = {name for point in scenario.points for name in point.settings.sections}
    modules = {sections[name] for name in present if name in sections}
    return tuple(spec for _, spec in PRODUCERS.items_of(modules))
