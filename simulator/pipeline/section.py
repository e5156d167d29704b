"""The scenario section ``[pipeline]``: run a scenario through the SimPy pipeline.

Keys: every :class:`~simulator.pipeline.config.PipelineConfig` field (batch_size, timeout,
min_batch, arrival, window, dropout, delay, rounds, colluding_fraction, group_size) plus

* ``bound``: name of a bound in the catalogue (protocols.bounds.catalogue) used for the central
  epsilon of each released batch, computed for the batch's honest size;
* ``delta``: the central delta of that epsilon (required with ``bound``).

Without ``bound`` a released batch's epsilon is the best proven upper bound at ``delta`` (or,
without ``delta``, at the smallest delta of the scenario's ``[bounds]`` section), and without
any delta the local budget at delta 0; the ``epsilon_reason`` column of ``batches.parquet``
says which
(simulator/pipeline/unit.py). The section registers itself with the scenario loader
(simulator/plugins.py declares this module).
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from shufflesim.protocols.bounds import catalogue
from shufflesim.simulator.errors import ScenarioError
from shufflesim.simulator.pipeline.config import SECTION, DelayDistribution, PipelineConfig
from shufflesim.simulator.scenario.convert import ParseContext, dataclass_schema
from shufflesim.simulator.scenario.sections import register_section


@dataclass(frozen=True)
class PipelineSection:
    """The parsed ``[pipeline]`` section."""

    config: PipelineConfig
    bound: str | None = None
    delta: float | None = None

    def __post_init__(self) -> None:
        if self.delta is not None and not (
            isinstance(self.delta, (int, float)) and not isinstance(self.delta, bool)
            and 0 < self.delta < 1
        ):
            raise ScenarioError(
                f"{SECTION}.delta", self.delta, "must lie in the open interval (0, 1)"
            )
        if self.bound is not None:
            if not isinstance(self.bound, str):
                raise ScenarioError(f"{SECTION}.bound", self.bound, "must be a string")
            check_bound_name(self.bound)
            if self.delta is None:
                raise ScenarioError(f"{SECTION}.delta", None, "is required with pipeline.bound")


def check_bound_name(name: str) -> None:
    """The bound must exist in the catalogue."""
    names = list(catalogue.bound_names())
    if name not in names:
        close = difflib.get_close_matches(name, names, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise ScenarioError(f"{SECTION}.bound", name, f"unknown bound; {hint}choose one of {names}")
    kind = getattr(catalogue.get_bound(name).kind, "value", None)
    if kind != "upper":
        raise ScenarioError(
            f"{SECTION}.bound", name, f"is a {kind} bound; a batch's epsilon needs an upper bound"
        )


def parse_section(table: Mapping[str, Any], context: ParseContext | None = None) -> PipelineSection:
    """Parse the ``[pipeline]`` table (the scenario loader's section parser)."""
    if not isinstance(table, Mapping):
        raise ScenarioError(SECTION, table, "must be a table")
    rest = {k: v for k, v in table.items() if k not in ("bound", "delta")}
    delta = table.get("delta")
    if isinstance(delta, float) and math.isnan(delta):
        raise ScenarioError(f"{SECTION}.delta", delta, "must lie in the open interval (0, 1)")
    return PipelineSection(
        config=PipelineConfig.from_mapping(rest, extra_keys=("bound", "delta")),
        bound=table.get("bound"),
        delta=delta,
    )


def section_schema() -> dict[str, Any]:
    """The JSON Schema of ``[pipeline]``: PipelineConfig's fields (``delay`` a table or a
    distribution's name), ``bound`` an upper bound of the catalogue, ``delta`` in (0, 1)."""
    schema = dataclass_schema(PipelineConfig)
    properties = schema["properties"]
    properties["delay"] = {"anyOf": [properties["delay"],
                                     {"enum": [d.value for d in DelayDistribution]}]}
    properties["bound"] = {"enum": sorted(
        spec.name for spec in catalogue.all_bounds()
        if getattr(spec.kind, "value", None) == "upper")}
    properties["delta"] = {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1}
    return schema


register_section(SECTION, parse_section, schema=section_schema)
