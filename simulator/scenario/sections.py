"""The scenario's top-level keys: the core scalars and sections, and the registry of optional
sections (``[bounds]``, ``[pipeline]``, ``[audit]``, ...) that plug-ins add.

simulator/plugins.py declares each built-in section's name and module (``SECTIONS``), so the
valid names (:func:`section_names`) are known without importing any section, and a scenario's
load imports the modules of the sections it has (:func:`present_sections`; issue 32: the audit
and learning sections alone cost about 1.5 s of CPU to import). Third-party sections (entry
points) are read as before."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from shufflesim.protocols.registry import Registry, declared_names
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
    """All valid top-level section names: the core ones, then the optional ones sorted (the
    declared names and the third-party ones; no section's module is imported)."""
    if SECTIONS.complete:
        return list(CORE_SECTIONS) + SECTIONS.names()
    return list(CORE_SECTIONS) + sorted({*_optional()})


def _optional() -> list[str]:
    """The optional sections' names in parse order: the declaration's, then the third-party
    ones and those registered by a call, in registration order."""
    extra = SECTIONS.undeclared()  # reads the entry points
    return [*declared_names(SECTIONS.declared), *(n for n in extra if n not in CORE_SECTIONS)]


def present_sections(document: Mapping[str, Any]) -> list[tuple[str, SectionParser]]:
    """(name, parser) of each optional section ``document`` has, in parse order (the
    registry's), importing only those sections' modules."""
    if SECTIONS.complete:
        return [(name, parser) for name, parser in SECTIONS.items() if name in document]
    return [(name, SECTIONS.get(name)) for name in _optional() if name in document]
