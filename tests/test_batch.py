"""The batch path (simulator/batch.py) and the runner's units (simulator/runner.py).

Statistical checks use fixed seeds. Mean checks use a band of 6 standard errors (two-sided
significance about 2e-9 under a normal approximation); the standard error comes from the exact
variance where the test derives it (k-RR) and from the sample standard deviation of at least
2000 repetitions otherwise (relative error of that estimate about 2%). Two-sample and
goodness-of-fit tests reject at alpha = 1e-4.
"""

import dataclasses
import itertools

import numpy as np
import pytest
from scipy import integrate, stats

from shufflesim.protocols.randomizers import make_randomizer, randomizer_class, randomizer_names
from shufflesim.protocols.randomizers.registry import example_randomizer
from shufflesim.simulator.batch.metrics import FrequencyTarget, MeanTarget, SumTarget
from shufflesim.simulator.batch.run import BatchSetup, run_unit, sorted_values
from shufflesim.simulator.batch.targets import TARGETS
from shufflesim.simulator.errors import ScenarioError
from shufflesim.simulator.execution.runner import run_scenario
from shufflesim.simulator.execution.simulation import execute_unit, plan_units
from shufflesim.simulator.population.budgets import ConstantBudget
from shufflesim.simulator.population.data import Zipf
from shufflesim.simulator.scenario.loader import parse_scenario
from shufflesim.simulator.scenario.model import BatchPath, ShuffleMode

ALPHA = 1e-4
SIGMAS = 6.0


def scenario_text(randomizer="krr", d=6, n=200, eps=0.8, reps=100, path="reports",
                  shuffle="perform", estimator="frequency", data=None, extra=""):
    data = data or f'{{ distribution = "zipf", domain_size = {d}, exponent = 1.1 }}'
    return f"""
name = "batch"
seed = 5
repetitions = {reps}
[population]
n = {n}
data = {data}
budget = {{ distribution = "constant", epsilon0 = {eps} }}
[randomizer]
name = "{randomizer}"
{extra}
[estimator]
name = "{estimator}"
[batch]
path = "{path}"
shuffle = "{shuffle}"
"""


def make_setup(**kwargs) -> BatchSetup:
    return BatchSetup.from_settings(parse_scenario(scenario_text(**kwargs)).points[0].settings)


def krr_l2_squared_moments(randomizer, population_p, n):
    """Exact mean and variance of ||f_hat - f||^2 (f: empirical frequencies) for k-RR with
    i.i.d. data (population_p) and the unbiased estimator.

    With Z_i = e_{Y_i} - P_{x_i} (P_x the output distribution of input x, Sigma_x its
    covariance), T = ||sum_i Z_i||^2 and ||f_hat - f||^2 = T / (n (p - q))^2. Given the data
    histogram c: E[T | c] = sum_x c_x tr Sigma_x and
    Var(T | c) = sum_x c_x Var||Z_x||^2 + 2 sum_{i != j} tr(Sigma_i Sigma_j), with
    Var||Z_x||^2 = 4 (sum_y P_x(y)^3 - (sum_y P_x(y)^2)^2). Then average over
    c ~ Multinomial(n, p): E[c_x c_x'] = n(n-1) p_x p_x' + [x = x'] n p_x.
    """
    P = randomizer.output_pmf()
    d = P.shape[0]
    p_star, q_star = randomizer.support_probabilities()
    scale = (n * (p_star - q_star)) ** 2
    sigma = np.stack([np.diag(P[x]) - np.outer(P[x], P[x]) for x in range(d)])
    trace = np.trace(sigma, axis1=1, axis2=2)
    var_norm = 4 * ((P**3).sum(axis=1) - ((P**2).sum(axis=1)) ** 2)
    m = np.einsum("aij,bji->ab", sigma, sigma)  # tr(Sigma_a Sigma_b)
    mean_c = n * population_p
    second_c = n * (n - 1) * np.outer(population_p, population_p) + np.diag(mean_c)
    mean_t = trace @ mean_c
    expected_conditional_var = mean_c @ var_norm + 2 * (
        (second_c * m).sum() - mean_c @ np.diag(m)
    )
    var_of_conditional_mean = trace @ (n * (np.diag(population_p)
                                            - np.outer(population_p, population_p))) @ trace
    return mean_t / scale, (expected_conditional_var + var_of_conditional_mean) / scale**2


def run(setup, reps, seed):
    return run_unit(setup, reps, np.random.default_rng(seed))


