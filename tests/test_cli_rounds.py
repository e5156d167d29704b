"""``bound --rounds T`` and ``calibrate --rounds T``: lifetime bounds on the command line."""

from __future__ import annotations

import json

from click.testing import CliRunner

from shufflesim.protocols.accounting.compose import Round, compose_rounds
from shufflesim.protocols.randomizers import make_randomizer
from shufflesim.simulator.cli import main

KRR = ["--randomizer", "krr", "--domain-size", "3", "--epsilon0", "1", "--n", "1000",
       "--delta", "1e-6", "--quiet", "--json"]


def _records(*args) -> dict:
    result = CliRunner().invoke(main, ["bound", *KRR, *args])
    assert result.exit_code == 0, result.output
    return {r["method"]: r for r in json.loads(result.stdout)}


def test_rounds_compose_and_every_other_bound_says_why_not():
    one = _records("--method", "optimal-blanket", "--method", "exact-lower")
    assert {r["rounds"] for r in one.values()} == {1}
    ten = _records("--rounds", "10")
    assert {r["rounds"] for r in ten.values()} == {10}
    upper, lower = ten["optimal-blanket"]["epsilon"], ten["exact-lower"]["epsilon"]
    assert lower <= upper <= 10 * one["optimal-blanket"]["epsilon"]
    assert upper > one["optimal-blanket"]["epsilon"]  # more rounds, more loss
    assert ten["basic"]["epsilon"] >= upper and ten["advanced"]["epsilon"] >= upper
    not_composed = [r for r in ten.values() if r["epsilon"] is None]
    assert not_composed and all(r["error"].startswith("does not compose over rounds")
                                for r in not_composed)
    assert "blanket_hoeffding" in {r["method"] for r in not_composed}
    assert not any(r["below_proven_lower"] for r in ten.values())


def test_a_catalogue_bound_that_composes_is_reported_as_its_composed_method():
    records = _records("--rounds", "5", "--method", "fmt21_numerical")
    r = compose_rounds([Round(make_randomizer("krr", epsilon0=1.0, domain_size=3), 1000, 5)],
                       1e-6, "fmt21-clone")
    assert records["fmt21_numerical"]["epsilon"] == r.epsilon


def test_calibrate_over_rounds_returns_a_certified_per_round_budget():
    result = CliRunner().invoke(main, [
        "calibrate", "--randomizer", "krr", "--domain-size", "3", "--target-epsilon", "1",
        "--delta", "1e-6", "--n", "1000", "--rounds", "10", "--method", "optimal-blanket",
        "--quiet", "--json"])
    assert result.exit_code == 0, result.output
    (record,) = json.loads(result.stdout)
    assert record["rounds"] == 10 and record["epsilon"] <= 1.0
    check = compose_rounds([Round(make_randomizer("krr", epsilon0=record["value"],
                                                  domain_size=3), 1000, 10)], 1e-6,
                           "optimal-blanket")
    assert check.epsilon <= 1.0
