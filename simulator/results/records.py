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
        for field in schema:
            values = [getattr(row, field.name) for row in rows]
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
        for field in dataclasses.fields(self):  # type: ignore[arg-type]
            value = getattr(self, field.name)
            out[field.name] = None if isinstance(value, float) and math.isnan(value) else value
        return out


@cache
def _schema(cls: type) -> pa.Schema:
    hints = typing.get_type_hints(cls, include_extras=True)
    return pa.schema([_column(f.name, hints[f.name]) for f in dataclasses.fields(cls)])