# ---------------------------------------------------------------------------------------------
# Metrics
# ---------------------------------------------------------------------------------------------
def test_targets_and_metric_definitions():
    assert {"frequency", "mean", "sum"} <= set(TARGETS.names())
    estimate = np.array([[0.5, 0.2, 0.3], [0.0, 0.0, 1.0]])
    truth = np.array([0.4, 0.4, 0.2])
    metrics = FrequencyTarget().metrics(estimate, truth)
    diff = estimate - truth
    np.testing.assert_allclose(metrics["l2"], np.sqrt((diff**2).sum(axis=1)))
    np.testing.assert_allclose(metrics["linf"], [0.2, 0.8])
    np.testing.assert_allclose(metrics["mse"], (diff**2).mean(axis=1))
    np.testing.assert_allclose(metrics["mae"], np.abs(diff).mean(axis=1))
    scalar = MeanTarget().metrics(np.array([1.0, 3.0]), np.array([2.0, 2.0]))
    np.testing.assert_allclose(scalar["error"], [-1.0, 1.0])
    np.testing.assert_allclose(scalar["mse"], [1.0, 1.0])
    np.testing.assert_allclose(scalar["mae"], [1.0, 1.0])
    zipf = Zipf(domain_size=3, exponent=1.0)
    assert SumTarget().population(zipf, 10, None) == pytest.approx(10 * zipf.population_mean())
    np.testing.assert_allclose(FrequencyTarget().population(zipf, 10, 5)[3:], 0.0)


def test_sorted_values_realise_the_histograms():
    counts = np.array([[2, 0, 1], [0, 3, 0]])
    np.testing.assert_array_equal(sorted_values(counts), [[0, 0, 2], [1, 1, 1]])


# ---------------------------------------------------------------------------------------------
# Exactness of the batch path
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("path, shuffle", [
    ("reports", "perform"), ("reports", "skip"), ("aggregate", "perform"),
])
def test_krr_l2_error_has_the_exact_mean(path, shuffle):
    reps = 4000
    setup = make_setup(d=5, n=150, eps=0.9, path=path, shuffle=shuffle)
    p = setup.data.probabilities()
    mean, var = krr_l2_squared_moments(setup.randomizer, p, setup.n)
    l2 = run(setup, reps, 7)[("l2", "empirical")]
    assert abs(np.mean(l2**2) - mean) < SIGMAS * np.sqrt(var / reps)
    # Against the population: E||f_hat - p||^2 = E||f_hat - f||^2 + (1 - sum p^2) / n.
    l2_pop = run(setup, reps, 8)[("l2", "population")] ** 2
    expected_pop = mean + (1 - (p**2).sum()) / setup.n
    assert abs(l2_pop.mean() - expected_pop) < SIGMAS * l2_pop.std() / np.sqrt(reps)


def test_krr_exact_variance_formula_matches_enumeration():
    """The moment formula used above, against brute force over all outcomes for n = 2."""
    krr = make_randomizer("krr", epsilon0=0.7, domain_size=3)
    p = np.array([0.5, 0.3, 0.2])
    n = 2
    P = krr.output_pmf()
    p_star, q_star = krr.support_probabilities()
    values = []
    weights = []
    for x in itertools.product(range(3), repeat=n):
        for y in itertools.product(range(3), repeat=n):
            w = np.prod([p[xi] * P[xi, yi] for xi, yi in zip(x, y, strict=True)])
            f = np.bincount(x, minlength=3) / n
            f_hat = (np.bincount(y, minlength=3) / n - q_star) / (p_star - q_star)
            values.append(((f_hat - f) ** 2).sum())
            weights.append(w)
    values, weights = np.array(values), np.array(weights)
    mean = weights @ values
    var = weights @ (values - mean) ** 2
    exact_mean, exact_var = krr_l2_squared_moments(krr, p, n)
    assert exact_mean == pytest.approx(mean, rel=1e-12)
    assert exact_var == pytest.approx(var, rel=1e-10)


# multi-message randomizers: their own paths test (tests/test_multi_message_randomizers.py)
SAMPLER_RANDOMIZERS = [n for n in randomizer_names() if randomizer_class(n).has_aggregate_sampler
                       and not getattr(randomizer_class(n), "multi_message", False)]
FREQUENCY_ORACLES = [
    n for n in randomizer_names()
    if hasattr(randomizer_class(n), "support_probabilities")
]


@pytest.mark.parametrize("name", SAMPLER_RANDOMIZERS)
def test_reports_and_aggregate_paths_agree_in_distribution(name):
    d = example_randomizer(name).input_domain.size  # brr: 2; the others: their example's
    reps = 2000
    results = {
        path: run(make_setup(randomizer=name, d=d, n=120, eps=1.2, path=path), reps, 11)
        for path in ("reports", "aggregate")
    }
    for key in [("l2", "empirical"), ("linf", "empirical"), ("l2", "population")]:
        a, b = results["reports"][key], results["aggregate"][key]
        assert stats.ks_2samp(a, b).pvalue > ALPHA, (name, key)


