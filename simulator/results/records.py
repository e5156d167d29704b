"""Record types: one declaration per result table's row, from which its Parquet schema, its
pyarrow table and its JSON rows are generated (docs/architecture.md, "Results and figures").

A record type is a frozen dataclass deriving from :class:`Record`; its fields, in order, are
the table's columns. A field's Python type gives the column's type: ``int`` -> int64,
``float`` -> float64, ``str`` -> string, ``bool`` -> bool; ``Annotated[int, pa.int32()]``
names another pyarrow type; ``X | None`` makes the column nullable (and a NaN float becomes
null). So the column list exists once::

    @dataclass(frozen=True)
    class BoundRow(Record):
        point: Annotated[int, pa.int32()]
        method: str
        epsilon: float | None

    BoundRow.schema()            # pa.schema([point int32 not null, method string not null,
                                 #            epsilon double])
    BoundRow.table(rows)         # a pa.Table of that schema (from_columns: from whole columns)
    row.to_json()                # {"point": 0, "method": ..., "epsilon": ...}

Columns generated from another declaration (one per registered bound, say) come from the
:meth:`Record.extra_columns` hook: a field marked ``field(metadata=EXPAND)`` holds a mapping
(column -> value) and stands, in the schema, the table and the JSON rows, for the hook's
columns at its position; a column missing from a row's mapping is null.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Iterable, Mapping
from functools import cache
from typing import Any

import pyarrow as pa

#: The metadata of a field that stands for :meth:`Record.extra_columns` (module docstring).
EXPAND: Mapping[str, bool] = types.MappingProxyType({"record_extra_columns": True})

#: Python types -> pyarrow types of a record's columns.
ARROW_TYPES: dict[type, pa.DataType] = {int: pa.int64(), float: pa.float64(),
                                        str: pa.string(), bool: pa.bool_()}


def _column(name: str, hint: Any) -> pa.Field:
    """The pyarrow field of one record field (module docstring)."""
    nullable = False
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(args) != 1:
            raise TypeError(f"record field {name}: one type or one type | None, not {hint}")
        hint, nullable = args[0], True
    if typing.get_origin(hint) is typing.Annotated:
        base, *extras = typing.get_args(hint)
        dtypes = [e for e in extras if isinstance(e, pa.DataType)]
        if not dtypes:
            raise TypeError(f"record field {name}: Annotated without a pyarrow type")
        return pa.field(name, dtypes[0], nullable=nullable)
    if hint not in ARROW_TYPES:
        raise TypeError(f"record field {name}: no column type for {hint}")
    return pa.field(name, ARROW_TYPES[hint], nullable=nullable)


class Record:
    """Base of the record types (module docstring); subclasses are frozen dataclasses."""

    @classmethod
    def extra_columns(cls) -> tuple[pa.Field, ...]:
        """The generated columns a field marked ``EXPAND`` stands for (none by default)."""
        return ()

    @classmethod
    def schema(cls) -> pa.Schema:
        """The Parquet schema: one column per field, in order."""
        return _schema(cls)

    @classmethod
    def columns(cls) -> tuple[str, ...]:
        return tuple(cls.schema().names)

    @classmethod
    def table(cls, rows: Iterable[Record]) -> pa.Table:
        """The rows as one pyarrow table of :meth:`schema` (NaN floats in nullable columns
        become null; infinities stay)."""
        schema = cls.schema()
        rows = list(rows)
        data = {}
        for field, value in zip(schema, _getters(cls), strict=True):
            values = [value(row) for row in rows]
            if field.nullable and pa.types.is_floating(field.type):
                values = [None if v is None or math.isnan(v) else float(v) for v in values]
            data[field.name] = values
        return pa.table(data, schema=schema)

    @classmethod
    def from_columns(cls, columns: Mapping[str, Any]) -> pa.Table:
        """A table of :meth:`schema` from whole columns (numpy or pyarrow arrays; producers
        that build their rows vectorized); a missing column is a KeyError naming it."""
        return pa.table({name: columns[name] for name in cls.columns()}, schema=cls.schema())

    def to_json(self) -> dict[str, Any]:
        """The row as a JSON-ready dict (column -> value, NaN -> None)."""
        out = {}
        for name, get in zip(self.columns(), _getters(type(self)), strict=True):
            value = get(self)
            out[name] = None if isinstance(value, float) and math.isnan(value) else value
        return out


def _expands(field: dataclasses.Field) -> bool:
    return bool(field.metadata.get("record_extra_columns"))


@cache
def _schema(cls: type) -> pa.Schema:
    hints = typing.get_type_hints(cls, include_extras=True)
    columns: list[pa.Field] = []
    for f in dataclasses.fields(cls):
        columns += cls.extra_columns() if _expands(f) else [_column(f.name, hints[f.name])]
    return pa.schema(columns)


@cache
def _getters(cls: type) -> tuple:
    """One function row -> value per column of :func:`_schema`, in order."""
    getters = []
    for f in dataclasses.fields(cls):
        if _expands(f):
            getters += [(lambda row, m=f.name, c=c.name: getattr(row, m).get(c))
                        for c in cls.extra_columns()]
        else:
            getters.append(lambda row, name=f.name: getattr(row, name))
    return tuple(getters)
