"""Parquet result tables (simulator/results.py): schema, metadata, atomic writing."""

import os
import subprocess

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from shufflesim.simulator import __version__
from shufflesim.simulator.errors import UserError
from shufflesim.simulator.results import tables as results_module
from shufflesim.simulator.results.tables import (
    TABLE_SCHEMAS,
    UTILITY_SCHEMA,
    conform,
    git_commit,
    read_metadata,
    register_table_schema,
    run_metadata,
    write_tables,
)


def utility_table(rows=4) -> pa.Table:
    return pa.table({
        "point": np.zeros(rows, dtype=np.int32),
        "overrides": ["{}"] * rows,
        "randomizer": ["krr"] * rows,
        "estimator": ["frequency"] * rows,
        "n": np.full(rows, 10, dtype=np.int64),
        "epsilon0": np.ones(rows),
        "path": ["reports"] * rows,
        "repetition": np.arange(rows, dtype=np.int32),
        "metric": ["l2"] * rows,
        "reference": ["empirical"] * rows,
        "value": np.linspace(0, 1, rows),
    }, schema=UTILITY_SCHEMA)


META = {"scenario": 'name = "x"\n', "seed": "3", "version": __version__,
        "git_commit": "0" * 40}


def test_write_and_read_back_with_schema_and_metadata(tmp_path):
    table = utility_table()
    [path] = write_tables(tmp_path / "out" / "x", {"utility": table}, META)
    assert path == tmp_path / "out" / "x" / "utility.parquet"
    back = pq.read_table(path)
    assert back.schema.equals(UTILITY_SCHEMA, check_metadata=False)
    assert back.equals(table.replace_schema_metadata(back.schema.metadata))
    meta = read_metadata(path)
    assert meta == {**META, "table": "utility"}
    assert os.listdir(path.parent) == ["utility.parquet"]


def test_run_metadata_records_the_git_commit_when_known(monkeypatch):
    commit = git_commit()
    inside_git = subprocess.run(["git", "rev-parse", "HEAD"], cwd=results_module.__file__.rsplit(
        "/", 1)[0], capture_output=True, check=False).returncode == 0
    if inside_git:
        assert commit is not None and len(commit) == 40
        int(commit, 16)
    meta = run_metadata("text", 5)
    assert meta["scenario"] == "text" and meta["seed"] == "5" and meta["version"] == __version__
    assert meta.get("git_commit") == commit

    def no_git(*args, **kwargs):
        raise FileNotFoundError("git")

    monkeypatch.setattr(results_module.subprocess, "run", no_git)
    assert git_commit() is None
    assert "git_commit" not in run_metadata("text", 5)


def test_failed_write_leaves_nothing_behind(tmp_path, monkeypatch):
    def broken(table, where, **kwargs):
        with open(where, "wb") as handle:
            handle.write(b"PAR1 partial")
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(results_module.pq, "write_table", broken)
    target = tmp_path / "new" / "deeper"
    with pytest.raises(RuntimeError, match="disk on fire"):
        write_tables(target, {"utility": utility_table()}, META)
    assert not (tmp_path / "new").exists()
    assert os.listdir(tmp_path) == []


def test_failed_write_keeps_the_previous_file(tmp_path, monkeypatch):
    [path] = write_tables(tmp_path, {"utility": utility_table(3)}, META)
    before = path.read_bytes()
    monkeypatch.setattr(results_module.pq, "write_table",
                        lambda *a, **k: (_ for _ in ()).throw(OSError(28, "No space left")))
    with pytest.raises(UserError, match="No space left"):
        write_tables(tmp_path, {"utility": utility_table(5)}, META)
    assert path.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["utility.parquet"]


def test_unwritable_destination_is_a_user_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(UserError, match="not a directory|cannot"):
        write_tables(blocker, {"utility": utility_table()}, META)
    with pytest.raises(UserError, match="cannot create results directory"):
        write_tables(blocker / "below", {"utility": utility_table()}, META)


def test_conform_checks_columns_and_casts():
    table = utility_table()
    assert conform("utility", table).schema.equals(UTILITY_SCHEMA)
    with pytest.raises(ValueError, match="expected"):
        conform("utility", table.drop_columns(["value"]))
    with pytest.raises(KeyError):
        conform("nope", table)
    loose = pa.table({name: table.column(name).to_pylist() for name in table.column_names})
    assert conform("utility", loose).schema.equals(UTILITY_SCHEMA)


def test_register_table_schema(monkeypatch):
    monkeypatch.setitem(TABLE_SCHEMAS._items, "extra", pa.schema([("a", pa.int64())]))
    with pytest.raises(RuntimeError):
        register_table_schema("extra", pa.schema([("a", pa.int64())]))
    with pytest.raises(RuntimeError):
        register_table_schema("utility", UTILITY_SCHEMA)
