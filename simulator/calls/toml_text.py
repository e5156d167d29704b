"""A scenario given as a dict, written as TOML text (the text a run records in its tables'
metadata and parses, so a dict and the file it stands for run the same way).

Supports what a scenario holds: strings, booleans, integers, floats (inf and nan too), arrays
and tables; tables inside arrays are written inline.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping

from shufflesim.simulator.errors import UserError

_BARE = re.compile(r"^[A-Za-z0-9_-]+$")


def _key(key) -> str:
    if not isinstance(key, str):
        raise UserError(f"scenario key {key!r}: keys must be strings")
    return key if _BARE.match(key) else json.dumps(key)


def _value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + " }"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    item = getattr(value, "item", None)  # numpy scalars
    if item is not None and getattr(value, "shape", None) == ():
        return _value(item())
    raise UserError(f"scenario value {value!r}: not representable in TOML (use strings, "
                    "numbers, booleans, lists and dicts)")


def to_toml(document: Mapping) -> str:
    """``document`` as TOML text: scalars and arrays first, then one ``[table]`` per dict (its
    own sub-dicts as dotted ``[table.sub]`` headers)."""
    lines: list[str] = []
    _table(document, (), lines)
    return "\n".join(lines).strip() + "\n"


def _table(table: Mapping, path: tuple[str, ...], lines: list[str]) -> None:
    plain = {k: v for k, v in table.items() if not isinstance(v, Mapping)}
    nested = {k: v for k, v in table.items() if isinstance(v, Mapping)}
    if path and (plain or not nested):
        lines.append("")
        lines.append("[" + ".".join(_key(p) for p in path) + "]")
    for key, value in plain.items():
        lines.append(f"{_key(key)} = {_value(value)}")
    for key, value in nested.items():
        _table(value, (*path, key), lines)
