"""003's utility experiments as scenarios (scenarios/gspa_frequency.toml, gspa_mean.toml).

The shipped files are checked against 003's design and run, reduced (fewer repetitions, users
and sweep values), through ``shufflesim run``; the Monte Carlo MSEs are compared with the exact
MSE of each estimator (protocols.estimators.personalized.design_mse at the population's
frequencies) within 6 standard errors estimated from the squared errors, and the bounds table
is checked for its rows and their order (lower <= upper).
"""

import re
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from shufflesim.protocols.estimators import make_estimator
from shufflesim.simulator.cli import main
from shufflesim.simulator.population.budgets import ThreeGroupBudget, budget_arrays
from shufflesim.simulator.scenario.loader import load_scenario

ROOT = Path(__file__).resolve().parents[1]
FREQUENCY = ROOT / "scenarios" / "gspa_frequency.toml"
MEAN = ROOT / "scenarios" / "gspa_mean.toml"
K_SE = 6.0


def test_shipped_files_follow_003s_design():
    freq, mean = load_scenario(FREQUENCY), load_scenario(MEAN)
    for scenario in (freq, mean):
        settings = [p.settings for p in scenario.points]
        assert {s.population.n for s in settings} == {10_000}
        assert {s.repetitions for s in settings} == {1000}
        budgets = [s.population.budget for s in settings]
        assert all(isinstance(b, ThreeGroupBudget) for b in budgets)
        assert {b.liberal_fraction for b in budgets} == {0.09}
        fractions = {b.conservative_fraction for b in budgets}
        assert min(fractions) == 0.01 and 0.5 in fractions and 0.54 in fractions
        assert len({b.conservative_epsilon for b in budgets}) >= 3
        assert {(b.moderate_epsilon, b.liberal_epsilon) for b in budgets} == {(0.5, 1.0)}
        assert {s.sections["bounds"].delta for s in settings} == {(1e-4,)}
    assert {p.settings.estimator_name for p in freq.points} == {
        "gspa_frequency", "weighted_frequency", "uniform_frequency"}
    assert {p.settings.randomizer_name for p in freq.points} == {"brr"}
    np.testing.assert_allclose(freq.points[0].settings.population.data.probabilities(),
                               [0.3, 0.7])
    assert {p.settings.estimator_name for p in mean.points} == {"gspa_mean", "weighted_mean"}
    assert {p.settings.randomizer_name for p in mean.points} == {"laplace"}


def _reduced(path: Path, tmp_path: Path, repetitions: int, n: int, sweep: dict) -> Path:
    text = path.read_text()
    text = re.sub(r"^repetitions = \d+", f"repetitions = {repetitions}", text, flags=re.M)
    text = re.sub(r"^n = \d+", f"n = {n}", text, flags=re.M)
    for key, values in sweep.items():
        text = re.sub(rf'^"{re.escape(key)}" = \[.*\]$', f'"{key}" = {values}', text,
                      flags=re.M)
    out = tmp_path / path.name
    out.write_text(text)
    return out


def _run(path: Path, tmp_path: Path):
    result = CliRunner().invoke(main, ["run", str(path), "--out", str(tmp_path / "out"),
                                       "--workers", "1", "--quiet"])
    assert result.exit_code == 0, result.output
    name = load_scenario(path).name
    folder = tmp_path / "out" / name
    return (pq.read_table(folder / "utility.parquet").to_pandas(),
            pq.read_table(folder / "bounds.parquet").to_pandas())


def _exact_mse(estimator_name, randomizer, values, budget, n):
    """Exact MSE against the sample's truth for i.i.d. data independent of the budgets: the
    design MSE averaged over the data; evaluated at a large representative sample."""
    eps, _ = budget_arrays(budget, n)
    est = make_estimator(estimator_name, randomizer)
    return est.design_mse(values, eps)


