"""``shufflesim audit`` and the ``[audit]`` scenario section (audit.parquet)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from conftest import constant_budget, scenario_text, uniform

from shufflesim.protocols.errors import ParameterError
from shufflesim.protocols.randomizers import make_randomizer
from shufflesim.simulator.audit.implementation import Claim
from shufflesim.simulator.audit.run import AuditSettings, Level, audit_implementation
from shufflesim.simulator.audit.tables import AUDIT_SCHEMA
from shufflesim.simulator.cli import main
from shufflesim.simulator.errors import ScenarioError
from shufflesim.simulator.execution.runner import run_scenario
from shufflesim.simulator.results.tables import read_metadata
from shufflesim.simulator.scenario.loader import load_scenario, parse_scenario

ROOT = Path(__file__).resolve().parents[1]
BASE = ["audit", "--randomizer", "krr", "--domain-size", "2", "--epsilon0", "2"]

SCENARIO = scenario_text(
    name="audit-small", repetitions=None, n=40, data=uniform(3), budget=constant_budget(2.0),
    sections="""
    [audit]
    trials = 4000
    delta = 1e-3
    bounds = ["optimal-blanket", "fmt21_numerical"]
    [sweep]
    "population.n" = [20, 40]
    """)


def _invoke(args):
    return CliRunner().invoke(main, args, catch_exceptions=False)


def test_audit_json_records():
    result = _invoke(BASE + ["--n", "50", "--delta", "1e-3", "--trials", "20000",
                             "--bound", "optimal-blanket", "--json"])
    assert result.exit_code == 0, result.output
    records = json.loads(result.output)
    attacks = [r for r in records if r["row_type"] == "attack"]
    verdicts = {r["bound"]: r for r in records if r["row_type"] == "verdict"}
    assert {r["direction"] for r in attacks} == {"X0 vs X1", "X1 vs X0"}
    for r in attacks:
        assert 0 <= r["epsilon_lb"] <= r["exact_lower"]
        assert r["trials"] == 18000 and r["selection_trials"] == 2000
    assert set(verdicts) == {"optimal-blanket", "exact-lower"}
    assert verdicts["optimal-blanket"]["verdict"] == "consistent"


def test_audit_text_and_randomizer_level():
    result = _invoke(BASE + ["--n", "30", "--delta", "1e-3", "--trials", "5000", "--bound",
                             "optimal-blanket"])
    assert result.exit_code == 0, result.output
    assert "eps_lb" in result.output and "consistent" in result.output
    result = _invoke(BASE + ["--level", "randomizer", "--trials", "20000"])
    assert result.exit_code == 0, result.output
    assert "declared-eps0" in result.output and "chi-square" in result.output


@pytest.mark.parametrize("extra, needle", [
    (["--n", "30", "--delta", "2", "--trials", "100"], "delta"),
    (["--n", "30", "--trials", "100"], "delta"),
    (["--n", "30", "--delta", "1e-3", "--trials", "1"], "trials"),
    (["--n", "30", "--delta", "1e-3", "--trials", "100", "--no-permute"], "permute"),
    (["--n", "30", "--delta", "1e-3", "--trials", "100", "--x0", "1.5"], "--x0 = 1.5"),
    (["--n", "30", "--delta", "1e-3", "--trials", "100", "--attack", "order"],
     "--attack = 'order'"),
    (["--n", "30", "--delta", "1e-3", "--trials", "100", "--bound", "nope"], "nope"),
    (["--delta", "1e-3", "--trials", "100"], "--n is required at the shuffle level"),
])
def test_bad_options_are_one_line_errors(extra, needle):
    result = CliRunner().invoke(main, BASE + extra)
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and needle in lines[0], lines


def test_scenario_section_parses_and_validates(tmp_path):
    scenario = parse_scenario(SCENARIO)
    settings = scenario.points[0].settings.sections["audit"]
    assert isinstance(settings, AuditSettings)
    assert settings.level is Level.SHUFFLE and settings.delta == (1e-3,)
    for bad, key in [("trails = 3", "audit.trails"), ("level = \"world\"", "audit.level"),
                     ("confidence = 2.0", "audit.confidence"),
                     ("attacks = [\"order\"]", "audit.attacks")]:
        text = SCENARIO.replace("[audit]\n", f"[audit]\n{bad}\n")
        with pytest.raises(ScenarioError) as info:
            parse_scenario(text)
        assert info.value.key.startswith(key), (bad, info.value.key)


def test_scenario_run_writes_audit_parquet(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(SCENARIO)
    result = _invoke(["run", str(path), "--out", str(tmp_path / "out"), "-q", "--workers", "1"])
    assert result.exit_code == 0, result.output
    written = tmp_path / "out" / "audit-small" / "audit.parquet"
    table = pq.read_table(written)
    assert table.schema.equals(AUDIT_SCHEMA, check_metadata=False)
    assert read_metadata(written)["table"] == "audit"
    frame = table.to_pandas()
    assert sorted(frame.point.unique()) == [0, 1]
    assert set(frame.row_type) == {"attack", "verdict"}
    verdicts = frame[frame.row_type == "verdict"]
    assert (verdicts[verdicts.bound == "optimal-blanket"].verdict == "consistent").all()
    # Same seed, same rows.
    again = run_scenario(load_scenario(path))["audit"].to_pandas()
    cols = ["point", "attack", "direction", "event", "count0", "count1", "epsilon_lb"]
    attacks = frame[frame.row_type == "attack"][cols].reset_index(drop=True)
    assert attacks.equals(again[again.row_type == "attack"][cols].reset_index(drop=True))


@pytest.mark.slow
def test_audit_rows_do_not_depend_on_the_number_of_workers(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(SCENARIO)
    tables = []
    for workers in ("1", "2"):
        result = _invoke(["run", str(path), "--out", str(tmp_path / workers), "-q",
                          "--workers", workers])
        assert result.exit_code == 0, result.output
        tables.append(pq.read_table(tmp_path / workers / "audit-small" / "audit.parquet"))
    drop = ["seconds"]
    assert tables[0].drop(drop).equals(tables[1].drop(drop))


def test_shipped_audit_scenario_loads():
    scenario = load_scenario(ROOT / "scenarios" / "audit_krr.toml")
    assert len(scenario.points) == 18
    assert all("audit" in p.settings.sections for p in scenario.points)


def test_others_option_and_unsupported_randomizer():
    result = _invoke(["audit", "--randomizer", "krr", "--domain-size", "3", "--epsilon0", "2",
                      "--n", "20", "--delta", "1e-2", "--trials", "4000", "--others",
                      "0.2,0.3,0.5", "--no-verdicts", "--json"])
    assert result.exit_code == 0, result.output
    assert all("others ~" in r["pair"] for r in json.loads(result.output))
    result = CliRunner().invoke(main, ["audit", "--randomizer", "laplace_binary", "--epsilon0",
                                       "1", "--n", "10", "--delta", "1e-3", "--trials", "100"])
    assert result.exit_code == 2 and "continuous" in result.output


GAUSSIAN = ["audit", "--randomizer", "gaussian", "--epsilon0", "1", "--delta0", "1e-6"]


def _gaussian_client(values, rng):
    """A user's Gaussian client, calibrated like the registered one (claims gaussian)."""
    sigma = make_randomizer("gaussian", epsilon0=1.0, delta0=1e-6).sigma
    return values + sigma * rng.standard_normal(np.shape(values))


