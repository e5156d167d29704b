"""Memory plans (simulator/memory.py, simulator/commands/run.py): a run that cannot fit is
refused before it starts, with one line naming the key and a remedy that works; following the
remedy runs; running out of memory inside a unit is one line that says what was kept."""

from __future__ import annotations

import re

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import shufflesim.simulator.batch.machine as machine
from shufflesim.simulator.cli import main
from shufflesim.simulator.execution import units
from shufflesim.simulator.execution.resume import DONE, PARTS

SCENARIO = """
name = "{name}"
seed = 1
repetitions = {reps}
[population]
n = {n}
data = {data}
budget = {{ distribution = "constant", epsilon0 = 1.0 }}
[randomizer]
name = "{randomizer}"
[estimator]
name = "{estimator}"
{batch}
"""
ZIPF = '{ distribution = "zipf", domain_size = 10, exponent = 0.7 }'
UNIFORM = '{ distribution = "continuous_uniform", low = 0.0, high = 1.0 }'


def write(tmp_path, name="big", n=10**12, reps=2, data=ZIPF, randomizer="krr",
          estimator="frequency", batch=""):
    path = tmp_path / f"{name}.toml"
    path.write_text(SCENARIO.format(name=name, n=n, reps=reps, data=data, randomizer=randomizer,
                                    estimator=estimator, batch=batch))
    return path


def run(path, out, *options):
    return CliRunner().invoke(main, ["run", str(path), "--out", str(out), "-q", *options])


def one_line_error(result, *fragments):
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    assert "Traceback" not in result.output
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def nothing_left(out):
    assert not out.exists() or not list(out.rglob("*")), list(out.rglob("*"))


@pytest.mark.parametrize("batch", ['shuffle = "skip"', 'shuffle = "perform"', ""])
def test_a_trillion_users_on_the_reports_path_is_refused_with_the_aggregate_remedy(tmp_path,
                                                                                  batch):
    """n = 10^12: before, `shuffle = "skip"` (the old advice) crashed allocating 7.28 TiB."""
    out = tmp_path / "out"
    line = one_line_error(run(write(tmp_path, batch=f"[batch]\n{batch}"), out, "--workers", "2"),
                          "batch.path = 'reports'", "population.n = 1000000000000",
                          'set batch.path = "aggregate"')
    assert "TiB" in line
    nothing_left(out)
    # Following the advice works, end to end.
    fixed = write(tmp_path, batch='[batch]\npath = "aggregate"')
    result = run(fixed, out, "--workers", "2")
    assert result.exit_code == 0, result.output
    assert pq.read_table(out / "big" / "utility.parquet").num_rows == 2 * 8
    assert not (out / "big" / PARTS).exists()


def test_numeric_data_without_an_aggregate_sampler_get_a_smaller_n(tmp_path):
    out = tmp_path / "out"
    line = one_line_error(
        run(write(tmp_path, data=UNIFORM, randomizer="laplace", estimator="mean",
                  batch='[batch]\nshuffle = "skip"'), out),
        "batch.path = 'reports'", 'even with batch.shuffle = "skip"', "lower population.n")
    nothing_left(out)
    users = int(re.search(r"at most (\d+)", line).group(1))
    # (checked at the setup: running 1.6e7 users is left to the slow test below)
    from shufflesim.simulator.batch.run import BatchSetup
    from shufflesim.simulator.scenario.loader import parse_scenario

    text = write(tmp_path, name="fixed", n=users, data=UNIFORM, randomizer="laplace",
                 estimator="mean", batch='[batch]\nshuffle = "skip"').read_text()
    BatchSetup.from_settings(parse_scenario(text).points[0].settings)


def test_a_feasible_memory_budget_is_suggested_and_works(tmp_path, monkeypatch):
    """2e6 numeric users in 16 MiB: the data alone (about 31 MiB) do not fit; the suggested
    memory_mb (and shuffle = "skip") runs."""
    monkeypatch.setattr(machine, "machine_bytes", lambda: 8 * 2**30)
    out = tmp_path / "out"
    kwargs = dict(n=2_000_000, reps=1, data=UNIFORM, randomizer="laplace", estimator="mean")
    line = one_line_error(run(write(tmp_path, batch="[batch]\nmemory_mb = 16", **kwargs), out),
                          "batch.path = 'reports'", "raise batch.memory_mb to at least",
                          'and set batch.shuffle = "skip"')
    nothing_left(out)
    mb = int(re.search(r"at least (\d+)", line).group(1))
    fixed = write(tmp_path, batch=f'[batch]\nmemory_mb = {mb}\nshuffle = "skip"', **kwargs)
    result = run(fixed, out)
    assert result.exit_code == 0, result.output
    assert (out / "big" / "utility.parquet").is_file()