@pytest.mark.parametrize("name", FREQUENCY_ORACLES)
def test_every_frequency_oracle_has_the_exact_mean_squared_error(name):
    """E||f_hat - f||^2 = [p*(1-p*) + (d-1) q*(1-q*)] / (n (p* - q*)^2) for i.i.d. data,
    whatever the histogram (the per-value variances sum to it since sum_v n_v = n)."""
    d = example_randomizer(name).input_domain.size
    reps = 2000
    setup = make_setup(randomizer=name, d=d, n=100, eps=1.0)
    p_star, q_star = setup.randomizer.support_probabilities()
    exact = (p_star * (1 - p_star) + (d - 1) * q_star * (1 - q_star)) / (
        setup.n * (p_star - q_star) ** 2)
    l2_squared = run(setup, reps, 13)[("l2", "empirical")] ** 2
    assert abs(l2_squared.mean() - exact) < SIGMAS * l2_squared.std() / np.sqrt(reps)


def test_randomizer_domain_larger_than_the_data():
    """Values the data never take have frequency 0 in both references."""
    setup = make_setup(d=5, n=150, eps=0.9, extra="domain_size = 8")
    assert setup.domain_size == 8
    p = np.pad(setup.data.probabilities(), (0, 3))
    mean, var = krr_l2_squared_moments(setup.randomizer, p, setup.n)
    reps = 3000
    l2 = run(setup, reps, 31)[("l2", "empirical")]
    assert abs(np.mean(l2**2) - mean) < SIGMAS * np.sqrt(var / reps)


def test_user_slices_keep_the_distribution():
    """A memory budget smaller than one repetition splits the users into slices."""
    base = make_setup(d=5, n=150, eps=0.9, shuffle="skip")
    sliced = dataclasses.replace(base, memory_bytes=60 * base.bytes_per_user)
    reps = 1000
    mean, var = krr_l2_squared_moments(base.randomizer, base.data.probabilities(), base.n)
    l2 = run(sliced, reps, 17)[("l2", "empirical")]
    assert abs(np.mean(l2**2) - mean) < SIGMAS * np.sqrt(var / reps)


def test_shuffle_needs_one_repetition_in_memory():
    text = scenario_text(n=600_000, reps=1) + "memory_mb = 16\n"
    settings = parse_scenario(text).points[0].settings
    with pytest.raises(ScenarioError, match='batch.shuffle = "skip"') as info:
        BatchSetup.from_settings(settings)
    assert info.value.key == "batch.shuffle"
    skip = parse_scenario(text.replace('shuffle = "perform"', 'shuffle = "skip"'))
    setup = BatchSetup.from_settings(skip.points[0].settings)
    assert setup.unit_repetitions == 1


@dataclasses.dataclass(frozen=True)
class _PerUserBudget(ConstantBudget):
    """Constant in value but handed to the randomizer as a per-user array."""

    name = "test_per_user"

    @property
    def is_constant(self):
        return False


def test_per_user_budgets_reach_the_randomizer():
    base = make_setup(d=5, n=150, eps=0.9)
    setup = dataclasses.replace(base, budget=_PerUserBudget(epsilon0=0.9))
    reps = 3000
    mean, var = krr_l2_squared_moments(base.randomizer, base.data.probabilities(), base.n)
    l2 = run(setup, reps, 19)[("l2", "empirical")]
    assert abs(np.mean(l2**2) - mean) < SIGMAS * np.sqrt(var / reps)
    with pytest.raises(Exception, match="personalized"):
        run(dataclasses.replace(setup, randomizer=make_randomizer("subset", epsilon0=0.9,
                                                                    domain_size=5)), 2, 1)


def _clipped_normal_variance(dist):
    z = stats.norm(dist.mean, dist.std)
    inner, _ = integrate.quad(lambda x: x * x * z.pdf(x), dist.low, dist.high)
    second = dist.low**2 * z.cdf(dist.low) + inner + dist.high**2 * z.sf(dist.high)
    return second - dist.population_mean() ** 2


def test_numeric_mean_and_sum_errors():
    data = '{ distribution = "clipped_normal", mean = 0.4, std = 0.3, low = 0.0, high = 1.0 }'
    reps = 3000
    for estimator, scale in (("mean", 1.0), ("sum", 400.0)):
        setup = make_setup(randomizer="laplace", n=400, eps=1.5, estimator=estimator, data=data)
        out = run(setup, reps, 23)
        # Laplace noise: the mean estimate's exact variance is 2 / (eps^2 n).
        exact = scale**2 * 2 / (1.5**2 * 400)
        err = out[("error", "empirical")]
        assert abs(err.mean()) < SIGMAS * np.sqrt(exact / reps)
        sq = out[("mse", "empirical")]
        assert abs(sq.mean() - exact) < SIGMAS * sq.std() / np.sqrt(reps)
        np.testing.assert_allclose(out[("mae", "empirical")], np.abs(err))
        pop = out[("error", "population")]
        population_var = exact + scale**2 * _clipped_normal_variance(setup.data) / 400
        assert abs(pop.mean()) < SIGMAS * np.sqrt(population_var / reps)