def test_gaussian_audit_from_the_command_line():
    """--delta0 names the gaussian's delta0: the randomizer level gives its (eps0, delta0)
    verdict; the shuffle level refuses in one line naming why."""
    result = _invoke(GAUSSIAN + ["--level", "randomizer", "--trials", "20000", "--json"])
    assert result.exit_code == 0, result.output
    records = json.loads(result.output)
    verdicts = {r["bound"]: r for r in records if r["row_type"] == "verdict"}
    assert verdicts["declared-eps0-delta0"]["verdict"] == "consistent"
    assert verdicts["declared-eps0-delta0"]["delta"] == 1e-6
    result = CliRunner().invoke(main, GAUSSIAN + ["--n", "100", "--delta", "1e-6",
                                                  "--trials", "1000"])
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code == 2 and len(lines) == 1, lines
    assert "(eps0, delta0)-LDP" in lines[0] and "randomizer level" in lines[0]
    result = CliRunner().invoke(main, ["audit", "--randomizer", "krr", "--domain-size", "3",
                                       "--epsilon0", "1", "--delta0", "1e-6", "--level",
                                       "randomizer", "--trials", "1000"])
    assert result.exit_code == 2 and "pure eps0-LDP" in result.output


def test_implementation_claiming_the_gaussian_is_audited_at_its_delta0():
    """A user's client claiming gaussian(eps0 = 1, delta0 = 1e-6): the claim's delta0 is the
    randomizer's; the verdict names (eps0, delta0); a client with half the sigma is caught."""
    declared = make_randomizer("gaussian", epsilon0=1.0, delta0=1e-6)
    claim = Claim(declared)
    assert claim.delta0 == 1e-6
    with pytest.raises(ParameterError) as info:
        Claim(declared, delta0=1e-3)
    assert "delta0" in str(info.value)

    def half(values, rng):
        return values + 0.5 * declared.sigma * rng.standard_normal(np.shape(values))

    rows = audit_implementation(_gaussian_client, claim, trials=200_000, seed=1)
    ldp = next(r for r in rows if r["bound"] == "implementation-ldp")
    assert ldp["verdict"] == "consistent" and ldp["delta"] == 1e-6
    rows = audit_implementation(half, claim, trials=200_000, seed=1)
    ldp = next(r for r in rows if r["bound"] == "implementation-ldp")
    assert ldp["verdict"] == "violated" and "not (1, 1e-06)-LDP" in ldp["reason"], ldp["reason"]


