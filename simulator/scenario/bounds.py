"""The scenario section ``[bounds]`` and the ``bounds`` table of a run.

Keys: ``delta`` (a number or an array of central deltas, each in (0, 1)) and ``methods`` (an
array of bound names from protocols.bounds.catalogue; default: every bound that applies).
Every sweep point with the section gets one row per (delta, bound):

* constant budget: the catalogue's bounds for the scenario's randomizer with n users
  (``catalogue.evaluate_many``);
* per-user budgets: the personalized bounds (scope ``personalized`` in the catalogue, from
  protocols.bounds.heterogeneous) on ``PersonalizedUsers(randomizer, profile)``, with the
  profile of :func:`simulator.population.budgets.budget_profile` (exact group sizes, or the quantile
  multiset of a continuous distribution). The homogeneous bounds assume one eps0 and do not
  apply there.

A bound that does not apply, or whose regime excludes the setting, gives a row with an empty
``epsilon`` and the reason in ``error`` (never silently dropped). Rows carry no timings, so a
re-run writes the same rows. Results are cached per (randomizer, budget multiset, delta, bound)
within a process: sweep points that differ only in, e.g., the estimator share them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from protocols.bounds import catalogue
from protocols.bounds.heterogeneous import PERSONALIZED_SPECS, PersonalizedUsers
from protocols.registry import closest
from simulator.errors import ScenarioError
from simulator.execution.producers import register_table_producer
from simulator.population.budgets import budget_profile
from simulator.results.tables import TABLE_SCHEMAS, register_table_schema
from simulator.scenario.convert import ParseContext, parse_dataclass
from simulator.scenario.model import Scenario
from simulator.scenario.sections import register_section

SECTION = "bounds"
TABLE = "bounds"
HOMOGENEOUS = "shuffled randomizer (one eps0)"

BOUNDS_SCHEMA = pa.schema([
    pa.field("point", pa.int32(), nullable=False),
    pa.field("overrides", pa.string(), nullable=False),
    pa.field("randomizer", pa.string(), nullable=False),
    pa.field("n", pa.int64(), nullable=False),
    pa.field("epsilon0", pa.float64(), nullable=False),
    pa.field("budget", pa.string(), nullable=False),
    pa.field("delta", pa.float64(), nullable=False),
    pa.field("method", pa.string(), nullable=False),
    pa.field("kind", pa.string(), nullable=False),
    pa.field("mechanism", pa.string(), nullable=False),
    pa.field("epsilon", pa.float64(), nullable=True),
    pa.field("epsilon_error", pa.float64(), nullable=True),
    pa.field("status", pa.string(), nullable=False),
    pa.field("statuses", pa.string(), nullable=False),
    pa.field("reference", pa.string(), nullable=False),
    pa.field("note", pa.string(), nullable=False),
    pa.field("error", pa.string(), nullable=False),
])


@dataclass(frozen=True)
class BoundsSection:
    """The parsed ``[bounds]`` section."""

    delta: tuple[float, ...]
    methods: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if len(self.delta) == 0:
            raise ScenarioError("delta", self.delta, "needs at least one value")
        for i, d in enumerate(self.delta):
            if isinstance(d, bool) or not isinstance(d, (int, float)) or not 0 < d < 1:
                raise ScenarioError(f"delta[{i}]", d, "must lie in the open interval (0, 1)")
        if self.methods is not None:
            names = catalogue.bound_names()
            for i, name in enumerate(self.methods):
                if name not in names:
                    close = closest(name, names)
                    hint = f"did you mean {close!r}? " if close else ""
                    raise ScenarioError(f"methods[{i}]", name,
                                        f"unknown bound; {hint}choose one of {names}")


def parse_section(table: Mapping[str, Any], context: ParseContext) -> BoundsSection:
    """Parse ``[bounds]`` (errors keyed ``bounds.<key>``)."""
    table = dict(table)
    if isinstance(table.get("delta"), (int, float)) and not isinstance(table["delta"], bool):
        table["delta"] = [table["delta"]]
    return parse_dataclass(BoundsSection, table, SECTION, context)


# ---------------------------------------------------------------------------------------------
# Evaluation
# ---------------------------------------------------------------------------------------------
_CACHE: dict[tuple, dict] = {}


def _profile_label(profile) -> str:
    values, counts = profile.budget_counts()
    if values.size == 1:
        return f"constant {values[0]:g}"
    if values.size <= 6:
        return ", ".join(f"{c} x {v:g}" for v, c in zip(values, counts, strict=True))
    return f"{values.size} distinct budgets in [{values[0]:g}, {values[-1]:g}]"


def _records(settings, delta: float, methods) -> list[dict]:
    n = settings.population.n
    budget = settings.population.budget
    profile = budget_profile(budget, n)
    if budget.is_constant:
        subject, mechanisms = settings.randomizer, {}
    else:
        subject = PersonalizedUsers(settings.randomizer, profile)
        mechanisms = {spec.name: spec.mechanism for spec in PERSONALIZED_SPECS}
    key = (settings.randomizer_name, settings.randomizer_params, float(settings.epsilon0),
           profile.epsilons.tobytes(), profile.counts.tobytes(), profile.deltas.tobytes(),
           float(delta), methods)
    if key not in _CACHE:
        evaluations = catalogue.evaluate_many(subject, n, float(delta),
                                              None if methods is None else list(methods))
        rows = []
        for ev in evaluations:
            record = ev.record()
            rows.append({
                "budget": _profile_label(profile),
                "method": record["method"], "kind": record["kind"],
                "mechanism": mechanisms.get(record["method"], HOMOGENEOUS),
                "epsilon": record["epsilon"], "epsilon_error": record["epsilon_error"],
                "status": record["status"], "statuses": ", ".join(record["statuses"]),
                "reference": record["reference"], "note": record["note"],
                "error": record["error"],
            })
        _CACHE[key] = rows
    return _CACHE[key]


def produce(scenario: Scenario, progress=None) -> dict[str, pa.Table]:
    """The ``bounds`` table of a run (empty dict when no point has a ``[bounds]`` section)."""
    rows: list[dict] = []
    for point in scenario.points:
        settings = point.settings
        section = settings.sections.get(SECTION)
        if section is None:
            continue
        for delta in section.delta:
            for record in _records(settings, delta, section.methods):
                rows.append({
                    "point": point.index, "overrides": point.overrides_json(),
                    "randomizer": settings.randomizer_name, "n": settings.population.n,
                    "epsilon0": float(settings.epsilon0), "delta": float(delta), **record,
                })
    if not rows:
        return {}
    columns = {field.name: [row[field.name] for row in rows] for field in BOUNDS_SCHEMA}
    for name in ("epsilon", "epsilon_error"):  # inf (no certified eps) stays inf; NaN -> null
        columns[name] = [None if v is None or math.isnan(v) else float(v) for v in columns[name]]
    columns["point"] = np.asarray(columns["point"], dtype=np.int32)
    return {TABLE: pa.table(columns, schema=BOUNDS_SCHEMA)}


register_section(SECTION, parse_section)
if TABLE not in TABLE_SCHEMAS:
    register_table_schema(TABLE, BOUNDS_SCHEMA)
register_table_producer(TABLE, produce, per_point=True)
