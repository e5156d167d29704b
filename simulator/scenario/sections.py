"""The scenario's top-level keys: the core scalars and sections, and the registry of optional
sections (``[bounds]``, ``[pipeline]``, ``[audit]``, ...) that plug-ins add."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from shufflesim.protocols.registry import Registry
from shufflesim.simulator.scenario.convert import ParseContext

TOP_LEVEL_SCALARS = ("name", "seed", "repetitions")
CORE_SECTIONS = ("population", "randomizer", "estimator", "batch", "sweep")

SectionParser = Callable[[Mapping[str, Any], ParseContext], Any]
#: Optional sections by name, in registration order (the order they are parsed in).
SECTIONS: Registry[SectionParser] = Registry(
    "scenario section", field="section", declared="shufflesim.simulator.plugins:SECTIONS")
#: The JSON Schema of a section's table, for the sections registered with one (a function
#: returning it; simulator.scenario.schema derives the others from their parser's dataclass).
SECTION_SCHEMAS: Registry[Callable[[], dict]] = Registry(
    "scenario section schema", field="section",
    declared="shufflesim.simulator.plugins:SECTIONS")


def register_section(name: str, parser: SectionParser,
                     schema: Callable[[], dict] | None = None) -> None:
    """Register an optional top-level section ``[name]``.

    ``parser(table, context)`` receives the section's table and returns a frozen dataclass (it
    may use :func:`~simulator.scenario.convert.parse_dataclass` and must raise ScenarioError with
    keys ``name.<key>``). The result is available as ``settings.sections[name]`` for every sweep
    point; the section is absent from ``sections`` when the file does not have it. Keys of the
    section can be swept.

    ``schema()`` returns the JSON Schema of the section's table (docs/scenario.schema.json);
    without it, the schema is derived from the dataclass the parser returns (its return
    annotation), where an array may also be written as one value.
    """
    if name in TOP_LEVEL_SCALARS or name in CORE_SECTIONS:
        raise RuntimeError(f"scenario section {name!r} registered twice")
    SECTIONS.register(name, parser)
    if schema is not None:
        SECTION_SCHEMAS.register(name, schema)


def section_names() -> list[str]:
    """All valid top-level section names, core and registered."""
    return list(CORE_SECTIONS) + SECTIONS.names()
