"""Data and budget distributions (simulator/population.py).

Statistical tests use fixed seeds; chi-square goodness-of-fit tests reject at alpha = 1e-4 and
mean checks use bands of 6 standard errors computed from the exact variance.
"""

import dataclasses

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from scipy import integrate, stats

from shufflesim.simulator.errors import ScenarioError
from shufflesim.simulator.population.base import (
    CATEGORICAL,
    NUMERIC,
    budget_distribution_class,
    budget_distribution_names,
    data_distribution_class,
    data_distribution_names,
    describe_parameters,
    register_data_distribution,
)
from shufflesim.simulator.population.budgets import ConstantBudget
from shufflesim.simulator.population.data import (
    ClippedNormal,
    Constant,
    ContinuousUniform,
    Uniform,
    Zipf,
)
from shufflesim.simulator.population.files import FileColumn

ALPHA = 1e-4


def _chi_square_ok(counts, probabilities):
    expected = probabilities * counts.sum()
    keep = expected > 0
    assert counts[~keep].sum() == 0, "draws outside the support"
    if keep.sum() == 1:  # a point mass: every draw must be that value
        return True
    return stats.chisquare(counts[keep], expected[keep]).pvalue > ALPHA


def test_registries_list_the_builtin_distributions():
    assert set(data_distribution_names()) >= {
        "uniform", "zipf", "constant", "clipped_normal", "continuous_uniform", "file"
    }
    assert "constant" in budget_distribution_names()
    assert data_distribution_class("zipf") is Zipf
    assert budget_distribution_class("constant") is ConstantBudget
    with pytest.raises(ScenarioError, match="unknown data distribution"):
        data_distribution_class("zipff")
    with pytest.raises(RuntimeError, match="registered twice"):
        register_data_distribution(Zipf)


def test_describe_parameters_marks_required_and_defaults():
    params = {p["name"]: p for p in describe_parameters(Constant)}
    assert params["value"]["required"] and params["value"]["default"] is None
    assert not params["domain_size"]["required"] and params["domain_size"]["default"] is None
    assert [p["name"] for p in describe_parameters(FileColumn)] == [
        "path", "column", "domain_size", "replace"
    ]


def test_zipf_probabilities_follow_the_power_law():
    p = Zipf(domain_size=3, exponent=1.0).probabilities()
    np.testing.assert_allclose(p, np.array([1, 1 / 2, 1 / 3]) / (11 / 6), rtol=1e-15)
    q = Zipf(domain_size=10, exponent=0.7).probabilities()
    ranks = np.arange(1, 11)
    np.testing.assert_allclose(q[0] / q, ranks**0.7, rtol=1e-12)
    assert q.sum() == pytest.approx(1.0, abs=1e-15)
    np.testing.assert_allclose(Zipf(domain_size=4, exponent=0).probabilities(), 0.25)


@pytest.mark.parametrize("dist", [
    Uniform(domain_size=7), Zipf(domain_size=12, exponent=1.3),
    Constant(value=2, domain_size=5),
])
def test_categorical_sampling_matches_probabilities(dist):
    rng = np.random.default_rng(11)
    p = dist.probabilities()
    assert dist.kind == CATEGORICAL and dist.domain_size == p.size
    draws = dist.sample((40, 500), rng)
    assert draws.shape == (40, 500) and draws.dtype == np.int64
    assert _chi_square_ok(np.bincount(draws.ravel(), minlength=p.size), p)
    counts = dist.sample_counts(300, 50, rng)
    assert counts.shape == (50, p.size) and (counts.sum(axis=1) == 300).all()
    assert _chi_square_ok(counts.sum(axis=0), p)
    assert dist.population_mean() == pytest.approx(np.dot(np.arange(p.size), p))


def test_categorical_support_is_where_mass_is():
    assert Constant(value=3, domain_size=6).support() == (3.0, 3.0)
    assert Uniform(domain_size=4).support() == (0.0, 3.0)


def test_clipped_normal_mean_matches_integration_and_samples():
    dist = ClippedNormal(mean=0.2, std=0.5, low=-0.1, high=0.6)
    z = stats.norm(0.2, 0.5)
    inner, _ = integrate.quad(lambda x: x * z.pdf(x), -0.1, 0.6)
    exact = -0.1 * z.cdf(-0.1) + inner + 0.6 * z.sf(0.6)
    assert dist.population_mean() == pytest.approx(exact, rel=1e-10)
    rng = np.random.default_rng(3)
    x = dist.sample(200_000, rng)
    assert x.min() >= -0.1 and x.max() <= 0.6
    # The clipped values sit exactly on the end points with the right mass.
    assert np.mean(x == -0.1) == pytest.approx(z.cdf(-0.1), abs=6 * np.sqrt(0.25 / x.size))
    assert abs(x.mean() - exact) < 6 * x.std() / np.sqrt(x.size)
    assert dist.kind == NUMERIC and dist.domain_size is None


def test_continuous_uniform_and_numeric_constant():
    rng = np.random.default_rng(4)
    dist = ContinuousUniform(low=-1, high=3)
    x = dist.sample((100, 1000), rng)
    assert x.min() >= -1 and x.max() <= 3
    assert abs(x.mean() - 1.0) < 6 * np.sqrt(16 / 12 / x.size)
    c = Constant(value=0.25)
    assert c.kind == NUMERIC and c.population_mean() == 0.25
    assert (c.sample((2, 3), rng) == 0.25).all()
    with pytest.raises(ScenarioError):
        c.probabilities()


