"""``shufflesim design`` / ``simulator.design.design`` (issue 30): 000 Table 4's optimal row and
l2 column, --validate against the prediction, the written scenario, bad inputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from shufflesim.protocols.accounting.compose import Round, compose_rounds
from shufflesim.protocols.randomizers import make_randomizer
from shufflesim.simulator.cli import main
from shufflesim.simulator.design import FIELDS, design
from shufflesim.simulator.design.scenario import empirical_errors
from shufflesim.simulator.execution.runner import run_scenario
from shufflesim.simulator.scenario.loader import load_scenario

#: 000 Table 4, Optimal (FFT) row: target eps -> (eps0, l2) (/work/shared/reference/published.md).
TABLE4_OPTIMAL = {0.1: (1.15, 0.163), 0.5: (2.65, 0.042), 1.0: (3.51, 0.025)}
ZIPF = {"distribution": "zipf", "exponent": 0.7}


@pytest.mark.parametrize("target", sorted(TABLE4_OPTIMAL))
def test_krr_matches_table_4_optimal_row(target):
    eps0, l2 = TABLE4_OPTIMAL[target]
    frame = design("frequency", 1000, target, 1e-6, domain_size=10, data=ZIPF, only=["krr"])
    row = frame.iloc[0]
    assert row["rank"] == 1 and row["bound"] == "optimal-blanket" and row["meets_target"]
    assert abs(row["epsilon0"] - eps0) <= 0.01, (target, row["epsilon0"])
    assert row["predicted_l2"] == pytest.approx(l2, rel=0.10)
    assert row["epsilon"] <= target


def test_records_have_the_contract_fields_and_ranks():
    frame = design("frequency", 1000, 1.0, 1e-6, domain_size=10)
    for field in ("rank", "randomizer", "parameters", "epsilon0", "bound", "epsilon", "delta",
                  "rounds", "bits", "messages", "predicted_mse", "predicted_l2",
                  "predicted_linf"):
        assert field in frame.columns
    assert list(frame.columns) == list(FIELDS)
    met = frame[frame.meets_target]
    assert list(met["rank"]) == list(range(1, len(met) + 1))
    assert met.predicted_l2.is_monotonic_increasing
    assert len(met) >= 10 and {"krr", "oue", "olh", "pure_dump"} <= set(met.randomizer)
    assert (met.epsilon <= 1.0).all()


def test_rounds_use_the_composed_proven_bound_krr():
    frame = design("frequency", 10000, 1.0, 1e-6, rounds=3, domain_size=4, only=["krr"])
    row = frame.iloc[0]
    assert row["bound"] == "optimal-blanket" and row["rounds"] == 3
    r = make_randomizer("krr", epsilon0=row["epsilon0"], domain_size=4)
    assert compose_rounds([Round(r, 10000, 3)], 1e-6, "optimal-blanket").epsilon <= 1.0
    assert row["epsilon0"] > 1.0 / 3  # amplification beats splitting the budget


@pytest.mark.slow
def test_rounds_use_the_composed_proven_bound():
    frame = design("frequency", 2000, 1.0, 1e-6, rounds=10, domain_size=4,
                   only=["krr", "oue"])
    by_name = {r.randomizer: r for r in frame.itertuples()}
    assert by_name["krr"].bound == "optimal-blanket" and by_name["oue"].bound == "fmt21-clone"
    for name, row in by_name.items():
        r = make_randomizer(name, epsilon0=row.epsilon0, domain_size=4)
        assert compose_rounds([Round(r, 2000, 10)], 1e-6, row.bound).epsilon <= 1.0


def test_validate_agrees_with_the_prediction_for_three_candidates():
    frame = design("frequency", 1000, 1.0, 1e-6, domain_size=10, validate=400, seed=7)
    checked = frame[frame.validated_repetitions.notna()]
    assert len(checked) == 3
    for row in checked.itertuples():
        for metric in ("mse", "l2"):
            low, high = getattr(row, f"empirical_{metric}_low"), getattr(
                row, f"empirical_{metric}_high")
            assert low <= getattr(row, f"predicted_{metric}") <= high, (row.randomizer, metric)
        assert row.empirical_linf == pytest.approx(row.predicted_linf, rel=0.1)


def test_validate_for_the_mean():
    frame = design("mean", 2000, 1.0, 1e-6, interval=(10.0, 20.0), validate=400, seed=3,
                   only=["laplace", "duchi", "piecewise"])
    checked = frame[frame.validated_repetitions.notna()]
    assert len(checked) == 3
    for row in checked.itertuples():
        assert row.empirical_mse_low <= row.predicted_mse <= row.empirical_mse_high


def test_written_scenario_runs_and_reproduces_the_prediction(tmp_path):
    path = tmp_path / "chosen.toml"
    result = CliRunner().invoke(main, [
        "design", "--task", "frequency", "--domain-size", "10", "--n", "1000",
        "--target-epsilon", "0.5", "--delta", "1e-6", "--write-scenario", str(path),
        "--json"])
    assert result.exit_code == 0, result.output
    best = json.loads(result.stdout)[0]
    assert best["rank"] == 1
    scenario = load_scenario(path)
    assert scenario.points[0].settings.randomizer_name == best["randomizer"]
    errors = empirical_errors(run_scenario(scenario)["utility"], "frequency")
    value, low, high = errors["l2"]
    assert low <= best["predicted_l2"] <= high


def _fails(args, tmp_path) -> str:
    out = tmp_path / "out"
    scenario = tmp_path / "s.toml"
    result = CliRunner().invoke(main, ["design", *args, "--out", str(out),
                                       "--write-scenario", str(scenario)])
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert not out.exists() and not scenario.exists()
    assert list(Path(tmp_path).iterdir()) == []
    return lines[0]


BASE = ["--n", "1000", "--target-epsilon", "1", "--delta", "1e-6"]


def test_unknown_task(tmp_path):
    assert "--task" in _fails(["--task", "histogram", "--domain-size", "10", *BASE], tmp_path)


def test_impossible_target_names_the_closest(tmp_path):
    line = _fails(["--task", "frequency", "--domain-size", "10", "--n", "50",
                   "--target-epsilon", "0.0001", "--delta", "1e-9", "--randomizer", "krr"],
                  tmp_path)
    assert "no candidate meets it" in line and "closest is krr" in line


@pytest.mark.parametrize("args", [
    ["--max-bits", "1"],
    ["--min-epsilon0", "3", "--max-epsilon0", "2"],
    ["--interval", "0,1"],
])
def test_contradictory_limits(args, tmp_path):
    line = _fails(["--task", "frequency", "--domain-size", "10", *BASE, *args], tmp_path)
    assert line.count("error:") == 1


def test_budget_groups_are_certified_each_on_its_own():
    from shufflesim.simulator.design.groups import design_groups

    frame = design_groups("frequency", 20000, "gspa-three-groups", 1e-6, domain_size=10,
                          only=["krr", "oue"])
    assert set(frame.group.str[:2]) == {"1:", "2:", "3:"}
    for row in frame.itertuples():
        target = {5400: 0.1, 10800: 0.1, 7400: 0.5, 1800: 1.0}
        assert row.epsilon <= row.target_epsilon
        assert row.n == {0.1: 10800, 0.5: 7400, 1.0: 1800}[row.target_epsilon], target
    krr = frame[frame.randomizer == "krr"]
    weights = krr.n / 20000
    single = [design("frequency", int(r.n), r.target_epsilon, 1e-6, domain_size=10,
                     only=["krr"]).predicted_mse[0] for r in krr.itertuples()]
    assert krr.predicted_mse.iloc[0] == pytest.approx(sum(w * w * m for w, m in
                                                          zip(weights, single, strict=True)))


def test_public_api_returns_the_json_records():
    import shufflesim

    table = shufflesim.design(task="sum", n=5000, target_epsilon=1.0, delta=1e-6,
                              interval=(0.0, 1.0), binary=True, only=["balcer", "duchi"])
    assert {"balcer", "duchi"} == set(table.randomizer)
    assert isinstance(table.parameters[0], dict) and table.attrs["call"] == "design"
    balcer = table[table.randomizer == "balcer"].iloc[0]
    assert balcer.blanket_messages >= 1 and balcer.messages == balcer.blanket_messages + 1


def test_non_proven_bound_only_in_its_labelled_column_and_ranks_per_n():
    plain = design("frequency", [1000, 4000], 0.5, 1e-6, domain_size=10, only=["krr", "oue"])
    marked = design("frequency", [1000, 4000], 0.5, 1e-6, domain_size=10, only=["krr", "oue"],
                    unproven=True)
    assert list(marked.epsilon0) == list(plain.epsilon0)
    assert plain.epsilon0_not_proven.isna().all()
    assert marked.bound_not_proven.str.contains("relies-on-stronger-clone-reduction").all()
    assert not marked.bound.str.contains("variation").any()
    for _, group in marked.groupby("n"):
        assert sorted(group["rank"]) == [1, 2]
