"""``shufflesim run`` and ``shufflesim list`` through click's CliRunner and one real process."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from conftest import SWEEP_EPS, scenario_text, zipf

from shufflesim.simulator.cli import main
from shufflesim.simulator.results.tables import UTILITY_SCHEMA, read_metadata

ROOT = Path(__file__).resolve().parents[1]

SMALL = scenario_text(name="small", seed=7, repetitions=6, n=300, data=zipf(5),
                      sections=SWEEP_EPS)

CLI_MAIN = "from shufflesim.simulator.cli import main; main()"


@pytest.fixture
def small(tmp_path):
    path = tmp_path / "small.toml"
    path.write_text(SMALL)
    return path


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def test_run_writes_the_utility_table(small, tmp_path):
    out = tmp_path / "res"
    result = invoke("run", small, "--out", out)
    assert result.exit_code == 0, result.output
    path = out / "small" / "utility.parquet"
    assert f"wrote {path} (96 rows)" in result.output
    table = pq.read_table(path)
    assert table.schema.equals(UTILITY_SCHEMA, check_metadata=False)
    assert table.num_rows == 2 * 6 * 8
    meta = read_metadata(path)
    assert meta["scenario"] == SMALL and meta["seed"] == "7" and meta["table"] == "utility"
    assert sorted(os.listdir(out / "small")) == ["utility.parquet"]


def test_same_seed_same_rows_and_seed_override(small, tmp_path):
    for name in ("a", "b", "c"):
        seed = ["--seed", "99"] if name == "c" else []
        assert invoke("run", small, "--out", tmp_path / name, *seed, "-q").exit_code == 0
    a, b, c = (pq.read_table(tmp_path / n / "small" / "utility.parquet") for n in "abc")
    assert a.equals(b)
    assert not a.column("value").equals(c.column("value"))
    assert read_metadata(tmp_path / "c" / "small" / "utility.parquet")["seed"] == "99"


def test_default_output_directory_is_results(small, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert invoke("run", small, "-q").exit_code == 0
    assert (tmp_path / "results" / "small" / "utility.parquet").is_file()


def _one_line_error(result, *fragments):
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    assert lines[0].startswith("error: ")
    assert "Traceback" not in result.output
    for fragment in fragments:
        assert fragment in lines[0]


def test_missing_scenario_is_one_line_naming_the_path(tmp_path):
    missing = tmp_path / "nope.toml"
    result = invoke("run", missing, "--out", tmp_path / "res")
    _one_line_error(result, "scenario file not found", str(missing))
    assert not (tmp_path / "res").exists()


@pytest.mark.parametrize("bad, fragments", [
    (SMALL.replace("exponent = 0.7", "exponent = -0.7"), ["population.data.exponent", "-0.7"]),
    (SMALL.replace("n = 300", "m = 300"), ["population.m", "did you mean 'n'"]),
    (SMALL.replace("[0.5, 2.0]", "[0.5, 0.0]"), ["population.budget.epsilon0", "0.0"]),
    (SMALL.replace("repetitions = 6", "repetitions = [6]"), ["repetitions"]),
    ("name = [", ["invalid TOML"]),
])
def test_invalid_scenarios_fail_cleanly_without_output(tmp_path, bad, fragments):
    path = tmp_path / "bad.toml"
    path.write_text(bad)
    result = invoke("run", path, "--out", tmp_path / "res")
    _one_line_error(result, *fragments)
    assert not (tmp_path / "res").exists()


def test_failure_during_the_run_leaves_no_directory(small, tmp_path, monkeypatch):
    def explode(*args, **kwargs):
        raise OSError(13, "Permission denied", str(tmp_path / "res"))

    monkeypatch.setattr("shufflesim.simulator.execution.runner.run_scenario",
                        lambda *a, **k: explode())
    result = CliRunner().invoke(main, ["run", str(small), "--out", str(tmp_path / "res")])
    assert result.exit_code != 0
    assert not (tmp_path / "res").exists()


def test_unwritable_output_is_a_one_line_error(small, tmp_path):
    blocker = tmp_path / "blocker"
    blocker.write_text("")
    result = invoke("run", small, "--out", blocker / "sub")
    _one_line_error(result, "cannot create results directory")


def test_list_plain_and_json():
    plain = invoke("list")
    assert plain.exit_code == 0
    for word in ("randomizers", "krr", "oue", "estimators:", "frequency", "zipf",
                 "clipped_normal", "budget distributions:", "constant", "bounds",
                 "optimal-blanket", "regime:", "audit levels:", "audit attacks:", "order",
                 "hash_range=None", "domain_size (required)"):
        assert word in plain.output
    data = json.loads(invoke("list", "--json").output)
    assert [p["name"] for p in data["randomizers"]["krr"]["parameters"]] == [
        "epsilon0", "domain_size"]
    olh = {p["name"]: p for p in data["randomizers"]["olh"]["parameters"]}
    assert olh["domain_size"]["required"] and olh["hash_range"] == {
        "name": "hash_range", "required": False, "default": None}
    from shufflesim.protocols.bounds.catalogue import bound_names
    assert set(data["bounds"]) == set(bound_names())
    exact = data["bounds"]["exact-lower"]
    assert exact["kind"] == "lower" and exact["status"] == "proven" and exact["regime"]
    from shufflesim.simulator.audit.levels import ATTACKS, LEVELS
    assert list(data["audit"]["levels"]) == list(LEVELS)  # every level, declared order
    assert {"randomizer", "shuffle", "pipeline"} <= set(data["audit"]["levels"])
    assert list(data["audit"]["attacks"]) == list(ATTACKS)  # every attack, declared order
    assert data["randomizers"]["krr"]["aggregate_sampler"] is True
    assert {"frequency", "mean", "sum"} <= set(data["estimators"])
    zipf = {p["name"]: p for p in data["data_distributions"]["zipf"]}
    assert zipf["exponent"]["required"] is True
    assert data["budget_distributions"]["constant"][0]["name"] == "epsilon0"


def test_real_process_fails_with_one_line_and_exit_code_2(tmp_path):
    """One real process: stderr holds exactly one line, stdout nothing, exit code 2."""
    command = [sys.executable, "-c", CLI_MAIN]
    missing = tmp_path / "absent.toml"
    failed = subprocess.run(command + ["run", str(missing), "--out", str(tmp_path / "r")],
                            capture_output=True, text=True, timeout=120, check=False)
    assert failed.returncode == 2
    assert failed.stderr.strip().splitlines() == [f"error: scenario file not found: {missing}"]
    assert failed.stdout == ""
    assert not (tmp_path / "r").exists()