def _krr_13(values, rng):
    """k-RR over 4 values sampling with 1.3 x the claimed eps0 = 2 (planted fault)."""
    k, eps = 4, 2.6
    keep = rng.random(np.shape(values)) < np.exp(eps) / (np.exp(eps) + k - 1)
    other = (values + rng.integers(1, k, np.shape(values))) % k
    return np.where(keep, values, other)


def test_randomizer_level_runs_the_registered_search_and_approximate_attacks(tmp_path):
    """--attack search / approximate at the randomizer level add their rows and verdicts
    (implementation-ldp-search, implementation-approximate-ldp); Python and the CLI agree."""
    claim = Claim.registered("krr", epsilon0=2.0, domain_size=4)
    rows = audit_implementation(_krr_13, claim, trials=40_000, seed=2,
                                attacks=("search", "approximate"))
    verdicts = {r["bound"]: r for r in rows if r["row_type"] == "verdict"}
    assert verdicts["implementation-ldp-search"]["verdict"] == "violated"
    assert verdicts["implementation-approximate-ldp"]["verdict"] == "violated"
    assert any(r["attack"].startswith("search:") for r in rows if r["row_type"] == "attack")
    (tmp_path / "client.py").write_text(
        "import numpy as np\n\n\ndef krr_13(values, rng):\n"
        "    k, eps = 4, 2.6\n"
        "    keep = rng.random(np.shape(values)) < np.exp(eps) / (np.exp(eps) + k - 1)\n"
        "    other = (values + rng.integers(1, k, np.shape(values))) % k\n"
        "    return np.where(keep, values, other)\n")
    spec = f"{tmp_path / 'client.py'}:krr_13"
    python = audit_implementation(spec, claim, trials=20_000, seed=2, attacks=("search",))
    result = _invoke(["audit", "--implementation", spec, "--randomizer", "krr", "--domain-size",
                      "4", "--epsilon0", "2", "--level", "randomizer", "--trials", "20000",
                      "--attack", "search", "--seed", "2", "--json", "-q"])
    assert result.exit_code == 0, result.output

    def comparable(records):
        return [{k: v for k, v in r.items() if k != "seconds" and v is not None}
                for r in records]

    assert comparable(python) == comparable(json.loads(result.output))