def test_categorical_data_feed_interval_randomizers_as_numbers():
    setup = make_setup(randomizer="laplace", d=2, n=300, eps=2.0, estimator="mean")
    out = run(setup, 2000, 29)
    err = out[("error", "empirical")]
    assert abs(err.mean()) < SIGMAS * np.sqrt(2 / (4.0 * 300) / 2000)


# ---------------------------------------------------------------------------------------------
# Units, seeds and the runner
# ---------------------------------------------------------------------------------------------
def test_units_are_reproducible_and_independent_of_order():
    scenario = parse_scenario(
        scenario_text(reps=70) + 'chunk_repetitions = 16\n[sweep]\n"population.n" = [50, 80]\n'
    )
    tables = run_scenario(scenario)["utility"]
    again = run_scenario(scenario)["utility"]
    assert tables.equals(again)
    # Running the units of point 1 in reverse order gives the same values.
    point = scenario.points[1]
    setup = BatchSetup.from_settings(point.settings)
    units = plan_units(point, setup)
    assert [u.repetitions for u in units] == [16, 16, 16, 16, 6]
    assert [u.start for u in units] == [0, 16, 32, 48, 64]
    reversed_results = {u.chunk: execute_unit(setup, u, scenario.seed) for u in units[::-1]}
    l2 = np.concatenate([reversed_results[u.chunk][("l2", "empirical")] for u in units])
    frame = tables.to_pandas()
    mine = frame[(frame.point == 1) & (frame.metric == "l2") & (frame.reference == "empirical")]
    np.testing.assert_array_equal(mine.sort_values("repetition").value.to_numpy(), l2)
    other = run_scenario(scenario.with_seed(6))["utility"]
    assert not other.column("value").equals(tables.column("value"))


def test_unit_seeds_follow_the_spawn_tree():
    scenario = parse_scenario(scenario_text(reps=3))
    point = scenario.points[0]
    unit = plan_units(point, BatchSetup.from_settings(point.settings))[0]
    child = np.random.SeedSequence(scenario.seed).spawn(1)[0].spawn(1)[0]
    assert unit.seed_sequence(scenario.seed).generate_state(4).tolist() == (
        child.generate_state(4).tolist())


def test_utility_rows_layout():
    sweep = '[sweep]\n"population.budget.epsilon0" = [0.5, 2.0]\n'
    scenario = parse_scenario(scenario_text(reps=3) + sweep)
    table = run_scenario(scenario)["utility"]
    assert table.num_rows == 2 * 3 * 4 * 2
    frame = table.to_pandas()
    first = frame[frame.point == 0]
    assert first.repetition.tolist()[:8] == [0] * 8
    assert first.metric.tolist()[:8] == ["l2", "linf", "mse", "mae"] * 2
    assert first.reference.tolist()[:8] == ["empirical"] * 4 + ["population"] * 4
    assert set(frame.epsilon0) == {0.5, 2.0}
    assert frame.overrides.iloc[-1] == '{"population.budget.epsilon0":2.0}'
    assert (frame.path == "reports").all() and (frame.randomizer == "krr").all()
    np.testing.assert_allclose(
        frame[frame.metric == "mse"].value.to_numpy(),
        frame[frame.metric == "l2"].value.to_numpy() ** 2 / 6,
    )


def test_paths_are_exposed_as_enums():
    assert make_setup(path="aggregate").path is BatchPath.AGGREGATE
    assert make_setup(shuffle="skip").shuffle is ShuffleMode.SKIP


def test_memory_plan_is_measured_once_per_setup(monkeypatch):
    """The memory plan decides the random streams, so a setup's measurement is kept: a later
    build of the same setup (e.g. while a Dask client's thread allocates) reuses it."""
    import shufflesim.simulator.batch.run as batch

    monkeypatch.setattr(batch, "_MEASURED", {})
    calls = []
    real = batch._measure
    monkeypatch.setattr(batch, "_measure", lambda setup: calls.append(setup.n) or real(setup))
    first, again, other = (make_setup(n=6000), make_setup(n=6000), make_setup(n=7000))
    assert first.bytes_per_user == again.bytes_per_user > 0
    assert calls == [6000, 7000]
    assert other.bytes_per_user > 0
