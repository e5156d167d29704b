"""The JSON Schema (draft 2020-12) of scenario files, generated from the code, so that editors
can check a scenario as it is written::

    python -m shufflesim.simulator.scenario.schema > docs/scenario.schema.json

It is assembled from what the loader itself reads: the core keys (scenario/core.py,
loader.py), the dataclasses of ``[batch]`` and of every registered section, the registries of
data and budget distributions (with their parameters), the randomizers (names and parameters,
from protocols.randomizers) and the estimators. Names are enums; every table whose unknown keys
the loader refuses has ``additionalProperties: false``. The schema checks the shape of a file
(keys, types, names, simple ranges); the loader's cross-checks (data against the randomizer's
domain, a required key given only by the sweep, ...) stay the loader's.
tests/test_scenario_schema.py checks that docs/scenario.schema.json is this module's output and
that every file in scenarios/ passes it.
"""

from __future__ import annotations

import json
import sys
import typing
from typing import Any

from shufflesim.protocols.estimators import estimator_names
from shufflesim.protocols.randomizers import randomizer_class, randomizer_names
from shufflesim.simulator.population.base import BUDGET_DISTRIBUTIONS, DATA_DISTRIBUTIONS
from shufflesim.simulator.scenario.convert import dataclass_schema
from shufflesim.simulator.scenario.model import BatchOptions
from shufflesim.simulator.scenario.sections import SECTION_SCHEMAS, SECTIONS

DRAFT = "https://json-schema.org/draft/2020-12/schema"
#: The loader's pattern of ``name`` (loader._NAME_PATTERN).
NAME_PATTERN = "^[A-Za-z0-9][A-Za-z0-9_.-]*$"


def _branch(schema: dict[str, Any], tag: str, name: str) -> dict[str, Any]:
    """``schema`` of a table whose key ``tag`` (required) is ``name``."""
    return {"type": "object",
            "properties": {tag: {"enum": [name]}, **schema["properties"]},
            "required": [tag, *schema.get("required", [])],
            "additionalProperties": False}


def _union(tag: str, names: list[str], branches: list[dict[str, Any]]) -> dict[str, Any]:
    """A table tagged by ``tag`` (one of ``names``; checked first, for a plain message) that
    matches the branch of its name."""
    return {"type": "object", "properties": {tag: {"enum": sorted(names)}}, "required": [tag],
            "oneOf": branches}


def _tagged(registry, tag: str) -> dict[str, Any]:
    """One branch per registered class: ``tag`` names it, its fields are its parameters."""
    branches = []
    for name, cls in sorted(registry.items()):
        branches.append(_branch(dataclass_schema(cls), tag, name))
    return _union(tag, registry.names(), branches)


def randomizer_schema() -> dict[str, Any]:
    """One branch per randomizer: ``name`` and its parameters (``epsilon0`` comes from the
    budget; ``domain_size`` defaults to the data's)."""
    branches = []
    for name in randomizer_names():
        branch = dataclass_schema(randomizer_class(name), exclude=("epsilon0",),
                                  optional=("domain_size",))
        branches.append(_branch(branch, "name", name))
    return _union("name", randomizer_names(), branches)


def _single_or_array(schema: dict[str, Any]) -> dict[str, Any]:
    """Array fields of a derived section schema may also be written as one value."""
    for key, value in schema["properties"].items():
        if value.get("type") == "array":
            schema["properties"][key] = {"anyOf": [value["items"], value]}
    return schema


def section_schema(name: str) -> dict[str, Any]:
    """A registered section's own schema, or one derived from its parser's dataclass."""
    if name in SECTION_SCHEMAS:
        return SECTION_SCHEMAS.get(name)()
    model = typing.get_type_hints(SECTIONS.get(name))["return"]
    return _single_or_array(dataclass_schema(model))


def scenario_schema() -> dict[str, Any]:
    """The whole schema (module docstring)."""
    properties: dict[str, Any] = {
        "name": {"type": "string", "pattern": NAME_PATTERN,
                 "description": "names the results directory OUT/<name>/"},
        "seed": {"type": "integer", "minimum": 0},
        "repetitions": {"type": "integer", "minimum": 1},
        "population": {
            "type": "object",
            "properties": {
                "n": {"type": "integer", "minimum": 2},
                "data": _tagged(DATA_DISTRIBUTIONS, "distribution"),
                "budget": _tagged(BUDGET_DISTRIBUTIONS, "distribution"),
            },
            "required": ["n", "data", "budget"],
            "additionalProperties": False,
        },
        "randomizer": randomizer_schema(),
        "estimator": {
            "type": "object",
            "properties": {"name": {"enum": estimator_names()}},
            "required": ["name"],
            "additionalProperties": False,
        },
        "batch": dataclass_schema(BatchOptions),
        "sweep": {
            "type": "object",
            "description": "dotted keys (quoted, or nested tables) to non-empty arrays of "
                           "values; the run covers their cartesian product",
            "additionalProperties": {"anyOf": [{"type": "array", "minItems": 1},
                                               {"type": "object"}]},
        },
    }
    for name in SECTIONS.names():   # sorted: the registration order depends on import order
        properties[name] = section_schema(name)
    return {
        "$schema": DRAFT,
        "title": "shufflesim scenario",
        "description": "A scenario file of shufflesim (docs/scenarios.md). Generated by "
                       "python -m shufflesim.simulator.scenario.schema; do not edit.",
        "type": "object",
        "properties": properties,
        "required": ["name", "population", "randomizer", "estimator"],
        "additionalProperties": False,
    }


def render() -> str:
    """The schema as the text of docs/scenario.schema.json."""
    return json.dumps(scenario_schema(), indent=2) + "\n"


def main() -> None:
    sys.stdout.write(render())


if __name__ == "__main__":
    main()