@pytest.mark.parametrize("build, field", [
    (lambda: Uniform(domain_size=0), "domain_size"),
    (lambda: Uniform(domain_size=2.0), "domain_size"),
    (lambda: Zipf(domain_size=5, exponent=-0.5), "exponent"),
    (lambda: Zipf(domain_size=5, exponent=float("nan")), "exponent"),
    (lambda: Zipf(domain_size=True, exponent=1.0), "domain_size"),
    (lambda: Constant(value=5, domain_size=5), "value"),
    (lambda: Constant(value=1.5, domain_size=5), "value"),
    (lambda: Constant(value=float("inf")), "value"),
    (lambda: ClippedNormal(mean=0, std=0, low=0, high=1), "std"),
    (lambda: ClippedNormal(mean=0, std=1, low=1, high=1), "high"),
    (lambda: ContinuousUniform(low=2, high=1), "high"),
    (lambda: ConstantBudget(epsilon0=0), "epsilon0"),
    (lambda: ConstantBudget(epsilon0=float("inf")), "epsilon0"),
])
def test_invalid_parameters_name_the_field(build, field):
    with pytest.raises(ScenarioError) as info:
        build()
    assert info.value.key == field


def test_constant_budget_samples_per_user_arrays():
    budget = ConstantBudget(epsilon0=0.7)
    assert budget.is_constant and budget.reference_epsilon == 0.7
    b = budget.sample_budgets(5, np.random.default_rng(0))
    assert b.shape == (5,) and b.dtype == np.float64 and (b == 0.7).all()
    assert budget.sample_budgets((3, 4), np.random.default_rng(0)).shape == (3, 4)
    with pytest.raises(dataclasses.FrozenInstanceError):
        budget.epsilon0 = 1.0


# -- file populations ---------------------------------------------------------------------------
@pytest.fixture
def table_files(tmp_path):
    frame = pd.DataFrame({
        "category": np.array([0, 1, 1, 2, 2, 2, 4, 4], dtype=np.int64),
        "score": [0.1, 0.5, 0.2, 0.9, 0.4, 0.4, 0.3, 0.8],
    })
    csv = tmp_path / "data.csv"
    frame.to_csv(csv, index=False)
    parquet = tmp_path / "data.parquet"
    pq.write_table(pa.Table.from_pandas(frame), parquet)
    return frame, csv, parquet


@pytest.mark.parametrize("which", ["csv", "parquet"])
def test_file_column_categorical_and_numeric(table_files, which):
    frame, csv, parquet = table_files
    path = str(csv if which == "csv" else parquet)
    cat = FileColumn(path=path, column="category", domain_size=6)
    assert cat.kind == CATEGORICAL and cat.rows == 8
    np.testing.assert_allclose(cat.probabilities(), np.array([1, 2, 3, 0, 2, 0]) / 8)
    assert cat.population_mean() == pytest.approx(frame.category.mean())
    num = FileColumn(path=path, column="score")
    assert num.kind == NUMERIC and num.support() == (0.1, 0.9)
    assert num.population_mean() == pytest.approx(frame.score.mean())
    rng = np.random.default_rng(5)
    draws = num.sample((1000, 8), rng)
    assert set(np.unique(draws)) <= set(frame.score)
    assert _chi_square_ok(np.bincount(cat.sample((500, 8), rng).ravel(), minlength=6),
                          cat.probabilities())


def test_file_column_without_replacement_uses_distinct_rows(table_files):
    frame, csv, _ = table_files
    rng = np.random.default_rng(6)
    whole = FileColumn(path=str(csv), column="score", replace=False).sample((20, 8), rng)
    # n = rows: every repetition is the whole column in some order.
    np.testing.assert_allclose(np.sort(whole, axis=1), np.tile(np.sort(frame.score), (20, 1)))
    cat = FileColumn(path=str(csv), column="category", domain_size=5, replace=False)
    counts = cat.sample_counts(6, 200, rng)
    colors = np.bincount(frame.category, minlength=5)
    assert (counts.sum(axis=1) == 6).all() and (counts <= colors).all()
    with pytest.raises(ScenarioError, match="n <= 8"):
        cat.check_sample_size(9)


@pytest.mark.parametrize("kwargs, key, message", [
    ({"column": "nope"}, "column", "not a column"),
    ({"column": "score", "domain_size": 5}, "column", "must hold integers"),
    ({"column": "category", "domain_size": 3}, "domain_size", "outside"),
])
def test_file_column_errors(table_files, kwargs, key, message):
    _, csv, parquet = table_files
    for path in (csv, parquet):
        with pytest.raises(ScenarioError, match=message) as info:
            FileColumn(path=str(path), **kwargs)
        assert info.value.key == key


def test_file_column_missing_file_and_values(tmp_path):
    with pytest.raises(ScenarioError, match="file not found") as info:
        FileColumn(path=str(tmp_path / "absent.csv"), column="x")
    assert info.value.key == "path"
    bad = tmp_path / "holes.csv"
    bad.write_text("x\n1.0\n\n2.0\nnan\n")
    with pytest.raises(ScenarioError, match="missing values"):
        FileColumn(path=str(bad), column="x")
    other = tmp_path / "data.json"
    other.write_text("{}")
    with pytest.raises(ScenarioError, match=r"\.csv or \.parquet"):
        FileColumn(path=str(other), column="x")
