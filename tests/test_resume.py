"""Resumable runs (simulator/resume.py): a run interrupted at any point, even by SIGKILL, and
started again computes only the missing units and ends with the tables of an uninterrupted run;
stale or damaged parts are never used; no partial table ever replaces a finished one."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from conftest import SWEEP_EPS, scenario_text, zipf

from shufflesim.simulator.cli import main
from shufflesim.simulator.errors import UserError
from shufflesim.simulator.execution import resume, runner
from shufflesim.simulator.execution.executors import Executor, InlineExecutor
from shufflesim.simulator.execution.resume import (
    DONE,
    PARTS,
    DirectoryParts,
    finish,
    run_fingerprint,
)
from shufflesim.simulator.execution.runner import run_scenario
from shufflesim.simulator.execution.units import plan_run
from shufflesim.simulator.results.tables import run_metadata, write_tables
from shufflesim.simulator.scenario.loader import parse_scenario
from shufflesim.simulator.scenario.producers import PRODUCERS, run_producers

TEXT = scenario_text(name="resumable", seed=21, repetitions=12, n=200, data=zipf(5),
                     sections="""
                     [batch]
                     chunk_repetitions = 3
                     [audit]
                     level = "randomizer"
                     trials = 20000
                     """ + SWEEP_EPS)

CLI_MAIN = "from shufflesim.simulator.cli import main; main()"


def unit_count(scenario) -> int:
    """Units of a run: here two points of four chunks and one audit per point (a run has the
    producers of its sections, producers.run_producers)."""
    state = runner.RunState(scenario, tuple(runner.make_setup(p) for p in scenario.points),
                            run_producers(scenario))
    return len(plan_run(state))


class Interrupted(BaseException):
    """Stands for KeyboardInterrupt (which pytest would take for the user's)."""


class StopAfter(Executor):
    """Runs units in this process and is 'killed' after ``count`` of them finished."""

    def __init__(self, count: int) -> None:
        self.count = count

    def map_unordered(self, function, shared, items):
        for index, item in enumerate(items):
            if index == self.count:
                raise Interrupted
            yield index, function(shared, item)


class Counting(InlineExecutor):
    def __init__(self) -> None:
        self.ran = 0

    def map_unordered(self, function, shared, items):
        for pair in super().map_unordered(function, shared, items):
            self.ran += 1
            yield pair


def comparable(tables):
    return {name: t.drop([c for c in ("seconds",) if c in t.column_names])
            for name, t in tables.items()}


def write_run(scenario, run_dir, executor=None):
    """What ``shufflesim run`` does: run with part files, write the tables, finish."""
    tables = run_scenario(scenario, executor=executor, run_dir=run_dir)
    written = write_tables(run_dir, tables, run_metadata(scenario.text, scenario.seed, "x"))
    finish(run_dir, written)
    return written


def read_run(run_dir):
    return comparable({p.stem: pq.read_table(p).replace_schema_metadata(None)
                       for p in sorted(Path(run_dir).glob("*.parquet"))})


@pytest.fixture(scope="module")
def scenario():
    return parse_scenario(TEXT)


@pytest.fixture(scope="module")
def uninterrupted(scenario):
    return comparable(run_scenario(scenario))


def interrupt(scenario, run_dir, after):
    with pytest.raises(Interrupted):
        run_scenario(scenario, executor=StopAfter(after), run_dir=run_dir)
    return sorted((run_dir / PARTS / DONE).glob("*.json"))


def assert_tables_equal(found, expected):
    assert sorted(found) == sorted(expected)
    for name in expected:
        assert found[name].equals(expected[name]), name


def test_interrupted_run_resumes_only_the_missing_units(tmp_path, scenario, uninterrupted):
    run_dir = tmp_path / "resumable"
    markers = interrupt(scenario, run_dir, after=4)
    assert len(markers) == 4
    assert not list(run_dir.glob("*.parquet"))  # no final table yet
    counting = Counting()
    written = write_run(scenario, run_dir, counting)
    assert counting.ran == unit_count(scenario) - 4
    assert_tables_equal(read_run(run_dir), uninterrupted)
    assert sorted(os.listdir(run_dir)) == ["audit.parquet", "utility.parquet"]  # parts removed
    for path in written:
        assert stat.S_IMODE(path.stat().st_mode) == 0o644


def test_interruptions_at_every_unit_end_with_the_same_tables(tmp_path, scenario,
                                                              uninterrupted):
    """Stop after 1 unit, then after 2 more, ... until done (resumed runs can be resumed)."""
    run_dir = tmp_path / "resumable"
    done = 0
    while True:
        try:
            run_scenario(scenario, executor=StopAfter(3), run_dir=run_dir)
        except Interrupted:
            markers = len(list((run_dir / PARTS / DONE).glob("*.json")))
            assert markers == done + 3
            done = markers
            continue
        break
    counting = Counting()
    write_run(scenario, run_dir, counting)
    assert counting.ran == 0
    assert_tables_equal(read_run(run_dir), uninterrupted)


def test_a_changed_scenario_does_not_reuse_parts(tmp_path, scenario):
    run_dir = tmp_path / "resumable"
    interrupt(scenario, run_dir, after=5)
    other = scenario.with_seed(22)
    counting = Counting()
    write_run(other, run_dir, counting)
    assert counting.ran == unit_count(scenario)
    assert_tables_equal(read_run(run_dir), comparable(run_scenario(other)))
    units = plan_run(runner.RunState(scenario, tuple(runner.make_setup(p) for p in
                                                     scenario.points), ()))
    assert run_fingerprint(scenario, units, "a") != run_fingerprint(other, units, "a")
    assert run_fingerprint(scenario, units, "a") != run_fingerprint(scenario, units, "b")
    assert run_fingerprint(scenario, units, "a") != run_fingerprint(scenario, units[1:], "a")


def test_damaged_parts_and_leftover_temporaries_are_not_used(tmp_path, scenario,
                                                             uninterrupted):
    run_dir = tmp_path / "resumable"
    markers = interrupt(scenario, run_dir, after=6)
    parts = run_dir / PARTS
    # a part file lost, a marker cut short, a part with the wrong row count
    key0, key1, key2 = (m.stem for m in markers[:3])
    (parts / "utility" / f"{key0}.parquet").unlink()
    (parts / DONE / f"{key1}.json").write_text('{"key": ')
    marker = json.loads((parts / DONE / f"{key2}.json").read_text())
    marker["tables"]["utility"] += 1
    (parts / DONE / f"{key2}.json").write_text(json.dumps(marker))
    # what a killed writer leaves: temporaries of parts and of final tables
    (parts / "utility" / f".{key0}.parquet.abc.tmp").write_bytes(b"PAR1 partial")
    (run_dir / ".utility.xyz.tmp").write_bytes(b"partial")
    counting = Counting()
    write_run(scenario, run_dir, counting)
    assert counting.ran == unit_count(scenario) - 6 + 3
    assert_tables_equal(read_run(run_dir), uninterrupted)
    assert sorted(os.listdir(run_dir)) == ["audit.parquet", "utility.parquet"]


def test_a_writer_killed_mid_file_leaves_no_part(tmp_path, scenario, monkeypatch):
    run_dir = tmp_path / "resumable"
    real = pq.write_table

    def half_then_die(table, where, *args, **kwargs):
        Path(where).write_bytes(b"PAR1")  # a torn file at the temporary path
        raise Interrupted

    monkeypatch.setattr(resume.pq, "write_table", half_then_die)
    with pytest.raises(Interrupted):
        run_scenario(scenario, run_dir=run_dir)
    monkeypatch.setattr(resume.pq, "write_table", real)
    parts = run_dir / PARTS
    assert not list(parts.glob("utility/*")) and not list((parts / DONE).iterdir())


def test_a_failed_final_write_keeps_finished_tables_and_the_parts(tmp_path, scenario,
                                                                  uninterrupted, monkeypatch):
    run_dir = tmp_path / "resumable"
    write_run(scenario.with_seed(5), run_dir)  # an earlier finished run
    before = read_run(run_dir)
    import shufflesim.simulator.results.tables as results

    calls = []

    def replace_then_fail(src, dst):
        calls.append(dst)
        if len(calls) == 2:
            raise OSError(28, "No space left on device", str(dst))
        os.rename(src, dst)

    tables = run_scenario(scenario, run_dir=run_dir)
    monkeypatch.setattr(results.os, "replace", replace_then_fail)  # (os.replace everywhere)
    with pytest.raises(UserError, match="No space left"):
        write_tables(run_dir, tables, run_metadata(scenario.text, scenario.seed, "x"))
    monkeypatch.undo()
    # Each table in place is a complete one (the new utility table or the old audit table).
    now = read_run(run_dir)
    assert now["utility"].equals(uninterrupted["utility"])
    assert now["audit"].equals(before["audit"])
    assert (run_dir / PARTS).is_dir()
    counting = Counting()
    write_run(scenario, run_dir, counting)
    assert counting.ran == 0
    assert_tables_equal(read_run(run_dir), uninterrupted)


def test_finish_removes_tables_of_an_earlier_run(tmp_path, scenario):
    run_dir = tmp_path / "resumable"
    run_dir.mkdir()
    pq.write_table(pa.table({"x": [1]}), run_dir / "batches.parquet")
    (run_dir / "notes.txt").write_text("mine")
    write_run(scenario, run_dir)
    assert sorted(os.listdir(run_dir)) == ["audit.parquet", "notes.txt", "utility.parquet"]


def test_one_run_at_a_time_per_directory(tmp_path, scenario):
    units = plan_run(runner.RunState(scenario, tuple(runner.make_setup(p) for p in
                                                     scenario.points), ()))
    first = DirectoryParts.open(tmp_path / "r", "f", units)
    try:
        with pytest.raises(UserError, match="another run is writing"):
            DirectoryParts.open(tmp_path / "r", "f", units)
    finally:
        first.release()
    DirectoryParts.open(tmp_path / "r", "f", units).release()


def test_a_user_error_discards_the_parts_and_new_directories(tmp_path, scenario, monkeypatch):
    from shufflesim.simulator.scenario.producers import ProducerSpec

    def bad(scenario, progress=None):
        raise UserError("bad value found while running")

    monkeypatch.setitem(PRODUCERS._items, "bad", ProducerSpec("bad", bad, False))
    with pytest.raises(UserError, match="bad value"):
        run_scenario(scenario, run_dir=tmp_path / "new" / "resumable")
    assert not (tmp_path / "new").exists()


def _cli(*args):
    return [sys.executable, "-c", CLI_MAIN, *map(str, args)]


SLOW_TEXT = TEXT.replace("n = 200", "n = 200000").replace("repetitions = 12",
                                                         "repetitions = 16").replace(
    "chunk_repetitions = 3", "chunk_repetitions = 1")


def test_sigkill_mid_run_then_restart_gives_the_uninterrupted_tables(tmp_path):
    """A real process is killed with SIGKILL once a few units are on disk; the restarted run
    computes only the missing units and writes the tables of an uninterrupted run."""
    path = tmp_path / "resumable.toml"
    path.write_text(SLOW_TEXT)
    out = tmp_path / "out"
    done_dir = out / "resumable" / PARTS / DONE
    log = tmp_path / "killed.log"
    with open(log, "wb") as stream:
        process = subprocess.Popen(_cli("run", path, "--out", out, "--workers", "1", "-q"),
                                   stdout=stream, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 240
            while time.monotonic() < deadline and process.poll() is None:
                if done_dir.is_dir() and len(list(done_dir.glob("*.json"))) >= 3:
                    break
                time.sleep(0.01)
            assert process.poll() is None, log.read_text()
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=60)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    assert process.returncode == -signal.SIGKILL
    finished = len(list(done_dir.glob("*.json")))
    total = unit_count(parse_scenario(SLOW_TEXT))
    assert 3 <= finished < total
    assert not list((out / "resumable").glob("*.parquet"))
    counting = Counting()
    original = runner.run_scenario

    def counted(scenario, progress=None, *, executor=None, run_dir=None, **options):
        return original(scenario, progress, executor=counting, run_dir=run_dir, **options)

    monkey = pytest.MonkeyPatch()
    monkey.setattr(runner, "run_scenario", counted)
    try:
        result = CliRunner().invoke(main, ["run", str(path), "--out", str(out), "-q"])
    finally:
        monkey.undo()
    assert result.exit_code == 0, result.output
    assert counting.ran == total - finished
    expected = comparable(run_scenario(parse_scenario(SLOW_TEXT)))
    assert_tables_equal(read_run(out / "resumable"), expected)
    assert not (out / "resumable" / PARTS).exists()
