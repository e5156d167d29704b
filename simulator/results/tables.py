"""Result tables: explicit pyarrow schemas, metadata, atomic Parquet writing.

Every table a run writes has a registered schema (:data:`TABLE_SCHEMAS`; other modules add
theirs with :func:`register_table_schema`) and carries the same metadata (keys in
:data:`METADATA_KEYS`): the scenario TOML text, the seed actually used, the package version, the
git commit of the source tree when ``git rev-parse HEAD`` works there (absent otherwise), and the
table's name. docs/results.md documents every table and column.

Writing is atomic: each file is written to a temporary file in its final directory and moved
into place with :func:`os.replace`; all temporary files are written before any is moved. A
failure leaves no partial file and removes the directories the call created.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import pyarrow as pa
import pyarrow.parquet as pq

from shufflesim.protocols.registry import Registry, declared_names
from shufflesim.simulator import __version__
from shufflesim.simulator.errors import UserError
from shufflesim.simulator.results.records import Record

Columns = Iterable[tuple[str, pa.DataType]]

#: The columns every per-point table begins with: the point's index in the sweep and its
#: overrides (JSON).
POINT_COLUMNS: tuple[tuple[str, pa.DataType], ...] = (
    ("point", pa.int32()),
    ("overrides", pa.string()),
)


def table_schema(columns: Columns, nullable: Collection[str] = ()) -> pa.Schema:
    """A result table's schema from its (name, type) columns in order: every column is
    non-nullable except those named in ``nullable``."""
    return pa.schema([pa.field(name, dtype, nullable=name in nullable)
                      for name, dtype in columns])


@dataclass(frozen=True)
class UtilityRow(Record):
    """One row of the ``utility`` table (docs/results.md): one metric of one repetition."""

    point: Annotated[int, pa.int32()]
    overrides: str
    randomizer: str
    estimator: str
    n: int
    epsilon0: float
    path: str
    repetition: Annotated[int, pa.int32()]
    metric: str
    reference: str
    value: float


UTILITY_SCHEMA = UtilityRow.schema()

#: Result tables' schemas by table name.
TABLE_SCHEMAS: Registry[pa.Schema] = Registry(
    "table schema", field="table", declared="shufflesim.simulator.plugins:TABLES")
TABLE_SCHEMAS.register("utility", UTILITY_SCHEMA)
#: Permissions of written tables (readable by everyone, like files written with open()).
TABLE_FILE_MODE = 0o644

METADATA_KEYS = {
    "scenario": b"shufflesim.scenario",
    "seed": b"shufflesim.seed",
    "version": b"shufflesim.version",
    "git_commit": b"shufflesim.git_commit",
    "table": b"shufflesim.table",
}


def table_names() -> list[str]:
    """Every result table's name, sorted: the declared ones (simulator/plugins.py ``TABLES``)
    and those registered outside the declaration; no table's module is imported (issue 32)."""
    if TABLE_SCHEMAS.complete:
        return TABLE_SCHEMAS.names()
    return sorted({*declared_names(TABLE_SCHEMAS.declared), *TABLE_SCHEMAS.undeclared()})


def register_table_schema(name: str, schema: pa.Schema) -> None:
    """Declare the schema of a new result table."""
    TABLE_SCHEMAS.register(name, schema)


def git_commit() -> str | None:
    """The commit of the source tree this package runs from, or None when unknown."""
    here = Path(__file__).resolve().parent
    try:
        done = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    commit = done.stdout.strip()
    if done.returncode != 0 or len(commit) != 40:
        return None
    return commit


def run_metadata(scenario_text: str, seed: int, commit: str | None = None) -> dict[str, str]:
    """The metadata common to every table of a run (commit looked up when not given)."""
    meta = {"scenario": scenario_text, "seed": str(seed), "version": __version__}
    commit = commit if commit is not None else git_commit()
    if commit is not None:
        meta["git_commit"] = commit
    return meta


def _schema_metadata(meta: Mapping[str, str], table_name: str) -> dict[bytes, bytes]:
    out = {METADATA_KEYS[k]: v.encode("utf-8") for k, v in meta.items()}
    out[METADATA_KEYS["table"]] = table_name.encode("utf-8")
    return out


def conform(name: str, table: pa.Table) -> pa.Table:
    """``table`` with exactly the registered schema of ``name`` (a clear error otherwise)."""
    if name not in TABLE_SCHEMAS:
        raise KeyError(f"no schema registered for table {name!r}")
    schema = TABLE_SCHEMAS.get(name)
    if table.schema.names != schema.names:
        raise ValueError(
            f"table {name!r} has columns {table.schema.names}, expected {schema.names}"
        )
    return table.cast(schema)


def write_tables(
    directory: str | Path, tables: Mapping[str, pa.Table], metadata: Mapping[str, str]
) -> list[Path]:
    """Write ``{name: table}`` as ``directory/<name>.parquet``, atomically (module docstring).

    Returns the written paths. OS errors become a one-line UserError naming the path.
    """
    directory = Path(directory)
    conformed = {name: conform(name, table) for name, table in tables.items()}
    try:
        created = make_dirs(directory)
    except OSError as error:
        path = error.filename or directory
        raise UserError(f"cannot create results directory {path}: {error.strerror}") from None
    temporaries: list[tuple[Path, Path]] = []
    try:
        for name, table in conformed.items():
            final = directory / f"{name}.parquet"
            handle, temp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=directory)
            os.close(handle)
            temporaries.append((Path(temp), final))
            table = table.replace_schema_metadata(_schema_metadata(metadata, name))
            pq.write_table(table, temp)
            os.chmod(temp, TABLE_FILE_MODE)  # mkstemp creates 0600 files
        for temp, final in temporaries:
            os.replace(temp, final)
    except BaseException as error:
        for temp, _ in temporaries:
            Path(temp).unlink(missing_ok=True)
        for path in reversed(created):
            try:
                path.rmdir()
            except OSError:
                break
        if isinstance(error, OSError):
            target = error.filename or directory
            reason = error.strerror or error
            raise UserError(f"cannot write results to {target}: {reason}") from None
        raise
    return [final for _, final in temporaries]


def make_dirs(directory: Path) -> list[Path]:
    """Create ``directory`` and missing parents; return the ones created (outermost first).
    On an OSError the ones created are removed again and the error propagates."""
    missing = []
    path = directory
    while not path.exists():
        missing.append(path)
        if path.parent == path:
            break
        path = path.parent
    missing.reverse()
    made = []
    try:
        for path in missing:
            path.mkdir()
            made.append(path)
    except OSError:
        for path in reversed(made):
            path.rmdir()
        raise
    if not directory.is_dir():
        raise UserError(f"results path {directory} exists and is not a directory")
    return made


def read_metadata(path: str | Path) -> dict[str, str]:
    """The shufflesim metadata of a written table, by short key."""
    raw = pq.read_schema(path).metadata or {}
    inverse = {v: k for k, v in METADATA_KEYS.items()}
    return {inverse[k]: v.decode("utf-8") for k, v in raw.items() if k in inverse}
