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


def test_the_learning_table_is_a_record_with_generated_bound_columns():
    """Issue 27: LearningRow's schema is the learning table's schema before it became a
    record (written out here as it was), its epsilon_<bound> columns generated from
    protocols' BOUND_COLUMNS through Record.extra_columns; table and JSON rows follow."""
    from shufflesim.protocols.learning.accounting import BOUND_COLUMNS
    from shufflesim.simulator.learning.section import LEARNING_SCHEMA, LearningRow
    from shufflesim.simulator.results.tables import POINT_COLUMNS, table_schema

    bounds = [f"epsilon_{name}" for name in BOUND_COLUMNS]
    before = table_schema([
        *POINT_COLUMNS, ("repetition", pa.int32()), ("epoch", pa.int32()),
        ("step", pa.int64()), ("data", pa.string()), ("model", pa.string()),
        ("randomizer", pa.string()), ("budget", pa.string()), ("n_clients", pa.int64()),
        ("clients_per_step", pa.int64()), ("examples_per_client", pa.int64()),
        ("epsilon0_min", pa.float64()), ("epsilon0_mean", pa.float64()),
        ("epsilon0_max", pa.float64()), ("delta0", pa.float64()), ("delta", pa.float64()),
        ("train_loss", pa.float64()), ("train_accuracy", pa.float64()),
        ("test_loss", pa.float64()), ("test_accuracy", pa.float64()),
        *[(name, pa.float64()) for name in bounds], ("accounting_note", pa.string()),
    ], nullable=("epsilon0_min", "epsilon0_mean", "epsilon0_max", *bounds))
    assert LearningRow.schema() == before == LEARNING_SCHEMA == TABLE_SCHEMAS.get("learning")
    assert len(bounds) >= 2 and LearningRow.columns()[-len(bounds) - 1:-1] == tuple(bounds)

    row = LearningRow(0, "{}", 0, 1, 10, "digits", "logistic", "krr", "constant", 100, 10, 1,
                      0.5, 0.5, 0.5, 0.0, 1e-5, 0.3, 0.9, 0.4, 0.8,
                      {bounds[0]: 1.5, bounds[1]: math.nan}, "note")
    table = LearningRow.table([row])
    assert table.schema == before
    assert table.column(bounds[0]).to_pylist() == [1.5]
    assert table.column(bounds[1]).to_pylist() == [None]  # NaN -> null
    assert table.column(bounds[-1]).to_pylist() == [None]  # missing from the mapping
    data = row.to_json()
    assert list(data) == list(before.names)
    assert data[bounds[0]] == 1.5 and data[bounds[1]] is None and data["accounting_note"] == "note"
