"""Sweep expansion: ``[sweep]`` maps dotted keys to arrays of values; each point of their
cartesian product (keys in file order, the last varying fastest) is the file with the point's
values written over it."""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from copy import deepcopy
from typing import Any

from shufflesim.simulator.errors import ScenarioError
from shufflesim.simulator.scenario.convert import join_key, unknown_key_hint
from shufflesim.simulator.scenario.model import SweepAxis
from shufflesim.simulator.scenario.sections import TOP_LEVEL_SCALARS, section_names

#: Largest number of sweep points a scenario may expand to.
MAX_SWEEP_POINTS = 100_000
#: Keys a sweep may not vary.
NOT_SWEEPABLE = ("name", "seed", "sweep")


def parse_sweep(table: object) -> tuple[SweepAxis, ...]:
    if not isinstance(table, Mapping):
        raise ScenarioError("sweep", table, "must be a table of dotted keys to arrays")
    axes = []
    for key, values in _flatten_sweep(table, ""):
        label = f"sweep.{key!r}" if "." in key else f"sweep.{key}"
        head = key.split(".")[0]
        if head in NOT_SWEEPABLE:
            raise ScenarioError(label, values, f"{head!r} cannot be swept")
        valid_heads = [k for k in list(TOP_LEVEL_SCALARS) + section_names()
                       if k not in NOT_SWEEPABLE]
        if head not in valid_heads:
            raise ScenarioError(label, values, unknown_key_hint(head, valid_heads))
        if not isinstance(values, list) or not values:
            raise ScenarioError(label, values, "must be a non-empty array of values")
        for value in values:
            if _contains_datetime(value):
                raise ScenarioError(label, value, "dates and times cannot be swept")
        axes.append(SweepAxis(key=key, values=tuple(values)))
    return tuple(axes)


def _flatten_sweep(table: Mapping[str, Any], prefix: str):
    """Dotted keys may be quoted ("a.b" = [...]) or written as nested tables (a.b = [...])."""
    for key, value in table.items():
        path = join_key(prefix, key)
        if isinstance(value, Mapping):
            yield from _flatten_sweep(value, path)
        else:
            yield path, value


def _contains_datetime(value: Any) -> bool:
    if isinstance(value, (datetime.date, datetime.time)):
        return True
    if isinstance(value, list):
        return any(_contains_datetime(v) for v in value)
    if isinstance(value, Mapping):
        return any(_contains_datetime(v) for v in value.values())
    return False


def apply_overrides(document: Mapping[str, Any], overrides) -> dict[str, Any]:
    """A copy of the document with each dotted key set to its value."""
    out = deepcopy(dict(document))
    out.pop("sweep", None)
    for key, value in overrides:
        parts = key.split(".")
        node = out
        for depth, part in enumerate(parts[:-1]):
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                where = ".".join(parts[: depth + 1])
                raise ScenarioError(f"sweep.{key!r}", value, f"{where} is not a table")
            node = child
        node[parts[-1]] = deepcopy(value)
    return out
