"""Budget distributions (simulator/budgets.py): sampling laws, exact group sizes, independence
of the assignment, presets (003 Table 2), profiles for the bounds, scenario integration.

Statistical tests use fixed seeds; goodness-of-fit tests reject at alpha = 1e-4.
"""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from shufflesim.protocols.bounds.personalized.profile import BudgetProfile
from shufflesim.simulator.errors import ScenarioError
from shufflesim.simulator.population.base import budget_distribution_names
from shufflesim.simulator.population.budgets import (
    PRESETS,
    ClippedNormalBudget,
    ConstantBudget,
    GroupBudget,
    PresetBudget,
    ThreeGroupBudget,
    UniformBudget,
    budget_arrays,
    budget_profile,
    group_counts,
)
from shufflesim.simulator.population.files import FileBudget
from shufflesim.simulator.scenario.loader import parse_scenario

ALPHA = 1e-4


def test_registry_lists_the_budget_distributions():
    assert set(budget_distribution_names()) >= {
        "constant", "uniform", "groups", "three_groups", "clipped_normal", "file", "preset"}


def test_uniform_budgets_follow_u_a_b():
    dist = UniformBudget(low=0.01, high=2.0)
    eps = dist.sample_budgets((4, 5000), np.random.default_rng(1))
    assert eps.shape == (4, 5000) and eps.min() >= 0.01 and eps.max() <= 2.0
    assert stats.kstest(eps.ravel(), stats.uniform(0.01, 1.99).cdf).pvalue > ALPHA
    assert not dist.is_constant and dist.reference_epsilon == 2.0
    q = dist.quantile_budgets(4)
    np.testing.assert_allclose(q, 0.01 + 1.99 * np.array([0.125, 0.375, 0.625, 0.875]))


def test_group_counts_largest_remainder():
    np.testing.assert_array_equal(group_counts([0.54, 0.37, 0.09], 10_000), [5400, 3700, 900])
    np.testing.assert_array_equal(group_counts([1 / 3, 1 / 3, 1 / 3], 10), [4, 3, 3])
    counts = group_counts([0.123, 0.456, 0.421], 997)
    assert counts.sum() == 997
    assert np.all(np.abs(counts - np.array([0.123, 0.456, 0.421]) * 997) < 1)


def test_exact_count_groups_are_a_uniform_assignment():
    dist = GroupBudget(fractions=(0.5, 0.3, 0.2), epsilons=(0.1, 0.5, 1.0))
    rng = np.random.default_rng(2)
    eps = dist.sample_budgets((20_000, 10), rng)
    # Every row holds exactly the group sizes 5, 3, 2 ...
    for value, count in ((0.1, 5), (0.5, 3), (1.0, 2)):
        assert np.all((eps == value).sum(axis=1) == count)
    # ... assigned uniformly: each position is a group-g user w.p. n_g / n.
    for value, count in ((0.1, 5), (0.5, 3), (1.0, 2)):
        hits = (eps == value).sum(axis=0)
        expected = np.full(10, 20_000 * count / 10)
        assert stats.chisquare(hits, expected).pvalue > ALPHA
    # Independent rows: position 0 of consecutive rows is not correlated.
    first = (eps[:, 0] == 0.1).astype(float)
    r = np.corrcoef(first[:-1], first[1:])[0, 1]
    assert abs(r) < 6 / np.sqrt(first.size)


def test_iid_groups_have_multinomial_sizes():
    dist = GroupBudget(fractions=(0.54, 0.37, 0.09), epsilons=(0.1, 0.5, 1.0), exact_counts=False)
    eps = dist.sample_budgets(200_000, np.random.default_rng(3))
    counts = np.array([(eps == e).sum() for e in (0.1, 0.5, 1.0)])
    assert stats.chisquare(counts, np.array([0.54, 0.37, 0.09]) * eps.size).pvalue > ALPHA


