"""The scenario section ``[calibrate]`` and its ``calibrate`` table: the ``calibrate``
capability (simulator.calls.calibrate; ``shufflesim calibrate``, ``shufflesim.calibrate``) for
each sweep point's randomizer and n.

    [calibrate]
    target_epsilon = 0.5        # the central target (a number or an array)
    delta = 1e-6
    methods = ["optimal-blanket", "004-thm3.1"]   # default every applicable upper bound
    rounds = 365                # the per-round eps0 for a lifetime target (default 1)

One row per (target, method) and point: the largest eps0 with which the bound certifies the
target over the rounds (``004-thm3.1``: 004's own choice of gamma for its summation protocol,
Thm 3.1). Rows carry no timings, so a re-run writes the same rows.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from shufflesim.protocols.errors import ParameterError
from shufflesim.simulator.calls import calibrate as calibrate_call
from shufflesim.simulator.errors import ScenarioError, UserError
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

SECTION = "calibrate"
TABLE = "calibrate"
KEYS = ("target_epsilon", "delta", "methods", "rounds")

CALIBRATE_SCHEMA = table_schema([
    *POINT_COLUMNS,
    ("randomizer", pa.string()),
    ("n", pa.int64()),
    ("target_epsilon", pa.float64()),
    ("delta", pa.float64()),
    ("rounds", pa.int64()),
    ("method", pa.string()),
    ("parameter", pa.string()),
    ("value", pa.float64()),
    ("epsilon", pa.float64()),
    ("status", pa.string()),
    ("note", pa.string()),
    ("error", pa.string()),
], nullable=("value", "epsilon"))


@dataclass(frozen=True)
class CalibrateSection:
    """The parsed ``[calibrate]`` section."""

    target_epsilon: tuple[float, ...]
    delta: float
    methods: tuple[str, ...] | None = None
    rounds: int = 1


def parse_section(table: Mapping[str, Any],
                  context: ParseContext | None = None) -> CalibrateSection:
    """Parse ``[calibrate]`` (errors keyed ``calibrate.<key>``); the methods are checked
    against each point's randomizer when the table is made."""
    if not isinstance(table, Mapping):
        raise ScenarioError(SECTION, table, "must be a table")
    for key in table:
        if key not in KEYS:
            raise ScenarioError(f"{SECTION}.{key}", table[key], f"unknown key; keys: {list(KEYS)}")
    for key in ("target_epsilon", "delta"):
        if key not in table:
            raise ScenarioError(f"{SECTION}.{key}", None, "is required")
    targets = table["target_epsilon"]
    targets = tuple(targets) if isinstance(targets, list) else (targets,)
    rounds = table.get("rounds", 1)
    check_rounds(rounds, f"{SECTION}.rounds")
    methods = table.get("methods")
    methods = [methods] if isinstance(methods, str) else methods
    for target in targets:
        try:  # the checks of the call that need no randomizer (target, delta, rounds)
            calibrate_call.check(target, table["delta"], 2, None, rounds)
        except ParameterError as error:
            raise ScenarioError(f"{SECTION}.{error.field}", error.value,
                                error.requirement) from None
    return CalibrateSection(target_epsilon=targets, delta=table["delta"],
                            methods=None if methods is None else tuple(methods),
                            rounds=rounds)


def section_schema() -> dict[str, Any]:
    """The JSON Schema of ``[calibrate]``."""
    positive = {"type": "number", "exclusiveMinimum": 0}
    return {"type": "object", "properties": {
        "target_epsilon": {"anyOf": [positive, {"type": "array", "minItems": 1,
                                                "items": positive}]},
        "delta": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
        "methods": {"anyOf": [{"type": "string"},
                              {"type": "array", "items": {"type": "string"}}]},
        "rounds": {"type": "integer", "minimum": 1},
    }, "required": ["target_epsilon", "delta"], "additionalProperties": False}


def produce(scenario: Scenario, progress=None) -> dict[str, pa.Table]:
    """The ``calibrate`` table of a run (empty dict when no point has the section)."""
    rows: list[dict] = []
    for point, section in scenario.points_with(SECTION):
        settings = point.settings
        n = settings.population.n
        for target in section.target_epsilon:
            try:
                records = calibrate_call.calibrate(
                    settings.randomizer_name, dict(settings.randomizer_params), target,
                    section.delta, n=n, methods=section.methods, rounds=section.rounds)
            except (ParameterError, UserError) as error:
                field = getattr(error, "field", "methods")
                raise ScenarioError(f"{SECTION}.{field}", getattr(error, "value", None),
                                    getattr(error, "requirement", str(error))) from None
            for record in records:
                rows.append({"point": point.index, "overrides": point.overrides_json(),
                             "randomizer": settings.randomizer_name, "n": n,
                             "target_epsilon": float(target), "delta": float(section.delta),
                             "rounds": section.rounds, "method": record["method"],
                             "parameter": record["parameter"], "value": record["value"],
                             "epsilon": record["epsilon"], "status": record["status"],
                             "note": record.get("note", ""), "error": record["error"]})
    if not rows:
        return {}
    columns = {field.name: [row[field.name] for row in rows] for field in CALIBRATE_SCHEMA}
    columns["point"] = np.asarray(columns["point"], dtype=np.int32)
    return {TABLE: pa.table(columns, schema=CALIBRATE_SCHEMA)}


register_section(SECTION, parse_section, schema=section_schema)
if TABLE_SCHEMAS.registered(TABLE) is None:  # reads no other table module (issue 32)
    register_table_schema(TABLE, CALIBRATE_SCHEMA)
register_table_producer(TABLE, produce, per_point=True)
