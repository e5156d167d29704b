"""End-to-end tests of ``shufflesim bound`` and ``shufflesim calibrate``."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from shufflesim.protocols.bounds.catalogue import bound_names
from shufflesim.simulator.cli import main

KRR = ["--randomizer", "krr", "--domain-size", "10"]


def run(*args):
    return CliRunner().invoke(main, list(args))


@pytest.mark.parametrize("n", [
    "300",
    # the acceptance command of the issue; slow only because of the engine-based bounds
    pytest.param("1000", marks=pytest.mark.slow),
])
def test_acceptance_krr_json_lists_at_least_ten_methods_with_status(n):
    result = run("bound", *KRR, "--epsilon0", "4", "--n", n, "--delta", "1e-6", "--json")
    assert result.exit_code == 0, result.output
    records = json.loads(result.stdout)
    assert len(records) >= 10
    keys = {"method", "kind", "epsilon", "delta", "status", "reference", "seconds"}
    for record in records:
        assert keys <= set(record)
        assert record["status"] in ("proven", "approximate",
                                    "relies-on-stronger-clone-reduction")
        assert record["delta"] == 1e-6
        assert (record["epsilon"] is None) == bool(record["error"])
    computed = [r for r in records if r["epsilon"] is not None]
    assert len(computed) >= 10
    methods = {r["method"] for r in records}
    assert {"variation-ratio", "gspa-gdp", "optimal-blanket", "exact-lower"} <= methods
    gdp = next(r for r in records if r["method"] == "gspa-gdp")
    assert gdp["statuses"] == ["approximate", "relies-on-stronger-clone-reduction"]
    # the bounds that do not hold at eps0 = 4 are reported with the reason, not dropped
    efmrtt = next(r for r in records if r["method"] == "efmrtt19")
    assert efmrtt["epsilon"] is None and "eps0 <= 0.5" in efmrtt["error"]


def test_table_output_and_method_selection():
    result = run("bound", *KRR, "--epsilon0", "1", "--n", "5000", "--delta", "1e-7",
                 "--method", "variation-ratio", "--method", "efmrtt19")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    header = lines[1].split()
    assert header == ["method", "kind", "epsilon", "status", "seconds", "check"]
    body = [line.split()[0] for line in lines[3:5]]
    assert body == ["variation-ratio", "efmrtt19"]
    assert any(line.startswith("efmrtt19: not computed: epsilon0 = 1.0") for line in lines)
    assert max(map(len, lines[:5])) <= 100
    wide = run("bound", *KRR, "--epsilon0", "1", "--n", "5000", "--delta", "1e-7",
               "--method", "variation-ratio", "--wide").stdout.splitlines()
    assert wide[1].split() == ["method", "kind", "epsilon", "delta", "status", "reference",
                               "seconds", "check"]


def test_upper_bounds_below_the_proven_lower_bound_are_flagged():
    """10-RR, eps0 = 4, n = 100, delta = 1e-8: variation-ratio (relies on the stronger-clone
    reduction) gives 3.296, below the proven exact lower bound 3.957 (docs/soundness.md)."""
    args = ("bound", *KRR, "--epsilon0", "4", "--n", "100", "--delta", "1e-8", "--method",
            "variation-ratio", "--method", "exact-lower", "--method", "optimal-blanket")
    records = {r["method"]: r for r in json.loads(run(*args, "--json").stdout)}
    lower = records["exact-lower"]["epsilon"]
    assert records["variation-ratio"]["epsilon"] < lower
    assert records["variation-ratio"]["below_proven_lower"] is True
    assert records["variation-ratio"]["best_proven_lower"] == lower
    assert records["optimal-blanket"]["below_proven_lower"] is False
    assert records["exact-lower"]["below_proven_lower"] is False
    lines = run(*args).stdout.splitlines()
    flagged = [line for line in lines[3:6] if line.rstrip().endswith("BELOW-LB")]
    assert [line.split()[0] for line in flagged] == ["variation-ratio"]
    assert any(line.startswith("variation-ratio: BELOW-LB: 3.29") for line in lines)
    assert max(map(len, lines)) <= 100 or all(len(x) <= 100 for x in lines[:6])


def test_param_option_reaches_the_randomizer():
    result = run("bound", "--randomizer", "olh", "--domain-size", "8", "--param",
                 "hash_range=3", "--epsilon0", "1", "--n", "2000", "--delta", "1e-6",
                 "--method", "variation-ratio", "--json")
    assert result.exit_code == 0, result.output
    (record,) = json.loads(result.stdout)
    assert "local hash" in record["note"] and record["epsilon"] > 0


@pytest.mark.parametrize("args,field", [
    (["--epsilon0", "0", "--n", "100", "--delta", "1e-6"], "epsilon0 = 0.0"),
    (["--epsilon0", "-2", "--n", "100", "--delta", "1e-6"], "epsilon0 = -2.0"),
    (["--epsilon0", "1", "--n", "1", "--delta", "1e-6"], "n = 1"),
    (["--epsilon0", "1", "--n", "100", "--delta", "0"], "delta = 0.0"),
    (["--epsilon0", "1", "--n", "100", "--delta", "1.5"], "delta = 1.5"),
    (["--epsilon0", "1", "--n", "100", "--delta", "1e-6", "--method", "nope"],
     "method = 'nope'"),
    (["--epsilon0", "1", "--n", "100", "--delta", "1e-6", "--param", "nokey"],
     "--param = 'nokey'"),
])
def test_bound_errors_are_one_line_exit_2(args, field):
    result = run("bound", *KRR, *args)
    assert result.exit_code == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and field in lines[0]


def test_unknown_randomizer():
    result = run("bound", "--randomizer", "nope", "--epsilon0", "1", "--n", "100",
                 "--delta", "1e-6")
    assert result.exit_code == 2 and "--randomizer = 'nope'" in result.stderr


def test_calibrate_epsilon0_and_n():
    result = run("calibrate", *KRR, "--target-epsilon", "0.5", "--delta", "1e-6", "--n",
                 "1000", "--method", "blanket_bennett", "--method", "variation-ratio", "--json")
    assert result.exit_code == 0, result.output
    records = {r["method"]: r for r in json.loads(result.stdout)}
    assert records["blanket_bennett"]["parameter"] == "epsilon0"
    assert abs(records["blanket_bennett"]["value"] - 2.37) <= 0.01  # 000 Table 4
    assert records["variation-ratio"]["epsilon"] <= 0.5

    result = run("calibrate", *KRR, "--target-epsilon", "0.5", "--delta", "1e-6",
                 "--epsilon0", "2", "--method", "variation-ratio")
    assert result.exit_code == 0, result.output
    assert "variation-ratio  n" in result.stdout


def test_calibrate_reports_unreachable_targets():
    result = run("calibrate", *KRR, "--target-epsilon", "0.5", "--delta", "1e-6", "--n",
                 "100", "--method", "efmrtt19", "--json")
    assert result.exit_code == 0, result.output
    (record,) = json.loads(result.stdout)
    assert record["value"] is None and "target_epsilon = 0.5" in record["error"]
    assert "n >= 1000" in record["error"]


@pytest.mark.parametrize("args,field", [
    (["--target-epsilon", "0.5", "--delta", "1e-6"], "--n / --epsilon0"),
    (["--target-epsilon", "0.5", "--delta", "1e-6", "--n", "10", "--epsilon0", "1"],
     "--n / --epsilon0"),
    (["--target-epsilon", "-1", "--delta", "1e-6", "--n", "100"], "--target-epsilon = -1.0"),
    (["--target-epsilon", "0.5", "--delta", "2", "--n", "100"], "delta = 2.0"),
    (["--target-epsilon", "0.5", "--delta", "1e-6", "--n", "1"], "n = 1"),
    (["--target-epsilon", "0.5", "--delta", "1e-6", "--n", "100", "--method", "exact-lower"],
     "method = 'exact-lower'"),
    (["--target-epsilon", "0.5", "--delta", "1e-6", "--n", "100", "--method", "zzz"],
     "method = 'zzz'"),
])
def test_calibrate_errors(args, field):
    result = run("calibrate", *KRR, *args)
    assert result.exit_code == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and field in lines[0]


def test_every_bound_name_is_selectable():
    for name in bound_names():
        result = run("bound", *KRR, "--epsilon0", "0.5", "--n", "50", "--delta", "1e-3",
                     "--method", name, "--json")
        assert result.exit_code == 0, (name, result.output)
        (record,) = json.loads(result.stdout)
        assert record["method"] == name