def test_group_validation_names_the_field():
    with pytest.raises(ScenarioError, match="fractions.*sum to 1"):
        GroupBudget(fractions=(0.5, 0.6), epsilons=(0.1, 1.0))
    with pytest.raises(ScenarioError, match="epsilons"):
        GroupBudget(fractions=(0.5, 0.5), epsilons=(0.1,))
    with pytest.raises(ScenarioError, match=r"epsilons\[1\]"):
        GroupBudget(fractions=(0.5, 0.5), epsilons=(0.1, -1.0))
    with pytest.raises(ScenarioError, match="local_deltas"):
        GroupBudget(fractions=(0.5, 0.5), epsilons=(0.1, 1.0), local_deltas=(0.0, 1.5))


def test_three_groups_defaults_are_003s_design():
    dist = ThreeGroupBudget()
    assert dist.groups.fractions == pytest.approx((0.54, 0.37, 0.09))
    assert dist.groups.epsilons == (0.1, 0.5, 1.0)
    np.testing.assert_array_equal(dist.groups.counts(10_000), [5400, 3700, 900])
    swept = ThreeGroupBudget(conservative_fraction=0.01)
    assert swept.groups.fractions == pytest.approx((0.01, 0.90, 0.09))
    with pytest.raises(ScenarioError, match="conservative_fraction"):
        ThreeGroupBudget(conservative_fraction=0.95)
    assert dist.reference_epsilon == 1.0
    no_liberal = ThreeGroupBudget(liberal_fraction=0.0, conservative_fraction=0.5)
    assert no_liberal.reference_epsilon == 0.5


def test_clipped_normal_budgets():
    dist = ClippedNormalBudget(mean=0.5, std=0.3, low=0.05, high=1.0)
    eps = dist.sample_budgets(100_000, np.random.default_rng(4))
    assert eps.min() == 0.05 and eps.max() == 1.0
    p_low = stats.norm.cdf(0.05, 0.5, 0.3)
    at_low = (eps == 0.05).mean()
    assert abs(at_low - p_low) < 6 * np.sqrt(p_low * (1 - p_low) / eps.size)
    inside = eps[(eps > 0.05) & (eps < 1.0)]
    trunc = stats.truncnorm((0.05 - 0.5) / 0.3, (1.0 - 0.5) / 0.3, loc=0.5, scale=0.3)
    assert stats.kstest(inside, trunc.cdf).pvalue > ALPHA
    with pytest.raises(ScenarioError, match="low"):
        ClippedNormalBudget(mean=0.5, std=0.3, low=0.0, high=1.0)


def test_file_budgets(tmp_path):
    path = tmp_path / "budgets.csv"
    pd.DataFrame({"eps": [0.1, 0.2, 0.2, 1.0], "d": [0.0, 1e-6, 1e-6, 0.0]}).to_csv(path,
                                                                                  index=False)
    dist = FileBudget(path=str(path), column="eps", delta_column="d")
    eps = dist.sample_budgets((50_000,), np.random.default_rng(5))
    counts = np.array([(eps == v).sum() for v in (0.1, 0.2, 1.0)])
    assert stats.chisquare(counts, np.array([0.25, 0.5, 0.25]) * eps.size).pvalue > ALPHA
    assert dist.reference_epsilon == 1.0
    exact = FileBudget(path=str(path), column="eps", replace=False, delta_column="d")
    rows = exact.sample_budgets((3, 4), np.random.default_rng(6))
    np.testing.assert_array_equal(np.sort(rows, axis=1), np.tile([0.1, 0.2, 0.2, 1.0], (3, 1)))
    eps_p, delta_p = budget_arrays(exact, 4)
    np.testing.assert_array_equal(eps_p, [0.1, 0.2, 0.2, 1.0])
    np.testing.assert_array_equal(delta_p, [0.0, 1e-6, 1e-6, 0.0])
    with pytest.raises(ScenarioError, match="replace"):
        exact.sample_budgets((1, 5), np.random.default_rng(0))
    bad = tmp_path / "bad.csv"
    pd.DataFrame({"eps": [0.1, 0.0]}).to_csv(bad, index=False)
    with pytest.raises(ScenarioError, match="column"):
        FileBudget(path=str(bad), column="eps")


