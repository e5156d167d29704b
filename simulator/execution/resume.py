"""Resumable runs: every finished unit's tables are kept as part files until the run's final
tables are in place.

Layout, in a run directory ``<out>/<name>/``::

    .parts/manifest.json               run fingerprint and the unit keys, in order
    .parts/lock                        held (flock) by the run using the directory
    .parts/<table>/<unit key>.parquet  one unit's rows of one table
    .parts/done/<unit key>.json        the unit is finished: {table: row count}

A unit's part files are written first, then its done marker; each file is written to a
temporary file in its final directory and moved into place with :func:`os.replace`, so a
process killed at any instant (even by SIGKILL) leaves either no file or a complete one. Part
files are flushed to disk (fsync) before they are moved; a done marker is not (it would cost
one fsync per unit, in the driver): a unit counts as finished only when its marker reads and
every part it lists has the recorded rows, so a marker lost or cut by a crash of the machine
only means that the unit runs again. A new run
of the same scenario reuses the finished units and computes only the missing ones; since every
unit has its own random stream (simulator.execution.units), the final tables equal those of an
uninterrupted run.

Stale parts are never reused: the manifest holds a fingerprint of everything the rows depend on
(scenario text, seed, the directory relative paths are resolved against, package version, git
commit when known, numpy version, and the unit plan); a run whose fingerprint differs deletes
the old parts before it starts. (Files a scenario reads, e.g. data columns, are identified by
their path only: edit such a file and the old parts would be reused; delete ``.parts`` then.)

Final tables are assembled from the parts in unit order and written by
:func:`simulator.results.write_tables` (temporary files, then ``os.replace``), so a finished
table is only ever replaced by another finished table. :func:`finish` then removes the parts,
temporary files left by an earlier killed write, and tables of an earlier run that this run did
not produce, so that the directory holds exactly this run's tables.

A run that stops on a user error (a bad scenario value found while running) removes its parts
and the directories it created: the scenario must change, which invalidates them anyway. Any
other interruption (Ctrl-C, SIGTERM, running out of memory) keeps them for the next run, and
``shufflesim run`` says so; with no unit finished there is nothing to keep
(:func:`discard_parts`).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from shufflesim.simulator import __version__
from shufflesim.simulator.errors import UserError
from shufflesim.simulator.execution.units import WorkUnit
from shufflesim.simulator.results.tables import git_commit, make_dirs, table_names
from shufflesim.simulator.scenario.model import Scenario

PARTS = ".parts"
MANIFEST = "manifest.json"
DONE = "done"
LOCK = "lock"
FORMAT = 1
#: Permissions of part files and final tables (tempfile creates 0600 files).
FILE_MODE = 0o644
_TABLE_NAME = re.compile(r"^[A-Za-z0-9_]+$")
#: Temporary files of simulator.results.write_tables: ".<table>.<random>.tmp".
_WRITE_TEMPORARY = re.compile(r"^\.[A-Za-z0-9_]+\..+\.tmp$")


def run_fingerprint(scenario: Scenario, units: Iterable[WorkUnit],
                    commit: str | None = None) -> str:
    """A hash of everything a run's rows depend on (module docstring)."""
    source_dir = None if scenario.source is None else str(Path(scenario.source).resolve().parent)
    identity = {
        "format": FORMAT,
        "scenario": scenario.text,
        "seed": scenario.seed,
        "source_dir": source_dir,
        "version": __version__,
        "git_commit": commit if commit is not None else git_commit(),
        "numpy": np.__version__,
        "units": [unit.key for unit in units],
    }
    text = json.dumps(identity, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@contextlib.contextmanager
def _replacing(path: Path, durable: bool = True):
    """Yield a temporary file's path beside ``path``; on success make it durable (fsync, unless
    not ``durable``) and move it over ``path`` (os.replace), on any error remove it."""
    handle, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(handle)
    try:
        yield temp
        if durable:
            with open(temp, "rb") as stream:
                os.fsync(stream.fileno())
        os.chmod(temp, FILE_MODE)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def atomic_write_bytes(path: Path, data: bytes, durable: bool = True) -> None:
    """Write ``data`` to ``path`` atomically (temporary file, fsync unless not ``durable``,
    os.replace)."""
    with _replacing(path, durable) as temp:
        Path(temp).write_bytes(data)


def atomic_write_table(path: Path, table: pa.Table) -> None:
    """Write a Parquet file atomically (temporary file, fsync, os.replace)."""
    with _replacing(path) as temp:
        pq.write_table(table.replace_schema_metadata(None), temp)


class MemoryParts:
    """Finished units' tables in memory (a run without a directory)."""

    def __init__(self) -> None:
        self._tables: dict[str, dict[str, pa.Table]] = {}

    @property
    def done(self) -> set[str]:
        return set(self._tables)

    def put(self, unit: WorkUnit, tables: Mapping[str, pa.Table]) -> None:
        self._tables[unit.key] = dict(tables)

    def get(self, unit: WorkUnit) -> dict[str, pa.Table]:
        return self._tables[unit.key]

    def __enter__(self) -> MemoryParts:
        return self

    def __exit__(self, *exc_info) -> None:
        pass


class DirectoryParts:
    """The part files of one run directory (module docstring). Open with :meth:`open`; use as
    a context manager, which releases the lock (and discards the parts after a user error)."""

    def __init__(self, directory: Path, created: list[Path], lock_fd: int,
                 done: set[str]) -> None:
        self.directory = directory
        self.parts = directory / PARTS
        self._created = created
        self._lock_fd: int | None = lock_fd
        self._done = done
        #: Units found finished when the directory was opened.
        self.resumed = len(done)

    @classmethod
    def open(cls, directory: str | Path, fingerprint: str, units: list[WorkUnit]
             ) -> DirectoryParts:
        """Create or reuse ``directory/.parts`` for a run with this fingerprint and plan."""
        directory = Path(directory)
        try:
            created = make_dirs(directory / PARTS)
        except OSError as error:
            raise UserError(f"cannot create results directory {directory}: "
                            f"{error.strerror or error}") from None
        parts = directory / PARTS
        lock_fd = _lock(parts / LOCK, directory)
        try:
            _remove_write_temporaries(directory)
            manifest = _read_manifest(parts / MANIFEST)
            if manifest is None or manifest.get("fingerprint") != fingerprint:
                _clear_parts(parts)
                (parts / DONE).mkdir()
                atomic_write_bytes(parts / MANIFEST, json.dumps(
                    {"format": FORMAT, "fingerprint": fingerprint,
                     "units": [u.key for u in units]}, indent=1).encode("utf-8"))
                done: set[str] = set()
            else:
                _remove_part_temporaries(parts)
                done = {u.key for u in units if _unit_is_complete(parts, u.key)}
        except BaseException:
            os.close(lock_fd)
            raise
        return cls(directory, created, lock_fd, done)

    @property
    def done(self) -> set[str]:
        return set(self._done)

    def put(self, unit: WorkUnit, tables: Mapping[str, pa.Table]) -> None:
        """Store a finished unit: its part files, then its done marker."""
        counts = {}
        for name, table in tables.items():
            if not _TABLE_NAME.match(name):
                raise RuntimeError(f"table name {name!r} cannot name a directory")
            folder = self.parts / name
            folder.mkdir(exist_ok=True)
            atomic_write_table(folder / f"{unit.key}.parquet", table)
            counts[name] = table.num_rows
        marker = json.dumps({"key": unit.key, "tables": counts}).encode("utf-8")
        # no fsync of the marker (one per unit in the driver: issue 32): its parts are on disk
        # already, and a marker lost or cut by a crash of the machine only means the unit is
        # run again (_unit_is_complete checks it against its parts' row counts)
        atomic_write_bytes(self.parts / DONE / f"{unit.key}.json", marker, durable=False)
        self._done.add(unit.key)

    def get(self, unit: WorkUnit) -> dict[str, pa.Table]:
        """A finished unit's tables, read back from its part files."""
        counts = _read_json(self.parts / DONE / f"{unit.key}.json")["tables"]
        return {name: pq.read_table(self.parts / name / f"{unit.key}.parquet")
                for name in counts}

    def release(self) -> None:
        fd, self._lock_fd = self._lock_fd, None
        if fd is not None:
            os.close(fd)

    def discard(self) -> None:
        """Remove the parts and the directories this run created."""
        shutil.rmtree(self.parts, ignore_errors=True)
        for path in reversed(self._created):
            with contextlib.suppress(OSError):
                path.rmdir()

    def __enter__(self) -> DirectoryParts:
        return self

    def __exit__(self, exc_type, exc, traceback) -> None:
        try:
            if exc is not None and isinstance(exc, UserError):
                self.discard()
        finally:
            self.release()


def finish(directory: str | Path, written: Iterable[Path]) -> None:
    """After the final tables are written: drop tables of earlier runs that this run did not
    write, and the parts (skipped if another run holds the directory's lock)."""
    directory = Path(directory)
    written = {Path(p).name for p in written}
    parts = directory / PARTS
    try:
        fd = _lock(parts / LOCK, directory) if parts.is_dir() else None
    except UserError:
        return
    try:
        for name in table_names():  # every table's name, without importing their modules
            path = directory / f"{name}.parquet"
            if path.name not in written and path.is_file():
                path.unlink()
        _remove_write_temporaries(directory)
        shutil.rmtree(parts, ignore_errors=True)
    finally:
        if fd is not None:
            os.close(fd)


def discard_parts(directory: str | Path) -> None:
    """Remove ``directory/.parts`` (and ``directory`` if that leaves it empty), unless another
    run holds its lock. For a failed run that finished no unit: nothing worth resuming."""
    directory = Path(directory)
    parts = directory / PARTS
    if not parts.is_dir():
        return
    try:
        fd = _lock(parts / LOCK, directory)
    except UserError:
        return
    try:
        shutil.rmtree(parts, ignore_errors=True)
    finally:
        os.close(fd)
    with contextlib.suppress(OSError):
        directory.rmdir()


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------
def _lock(path: Path, directory: Path) -> int:
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, FILE_MODE)
    except OSError as error:
        raise UserError(f"cannot write results to {directory}: {error.strerror}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise UserError(f"another run is writing to {directory} (it holds {path})") from None
    return fd


def _read_json(path: Path):
    with open(path, encoding="utf-8") as stream:
        return json.load(stream)


def _read_manifest(path: Path) -> dict | None:
    try:
        manifest = _read_json(path)
    except (OSError, ValueError):
        return None
    return manifest if isinstance(manifest, dict) else None


def _clear_parts(parts: Path) -> None:
    """Remove everything in ``parts`` but the lock."""
    for entry in parts.iterdir():
        if entry.name == LOCK:
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()


def _remove_part_temporaries(parts: Path) -> None:
    for temp in parts.glob("**/.*.tmp"):
        temp.unlink(missing_ok=True)


def _remove_write_temporaries(directory: Path) -> None:
    for entry in directory.iterdir():
        if entry.is_file() and _WRITE_TEMPORARY.match(entry.name):
            entry.unlink(missing_ok=True)


def _unit_is_complete(parts: Path, key: str) -> bool:
    """The unit's done marker exists and every part it lists is a readable Parquet file with
    the recorded number of rows."""
    try:
        counts = _read_json(parts / DONE / f"{key}.json")["tables"]
        for name, rows in counts.items():
            if pq.read_metadata(parts / name / f"{key}.parquet").num_rows != rows:
                return False
    except (OSError, ValueError, KeyError, TypeError, pa.ArrowException):
        return False
    return True
