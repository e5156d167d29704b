"""The scenario section ``[compose]`` and its ``compose`` table: the ``compose`` capability
(simulator.calls.compose; ``shufflesim compose``, ``shufflesim.compose``) from a scenario.

    [compose]
    mode = "rounds"             # or "joint", "parallel", "subsampled" (000 Sec. 4)
    delta = [1e-6, 1e-8]        # a number or an array
    methods = ["optimal-blanket", "rdp-blanket"]   # default: every method of the mode
    rounds = [ { randomizer = "krr", epsilon0 = 1.0, domain_size = 4, n = 1000, repeat = 300 },
               { randomizer = "krr", epsilon0 = 0.5, domain_size = 4, n = 5000, repeat = 65 } ]
    # one-round modes: components = [ {...}, ... ], n = 1000, and rate (subsampled)

Every sweep point with the section gets one row per (delta, method), the records of the call
(without timings, so a re-run writes the same rows). The section is checked when the scenario
is loaded (the call's own validation, keyed ``compose.<field>``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from shufflesim.protocols.errors import ParameterError
from shufflesim.simulator.calls import compose as compose_call
from shufflesim.simulator.errors import ScenarioError
from shufflesim.simulator.results.tables import (
    POINT_COLUMNS,
    TABLE_SCHEMAS,
    register_table_schema,
    table_schema,
)
from shufflesim.simulator.scenario.convert import ParseContext
from shufflesim.simulator.scenario.model import Scenario
from shufflesim.simulator.scenario.producers import register_table_producer
from shufflesim.simulator.scenario.sections import register_section

SECTION = "compose"
TABLE = "compose"
KEYS = ("mode", "delta", "methods", "n", "rate", "rounds", "components")

COMPOSE_SCHEMA = table_schema([
    *POINT_COLUMNS,
    ("mode", pa.string()),
    ("delta", pa.float64()),
    ("method", pa.string()),
    ("kind", pa.string()),
    ("epsilon", pa.float64()),
    ("epsilon_error", pa.float64()),
    ("rounds", pa.int64()),
    ("parts", pa.int64()),
    ("status", pa.string()),
    ("reference", pa.string()),
    ("note", pa.string()),
    ("error", pa.string()),
    ("below_proven_lower", pa.bool_()),
], nullable=("kind", "epsilon", "epsilon_error"))


@dataclass(frozen=True)
class ComposeSection:
    """The parsed ``[compose]`` section (validated by simulator.calls.compose.validate)."""

    mode: str
    delta: tuple[float, ...]
    parts: tuple[dict, ...]
    methods: tuple[str, ...] | None = None
    n: int | None = None
    rate: float | None = None


def parse_section(table: Mapping[str, Any], context: ParseContext | None = None) -> ComposeSection:
    """Parse ``[compose]`` (errors keyed ``compose.<key>``)."""
    if not isinstance(table, Mapping):
        raise ScenarioError(SECTION, table, "must be a table")
    for key in table:
        if key not in KEYS:
            raise ScenarioError(f"{SECTION}.{key}", table[key], f"unknown key; keys: {list(KEYS)}")
    mode = table.get("mode", "rounds")
    key = "rounds" if mode == "rounds" else "components"
    other = "components" if key == "rounds" else "rounds"
    if other in table:
        owner = "rounds" if other == "rounds" else "joint, parallel or subsampled"
        raise ScenarioError(f"{SECTION}.{other}", table[other],
                            f"belongs to mode {owner}; mode {mode!r} takes {key}")
    delta = table.get("delta")
    deltas = tuple(delta) if isinstance(delta, list | tuple) else (delta,)
    methods = table.get("methods")
    if isinstance(methods, str):
        methods = [methods]
    parts = table.get(key)
    try:
        for d in deltas:
            compose_call.validate(parts, d, mode=mode, methods=methods, n=table.get("n"),
                                  rate=table.get("rate"))
    except ParameterError as error:
        raise ScenarioError(f"{SECTION}.{error.field}", error.value, error.requirement) from None
    return ComposeSection(mode=mode, delta=deltas, parts=tuple(dict(p) for p in parts),
                          methods=None if methods is None else tuple(methods),
                          n=table.get("n"), rate=table.get("rate"))


def section_schema() -> dict[str, Any]:
    """The JSON Schema of ``[compose]``."""
    part = {"type": "object", "properties": {"randomizer": {"type": "string"},
                                             "epsilon0": {"type": "number"}},
            "required": ["randomizer", "epsilon0"]}
    number_or_array = {"anyOf": [
        {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
        {"type": "array", "minItems": 1,
         "items": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1}}]}
    return {"type": "object", "properties": {
        "mode": {"enum": list(compose_call.MODES)},
        "delta": number_or_array,
        "methods": {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]},
        "n": {"type": "integer", "minimum": 2},
        "rate": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
        "rounds": {"type": "array", "minItems": 1, "items": part},
        "components": {"type": "array", "minItems": 1, "items": part},
    }, "required": ["delta"], "additionalProperties": False}


def produce(scenario: Scenario, progress=None) -> dict[str, pa.Table]:
    """The ``compose`` table of a run (empty dict when no point has a ``[compose]`` section)."""
    rows: list[dict] = []
    for point, section in scenario.points_with(SECTION):
        for delta in section.delta:
            for record in compose_call.compose(list(section.parts), delta, mode=section.mode,
                                               methods=section.methods, n=section.n,
                                               rate=section.rate):
                rows.append({"point": point.index, "overrides": point.overrides_json(),
                             **record})
    if not rows:
        return {}
    columns = {field.name: [row[field.name] for row in rows] for field in COMPOSE_SCHEMA}
    for name in ("epsilon", "epsilon_error"):
        columns[name] = [None if v is None or math.isnan(v) else float(v) for v in columns[name]]
    columns["point"] = np.asarray(columns["point"], dtype=np.int32)
    return {TABLE: pa.table(columns, schema=COMPOSE_SCHEMA)}


register_section(SECTION, parse_section, schema=section_schema)
if TABLE_SCHEMAS.registered(TABLE) is None:  # reads no other table module (issue 32)
    register_table_schema(TABLE, COMPOSE_SCHEMA)
register_table_producer(TABLE, produce, per_point=True)