def test_presets_are_003_table_2():
    assert set(PRESETS) == {"gspa-unif1", "gspa-unif2", "gspa-unif3", "gspa-constant",
                            "gspa-mixed", "gspa-three-groups"}
    assert (PRESETS["gspa-unif3"].low, PRESETS["gspa-unif3"].high) == (0.5, 1.0)  # 003 Unif 3
    u1 = PresetBudget(preset="gspa-unif1")
    assert (u1.inner.low, u1.inner.high) == (0.01, 1.0) and not u1.is_constant
    assert PresetBudget(preset="gspa-unif2").inner.high == 2.0
    const = PresetBudget(preset="gspa-constant")
    assert const.is_constant and const.reference_epsilon == 0.5
    mixed = budget_arrays(PresetBudget(preset="gspa-mixed"), 10)[0]
    np.testing.assert_array_equal(np.sort(mixed), [0.01] * 5 + [0.5] * 5)
    with pytest.raises(ScenarioError, match="preset"):
        PresetBudget(preset="gspa-unif4")


def test_profiles():
    profile = budget_profile(ThreeGroupBudget(), 10_000)
    assert isinstance(profile, BudgetProfile)
    np.testing.assert_array_equal(profile.epsilons, [0.1, 0.5, 1.0])
    np.testing.assert_array_equal(profile.counts, [5400, 3700, 900])
    assert profile.n == 10_000
    const = budget_profile(ConstantBudget(epsilon0=0.7), 50)
    assert const.is_constant and const.n == 50 and const.epsilons.tolist() == [0.7]
    uniform = budget_profile(UniformBudget(low=0.5, high=1.5, local_delta=1e-5), 8)
    assert uniform.n == 8 and uniform.epsilons.size == 8
    np.testing.assert_allclose(uniform.deltas, 1e-5)
    grouped = budget_profile(GroupBudget(fractions=(0.5, 0.5), epsilons=(0.3, 0.3)), 7)
    assert grouped.epsilons.tolist() == [0.3] and grouped.counts.tolist() == [7]


SCENARIO = """
name = "personalized"
seed = 3
repetitions = 4
[population]
n = 500
data = {{ distribution = "categorical", weights = [0.3, 0.7] }}
budget = {budget}
[randomizer]
name = "brr"
[estimator]
name = "{estimator}"
"""


def test_scenarios_accept_budget_distributions_and_name_bad_keys():
    text = SCENARIO.format(budget='{ distribution = "three_groups", '
                                  'conservative_fraction = 0.2 }', estimator="gspa_frequency")
    scenario = parse_scenario(text)
    budget = scenario.points[0].settings.population.budget
    assert isinstance(budget, ThreeGroupBudget) and budget.conservative_fraction == 0.2
    assert scenario.points[0].settings.randomizer.epsilon0 == 1.0
    with pytest.raises(ScenarioError, match="estimator.name.*biased"):
        parse_scenario(text.replace('"gspa_frequency"', '"frequency"'))
    bad = SCENARIO.format(budget='{ distribution = "groups", fractions = [0.5, 0.6], '
                                 'epsilons = [0.1, 1.0] }', estimator="gspa_frequency")
    with pytest.raises(ScenarioError, match=r"population\.budget\.fractions"):
        parse_scenario(bad)
    bad = SCENARIO.format(budget='{ distribution = "uniform", low = 0.1, hihg = 1.0 }',
                          estimator="gspa_frequency")
    with pytest.raises(ScenarioError, match=r"population\.budget\.hihg.*'high'"):
        parse_scenario(bad)


def test_sweeping_the_conservative_fraction():
    text = SCENARIO.format(budget='{ distribution = "three_groups" }',
                           estimator="weighted_frequency") + (
        '[sweep]\n"population.budget.conservative_fraction" = [0.01, 0.5]\n')
    points = parse_scenario(text).points
    fractions = [p.settings.population.budget.groups.fractions[0] for p in points]
    assert fractions == [0.01, 0.5]
