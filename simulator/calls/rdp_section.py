"""The scenario section ``[rdp]`` and its ``rdp`` table: Renyi DP curves eps(alpha) of the
shuffled mechanism (002 Sec. 6.1; simulator.calls.rdp, also ``shufflesim rdp`` and
``shufflesim.rdp``).

    [rdp]
    orders = [2, 8, 32]             # default 1.5, 2, 3, 4, 6, 8, 16, 32, 64
    methods = ["rdp-blanket"]        # default rdp-blanket and rdp-clone
    delta = 1e-6                     # optional: the (eps, delta) each order certifies
    rounds = 10                      # identical rounds of the point's randomizer and n
    # or heterogeneous rounds: rounds = [ { randomizer = "krr", epsilon0 = 1.0,
    #                                       domain_size = 2, n = 1000, repeat = 300 }, ... ]

With an integer ``rounds`` (default 1) the curve is that of the sweep point's own randomizer,
eps0 and n (a constant budget); with an array of tables, those rounds. One row per (method,
order) and point, without timings.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from shufflesim.protocols.errors import ParameterError
from shufflesim.simulator.calls import rdp as rdp_call
from shufflesim.simulator.errors import ScenarioError
from shufflesim.simulator.results.tables import (
    POINT_COLUMNS,
    TABLE_SCHEMAS,
    register_table_schema,
    table_schema,
)
from shufflesim.simulator.scenario.bounds import check_rounds
from shufflesim.simulator.scenario.convert import ParseContext
from shufflesim.simulator.scenario.model import Scenario
from shufflesim.simulator.scenario.producers import register_table_producer
from shufflesim.simulator.scenario.sections import register_section

SECTION = "rdp"
TABLE = "rdp"
KEYS = ("orders", "methods", "delta", "rounds")

RDP_SCHEMA = table_schema([
    *POINT_COLUMNS,
    ("method", pa.string()),
    ("order", pa.float64()),
    ("rdp_epsilon", pa.float64()),
    ("rounds", pa.int64()),
    ("parts", pa.int64()),
    ("delta", pa.float64()),
    ("epsilon", pa.float64()),
    ("reference", pa.string()),
    ("error", pa.string()),
], nullable=("rdp_epsilon", "delta", "epsilon"))


@dataclass(frozen=True)
class RdpSection:
    """The parsed ``[rdp]`` section."""

    orders: tuple[float, ...]
    methods: tuple[str, ...] | None = None
    delta: float | None = None
    repeat: int = 1
    parts: tuple[dict, ...] | None = None


def parse_section(table: Mapping[str, Any], context: ParseContext | None = None) -> RdpSection:
    """Parse ``[rdp]`` (errors keyed ``rdp.<key>``)."""
    if not isinstance(table, Mapping):
        raise ScenarioError(SECTION, table, "must be a table")
    for key in table:
        if key not in KEYS:
            raise ScenarioError(f"{SECTION}.{key}", table[key], f"unknown key; keys: {list(KEYS)}")
    rounds = table.get("rounds", 1)
    methods = table.get("methods")
    methods = [methods] if isinstance(methods, str) else methods
    parts = None
    try:
        if isinstance(rounds, list):
            parts = tuple(dict(p) if isinstance(p, Mapping) else p for p in rounds)
            _, orders, _ = rdp_call.validate(list(parts), orders=table.get("orders"),
                                             methods=methods, delta=table.get("delta"))
        else:
            check_rounds(rounds, f"{SECTION}.rounds")
            orders = rdp_call.check_orders(table.get("orders"))
            probe = [{"randomizer": "krr", "epsilon0": 1.0, "domain_size": 2, "n": 2}]
            rdp_call.validate(probe, orders=orders, methods=methods, delta=table.get("delta"))
    except ParameterError as error:
        raise ScenarioError(f"{SECTION}.{error.field}", error.value, error.requirement) from None
    return RdpSection(orders=orders, methods=None if methods is None else tuple(methods),
                      delta=table.get("delta"), repeat=1 if parts else rounds, parts=parts)


def section_schema() -> dict[str, Any]:
    """The JSON Schema of ``[rdp]``."""
    part = {"type": "object", "properties": {"randomizer": {"type": "string"},
                                             "epsilon0": {"type": "number"}},
            "required": ["randomizer", "epsilon0"]}
    order = {"type": "number", "exclusiveMinimum": 1}
    return {"type": "object", "properties": {
        "orders": {"anyOf": [order, {"type": "array", "minItems": 1, "items": order}]},
        "methods": {"anyOf": [{"enum": list(rdp_call.METHODS)},
                              {"type": "array", "items": {"enum": list(rdp_call.METHODS)}}]},
        "delta": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
        "rounds": {"anyOf": [{"type": "integer", "minimum": 1},
                             {"type": "array", "minItems": 1, "items": part}]},
    }, "additionalProperties": False}


def _parts(point, section: RdpSection) -> list[dict]:
    if section.parts is not None:
        return list(section.parts)
    settings = point.settings
    if not settings.population.budget.is_constant:
        raise ScenarioError(f"{SECTION}.rounds", section.repeat,
                            "the point's own randomizer needs a constant budget (per-user "
                            "budgets have no single eps0); give rounds as tables")
    return [{"randomizer": settings.randomizer, "n": settings.population.n,
             "repeat": section.repeat}]


def produce(scenario: Scenario, progress=None) -> dict[str, pa.Table]:
    """The ``rdp`` table of a run (empty dict when no point has an ``[rdp]`` section)."""
    rows: list[dict] = []
    for point, section in scenario.points_with(SECTION):
        for record in rdp_call.curve(_parts(point, section), orders=section.orders,
                                     methods=section.methods, delta=section.delta):
            rows.append({"point": point.index, "overrides": point.overrides_json(), **record})
    if not rows:
        return {}
    columns = {field.name: [row[field.name] for row in rows] for field in RDP_SCHEMA}
    for name in ("rdp_epsilon", "epsilon", "delta"):
        columns[name] = [None if v is None or math.isnan(v) else float(v) for v in columns[name]]
    columns["point"] = np.asarray(columns["point"], dtype=np.int32)
    return {TABLE: pa.table(columns, schema=RDP_SCHEMA)}


register_section(SECTION, parse_section, schema=section_schema)
if TABLE_SCHEMAS.registered(TABLE) is None:  # reads no other table module (issue 32)
    register_table_schema(TABLE, RDP_SCHEMA)
register_table_producer(TABLE, produce, per_point=True)
