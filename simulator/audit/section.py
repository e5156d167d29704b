"""The scenario section ``[audit]`` and the ``audit`` table of a run.

Keys: the fields of :class:`simulator.audit.run.AuditSettings` (trials is required; ``delta``
may be a number or an array). Every sweep point with the section is audited once, with n from
``population.n``, the scenario's randomizer and eps0, the ``[pipeline]`` options for the
pipeline level, and randomness from ``SeedSequence(seed, spawn_key=(point, AUDIT_KEY))``; the
rows go to ``audit.parquet`` (schema: simulator.audit.tables.AUDIT_SCHEMA). Importing this
module registers the section, the table schema and :func:`produce` as a per-point table
producer (simulator/plugins.py declares it).

``implementation = "impl.py:function"`` (or ``"module:function"``) audits the user's code
against the scenario's randomizer as its claim (simulator/audit/implementation.py); a relative
file path (also of ``shuffler``) is resolved against the scenario's directory. Its rows equal
those of ``shufflesim audit --implementation`` and of ``audit_implementation`` with the same
seed (point 0 of the scenario; simulator/audit/run.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from shufflesim.protocols.errors import ParameterError
from shufflesim.simulator.audit.levels import ATTACKS, LEVELS
from shufflesim.simulator.audit.loading import load_implementation
from shufflesim.simulator.audit.run import AUDIT_KEY, AuditSettings, run_audit
from shufflesim.simulator.audit.tables import AUDIT_SCHEMA, to_table
from shufflesim.simulator.errors import ScenarioError
from shufflesim.simulator.results.tables import TABLE_SCHEMAS, register_table_schema
from shufflesim.simulator.scenario.convert import ParseContext, dataclass_schema, parse_dataclass
from shufflesim.simulator.scenario.model import Scenario
from shufflesim.simulator.scenario.producers import register_table_producer
from shufflesim.simulator.scenario.sections import register_section

SECTION = "audit"
TABLE = "audit"


def parse_section(table: Mapping[str, Any], context: ParseContext) -> AuditSettings:
    """Parse ``[audit]`` (errors keyed ``audit.<key>``)."""
    table = dict(table)
    if isinstance(table.get("delta"), (int, float)) and not isinstance(table["delta"], bool):
        table["delta"] = [table["delta"]]
    for key in ("implementation", "shuffler", "support"):
        if isinstance(table.get(key), str):
            table[key] = resolve_spec(table[key], context.base_dir)
    settings = parse_dataclass(AuditSettings, table, SECTION, context)
    for key in ("implementation", "shuffler", "support"):  # a missing file or function now
        spec = getattr(settings, key)
        if spec is not None:
            try:
                load_implementation(spec)
            except ParameterError as error:
                raise ScenarioError(f"{SECTION}.{key}", spec, error.requirement) from None
    return settings


def resolve_spec(spec: str, base_dir: Path) -> str:
    """``file.py:function`` with a relative file path resolved against ``base_dir``;
    ``module:function`` unchanged."""
    target, sep, name = spec.rpartition(":")
    if not sep or not (target.endswith(".py") or "/" in target or "\\" in target):
        return spec
    path = Path(target).expanduser()
    return f"{path if path.is_absolute() else base_dir / path}:{name}"


def section_schema() -> dict[str, Any]:
    """The JSON Schema of ``[audit]``: AuditSettings' fields, ``delta`` also as one number,
    ``attacks`` and ``level`` by registered name."""
    schema = dataclass_schema(AuditSettings)
    properties = schema["properties"]
    properties["delta"] = {"anyOf": [properties["delta"]["items"], properties["delta"]]}
    properties["attacks"]["items"] = {"enum": ATTACKS.names()}
    properties["level"] = {"enum": [spec.name for spec in LEVELS.values()]}
    return schema


def produce(scenario: Scenario, progress=None) -> dict[str, pa.Table]:
    """The ``audit`` table of a run (empty dict when no point has an ``[audit]`` section)."""
    records: list[dict] = []
    for point in scenario.points:
        settings = point.settings
        audit = settings.sections.get(SECTION)
        if audit is None:
            continue
        if not settings.population.budget.is_constant:
            raise ScenarioError("population.budget.distribution", settings.population.budget.name,
                                "the audit needs a constant budget (one eps0)")
        pipeline = settings.sections.get("pipeline")
        seed = np.random.SeedSequence(entropy=scenario.seed, spawn_key=(point.index, AUDIT_KEY))
        context = {"point": point.index, "overrides": point.overrides_json(),
                   "randomizer": settings.randomizer_name,
                   "epsilon0": float(settings.randomizer.epsilon0),
                   "n": settings.population.n}
        records += run_audit(audit, settings.randomizer, settings.population.n, seed, context,
                             pipeline=None if pipeline is None else pipeline.config,
                             progress=progress)
    return {TABLE: to_table(records)} if records else {}


register_section(SECTION, parse_section, schema=section_schema)
if TABLE_SCHEMAS.registered(TABLE) is None:  # reads no other table module (issue 32)
    register_table_schema(TABLE, AUDIT_SCHEMA)
# per point: each point's audit is its own unit of work (own seed, spread over workers, resumable)
register_table_producer(TABLE, produce, per_point=True)
