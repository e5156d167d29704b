"""Record types (simulator/results/records.py): one declaration of a table's columns gives
its Parquet schema, its pyarrow table and its JSON rows."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated

import pyarrow as pa
import pytest

from shufflesim.simulator.results.records import Record
from shufflesim.simulator.results.tables import TABLE_SCHEMAS
from shufflesim.simulator.scenario.bounds import BOUNDS_SCHEMA, BoundRow


@dataclass(frozen=True)
class Row(Record):
    point: Annotated[int, pa.int32()]
    name: str
    count: int
    value: float | None
    flag: bool


def test_the_schema_follows_the_fields():
    assert Row.schema() == pa.schema([
        pa.field("point", pa.int32(), nullable=False), pa.field("name", pa.string(), False),
        pa.field("count", pa.int64(), False), pa.field("value", pa.float64(), True),
        pa.field("flag", pa.bool_(), False)])
    assert Row.columns() == ("point", "name", "count", "value", "flag")


def test_table_and_json_rows():
    rows = [Row(0, "a", 3, math.nan, True), Row(1, "b", 4, math.inf, False),
            Row(2, "c", 5, None, True)]
    table = Row.table(rows)
    assert table.schema == Row.schema()
    assert table.column("value").to_pylist() == [None, math.inf, None]
    assert rows[0].to_json() == {"point": 0, "name": "a", "count": 3, "value": None,
                                 "flag": True}


def test_a_field_without_a_column_type_is_refused():
    @dataclass(frozen=True)
    class Bad(Record):
        items: list

    with pytest.raises(TypeError, match="items"):
        Bad.schema()


def test_the_bounds_table_is_its_record():
    assert BOUNDS_SCHEMA == BoundRow.schema() == TABLE_SCHEMAS.get("bounds")
    assert BOUNDS_SCHEMA.field("epsilon").nullable
    assert not BOUNDS_SCHEMA.field("method").nullable
    assert BOUNDS_SCHEMA.field("point").type == pa.int32()
