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


def test_the_utility_and_users_tables_are_their_records():
    from shufflesim.simulator.pipeline.lifetime import USERS_SCHEMA, UserRow
    from shufflesim.simulator.results.tables import UTILITY_SCHEMA, UtilityRow

    assert UTILITY_SCHEMA == UtilityRow.schema() == TABLE_SCHEMAS.get("utility")
    assert USERS_SCHEMA == UserRow.schema() == TABLE_SCHEMAS.get("users")
    assert USERS_SCHEMA.field("epsilon").nullable and not USERS_SCHEMA.field("user").nullable


def test_a_table_from_whole_columns():
    table = Row.from_columns({"flag": [True, False], "value": [1.5, None], "count": [1, 2],
                              "name": ["a", "b"], "point": [0, 1], "extra": [9, 9]})
    assert table.schema == Row.schema() and table.num_rows == 2
    with pytest.raises(KeyError, match="flag"):
        Row.from_columns({"point": [0], "name": ["a"], "count": [1], "value": [None]})


def test_the_batches_table_is_its_record():
    from shufflesim.simulator.pipeline.analyzer import BATCHES_SCHEMA, BatchRow
    from shufflesim.simulator.pipeline.unit import BATCHES_TABLE_SCHEMA, BatchesRow

    assert BATCHES_SCHEMA == BatchRow.schema()
    assert BATCHES_TABLE_SCHEMA == BatchesRow.schema() == TABLE_SCHEMAS.get("batches")
    assert BATCHES_TABLE_SCHEMA.names[:4] == ["point", "overrides", "repetition", "round"]
    assert BATCHES_TABLE_SCHEMA.names[-1] == "epsilon_reason"


def test_the_audit_table_is_its_record():
    from shufflesim.simulator.audit.tables import AUDIT_SCHEMA, COLUMNS, AuditRow

    assert AUDIT_SCHEMA == AuditRow.schema() == TABLE_SCHEMAS.get("audit")
    assert COLUMNS == AuditRow.columns()
    assert not AUDIT_SCHEMA.field("row_type").nullable and AUDIT_SCHEMA.field("n").nullable