def test_perform_advice_only_offers_a_budget_this_machine_has(tmp_path, monkeypatch):
    path = write(tmp_path, n=600_000, reps=1, batch="[batch]\nmemory_mb = 16")
    monkeypatch.setattr(machine, "machine_bytes", lambda: 8 * 2**30)
    one_line_error(run(path, tmp_path / "out"), "batch.shuffle = 'perform'",
                   "raise batch.memory_mb to at least", 'set batch.shuffle = "skip"')
    monkeypatch.setattr(machine, "machine_bytes", lambda: 20 * 2**20)
    line = one_line_error(run(path, tmp_path / "out"), 'set batch.shuffle = "skip"')
    assert "raise batch.memory_mb" not in line
    result = run(write(tmp_path, n=600_000, reps=1,
                       batch='[batch]\nmemory_mb = 16\nshuffle = "skip"'), tmp_path / "out")
    assert result.exit_code == 0, result.output


def test_a_unit_larger_than_the_machine_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(machine, "machine_bytes", lambda: 2 * 2**30)
    out = tmp_path / "out"
    path = write(tmp_path, n=200_000_000, reps=1, batch="[batch]\nmemory_mb = 100000")
    line = one_line_error(run(path, out), "batch.memory_mb = 100000",
                          "more than this machine's memory", "lower batch.memory_mb to at most")
    nothing_left(out)
    mb = int(re.search(r"at most (\d+)", line).group(1))
    # Following it leads to a remedy that works (no crash on the way).
    lowered = write(tmp_path, n=200_000_000, reps=1, batch=f"[batch]\nmemory_mb = {mb}")
    one_line_error(run(lowered, out), 'set batch.path = "aggregate"')
    nothing_left(out)


def test_a_huge_domain_is_refused_before_its_arrays_are_allocated(tmp_path):
    data = '{ distribution = "uniform", domain_size = 1000000000 }'
    for batch in ("", '[batch]\npath = "aggregate"'):
        one_line_error(run(write(tmp_path, n=1000, data=data, batch=batch), tmp_path / "out"),
                       "batch.memory_mb = 512", "domain of 1000000000 values")
    nothing_left(tmp_path / "out")


SMALL = dict(n=300, reps=6, batch="[batch]\nchunk_repetitions = 1")


def test_memory_error_in_a_unit_keeps_parts_and_says_how_to_resume(tmp_path, monkeypatch):
    out = tmp_path / "out"
    path = write(tmp_path, name="small", **SMALL)
    real = units._simulate

    def third_fails(state, unit):
        if unit.chunk == 2:
            raise MemoryError("Unable to allocate 7.28 TiB for an array")
        return real(state, unit)

    monkeypatch.setattr(units, "_simulate", third_fails)
    line = one_line_error(run(path, out, "--workers", "1"),
                          "out of memory in unit sim-p000000-c000002", "7.28 TiB", "--workers 1",
                          "2 finished units are kept in",
                          "the same command resumes", "delete that directory to discard them")
    assert str(out / "small" / PARTS) in line
    assert not list((out / "small").glob("*.parquet"))
    assert len(list((out / "small" / PARTS / DONE).glob("*.json"))) == 2
    monkeypatch.undo()
    assert run(path, out, "--workers", "1").exit_code == 0
    assert not (out / "small" / PARTS).exists()
    expected = tmp_path / "expected"
    assert run(path, expected, "--workers", "1").exit_code == 0
    assert pq.read_table(out / "small" / "utility.parquet").equals(
        pq.read_table(expected / "small" / "utility.parquet"))


def test_memory_error_in_the_first_unit_leaves_nothing(tmp_path, monkeypatch):
    out = tmp_path / "out"

    def fails(state, unit):
        raise MemoryError()

    monkeypatch.setattr(units, "_simulate", fails)
    line = one_line_error(run(write(tmp_path, name="small", **SMALL), out, "--workers", "1"),
                          "out of memory in unit sim-p000000-c000000")
    assert "kept" not in line
    nothing_left(out)