def test_frequency_scenario_runs_and_matches_the_exact_mse(tmp_path):
    n, reps = 2000, 300
    path = _reduced(FREQUENCY, tmp_path, reps, n, {
        "population.budget.conservative_fraction": [0.1, 0.54],
        "population.budget.conservative_epsilon": [0.1],
    })
    utility, bounds = _run(path, tmp_path)
    scenario = load_scenario(path)
    assert utility.point.nunique() == len(scenario.points) == 6
    rng = np.random.default_rng(0)
    sample = (rng.random(n) < 0.7).astype(np.int64)
    exact_by = {}
    for point in scenario.points:
        s = point.settings
        rows = utility[(utility.point == point.index) & (utility.metric == "mse")
                       & (utility.reference == "empirical")]
        assert len(rows) == reps
        # (z - c_hat)^2 is the mse metric (both entries of the binary frequency vector err by
        # the same amount).
        exact = _exact_mse(s.estimator_name, s.randomizer, sample, s.population.budget, n)[1]
        se = rows.value.std(ddof=1) / np.sqrt(reps)
        assert abs(rows.value.mean() - exact) < K_SE * se + 0.02 * exact, s.estimator_name
        budget = s.population.budget.conservative_fraction
        exact_by.setdefault(budget, {})[s.estimator_name] = exact
    for exact in exact_by.values():
        assert exact["weighted_frequency"] <= min(exact.values())
    # bounds: one row per personalized bound and budget configuration (not per estimator)
    assert set(bounds.method) == {"gspa-gdp-personalized", "optimal-blanket-personalized",
                                  "exact-lower-personalized", "optimal-blanket-max-budget",
                                  "optimal-blanket-tagged", "baseline-min-budget"}
    assert (bounds.error == "").all() and bounds.epsilon.notna().all()
    for _, rows in bounds.groupby("point"):
        eps = dict(zip(rows.method, rows.epsilon, strict=True))
        assert eps["exact-lower-personalized"] <= eps["optimal-blanket-personalized"]
        assert eps["optimal-blanket-personalized"] <= eps["optimal-blanket-max-budget"] * (1 + 1e-6)
        assert eps["baseline-min-budget"] <= eps["optimal-blanket-personalized"]
    assert set(bounds.mechanism) == {"personalized mechanism",
                                     "per-group shuffle (tagged reports)",
                                     "baseline protocol at the smallest budget"}


def test_mean_scenario_runs_and_matches_the_exact_mse(tmp_path):
    n, reps = 2000, 300
    path = _reduced(MEAN, tmp_path, reps, n, {
        "population.budget.conservative_fraction": [0.54],
        "population.budget.conservative_epsilon": [0.1, 0.4],
    })
    utility, bounds = _run(path, tmp_path)
    scenario = load_scenario(path)
    rng = np.random.default_rng(1)
    for point in scenario.points:
        s = point.settings
        rows = utility[(utility.point == point.index) & (utility.metric == "mse")
                       & (utility.reference == "empirical")]
        assert len(rows) == reps
        sample = s.population.data.sample(n, rng)
        exact = _exact_mse(s.estimator_name, s.randomizer, sample, s.population.budget, n)
        se = rows.value.std(ddof=1) / np.sqrt(reps)
        assert abs(rows.value.mean() - exact) < K_SE * se + 0.02 * exact, s.estimator_name
    gdp = bounds[bounds.method == "gspa-gdp-personalized"]
    assert len(gdp) == len(scenario.points) and gdp.epsilon.notna().all()  # a row per point
    assert set(gdp.statuses) == {"approximate, relies-on-stronger-clone-reduction"}
    others = bounds[bounds.method != "gspa-gdp-personalized"]
    assert others.epsilon.isna().all() and others.error.str.contains("does not apply").all()


@pytest.mark.slow
def test_default_population_at_full_size(tmp_path):
    """003's default point (f_c = 0.54, eps_c = 0.1), n = 10,000, 1,000 repetitions."""
    path = _reduced(FREQUENCY, tmp_path, 1000, 10_000, {
        "population.budget.conservative_fraction": [0.54],
        "population.budget.conservative_epsilon": [0.1],
    })
    utility, bounds = _run(path, tmp_path)
    mse = utility[(utility.metric == "mse") & (utility.reference == "empirical")].groupby(
        "estimator").value.mean()
    assert mse["weighted_frequency"] < mse["gspa_frequency"] < mse["uniform_frequency"]
