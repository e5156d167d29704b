"""Approximate LDP end to end (issue 15, item 4): the ``gaussian`` local randomizer for bounded
means, its analytic calibration, the (eps0, delta0) bounds of the catalogue (002 Thm 3.8,
003 Thm 2) and every pure-LDP bound's refusal, from the command line and from a scenario."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from scipy import integrate, stats

from shufflesim.protocols import learning
from shufflesim.protocols.accounting.compose import Round, compose_rounds
from shufflesim.protocols.bounds import catalogue
from shufflesim.protocols.bounds.closed_form import fmt21
from shufflesim.protocols.bounds.personalized.bounds import PersonalizedUsers
from shufflesim.protocols.bounds.personalized.profile import BudgetProfile
from shufflesim.protocols.bounds.spec import randomizer_delta0
from shufflesim.protocols.errors import ParameterError
from shufflesim.protocols.estimators import make_estimator
from shufflesim.protocols.randomizers import make_randomizer, randomizer_class
from shufflesim.protocols.randomizers.gaussian import (
    Gaussian,
    analytic_gaussian_sigma,
    gaussian_delta,
)
from shufflesim.protocols.randomizers.krr import KRR
from shufflesim.simulator.audit.randomizer_level import RandomizerAuditOptions, audit_randomizer
from shufflesim.simulator.cli import main

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "scenarios" / "gaussian_mean.toml"


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def hockey_stick_by_quadrature(sigma: float, epsilon: float, sensitivity: float) -> float:
    """int (phi_sigma(y) - e^eps phi_sigma(y - Delta))_+ dy by quadrature (independent of the
    closed form): the integrand is positive left of the crossing point."""
    crossing = sensitivity / 2 - epsilon * sigma ** 2 / sensitivity
    p = stats.norm(0.0, sigma)
    q = stats.norm(sensitivity, sigma)

    def gap(y):
        return p.pdf(y) - math.exp(epsilon) * q.pdf(y)
    parts = [(crossing - 40 * sigma, crossing - 10 * sigma), (crossing - 10 * sigma, crossing)]
    return sum(integrate.quad(gap, a, b, epsabs=1e-16, epsrel=1e-11, limit=400)[0]
               for a, b in parts)


# -- calibration ----------------------------------------------------------------------------------
@pytest.mark.parametrize("epsilon0,delta0,sensitivity", [
    (0.1, 1e-5, 1.0), (1.0, 1e-5, 1.0), (1.0, 1e-12, 2.0), (3.0, 1e-3, 0.5), (8.0, 1e-8, 1.0)])
def test_sigma_meets_the_analytic_condition_and_is_the_smallest(epsilon0, delta0, sensitivity):
    sigma = float(analytic_gaussian_sigma(epsilon0, delta0, sensitivity))
    # delta(eps0) = delta0 numerically, on the feasible side
    assert gaussian_delta(sigma, epsilon0, sensitivity) <= delta0
    assert gaussian_delta(sigma, epsilon0, sensitivity) == pytest.approx(delta0, rel=1e-8)
    # the smallest such sigma: a hair less noise breaks the condition
    assert gaussian_delta(sigma * (1 - 1e-7), epsilon0, sensitivity) > delta0
    # the condition is the hockey-stick divergence (quadrature, not the Phi formula)
    assert hockey_stick_by_quadrature(sigma, epsilon0, sensitivity) == pytest.approx(
        delta0, rel=1e-6)
    # below Dwork-Roth's classical sigma wherever that one is valid (eps < 1)
    if epsilon0 < 1:
        assert sigma < learning.classical_gaussian_sigma(epsilon0, delta0, sensitivity)


def test_one_home_for_the_calibration():
    assert learning.analytic_gaussian_sigma is analytic_gaussian_sigma
    assert learning.gaussian_delta is gaussian_delta
    r = make_randomizer("gaussian", epsilon0=1.0, delta0=1e-5)
    gradient = learning.GaussianGradient(clip=0.5)  # sensitivity 2 clip = 1
    assert float(gradient.sigma(1.0, 1e-5)) == r.sigma


def test_randomizer_is_calibrated_at_its_range():
    r = make_randomizer("gaussian", epsilon0=0.7, delta0=1e-6, low=-1.0, high=3.0)
    assert r.sensitivity == 4.0
    assert r.sigma == float(analytic_gaussian_sigma(0.7, 1e-6, 4.0))
    unit = make_randomizer("gaussian", epsilon0=0.7, delta0=1e-6)
    assert r.sigma == pytest.approx(4.0 * unit.sigma, rel=1e-9)  # sigma scales with Delta
    assert r.delta_at(0.7) <= 1e-6 and float(r.delta_at(0.5)) > 1e-6
    assert [f.name for f in dataclasses.fields(Gaussian)] == ["epsilon0", "delta0", "low", "high"]


@pytest.mark.parametrize("params,field", [
    (dict(epsilon0=1.0, delta0=0.0), "delta0"), (dict(epsilon0=1.0, delta0=1.0), "delta0"),
    (dict(epsilon0=0.0, delta0=1e-6), "epsilon0"),
    (dict(epsilon0=1.0, delta0=1e-6, low=1.0, high=1.0), "high"),
    (dict(epsilon0=1.0, delta0=1e-6, high=math.inf), "high")])
def test_bad_parameters_name_their_field(params, field):
    with pytest.raises(ParameterError) as info:
        make_randomizer("gaussian", **params)
    assert info.value.field == field


def test_delta0_is_required():
    with pytest.raises(ParameterError) as info:
        make_randomizer("gaussian", epsilon0=1.0)
    assert info.value.field == "randomizer.delta0"


# -- sampling, density, estimators ----------------------------------------------------------------
def test_samples_fit_the_declared_density():
    r = make_randomizer("gaussian", epsilon0=1.3, delta0=1e-4, low=-0.5, high=1.5)
    rng = np.random.default_rng(15)
    for x in (-0.5, 0.2, 1.5):
        reports = r.randomize(np.full(20_000, x), rng)
        assert stats.kstest(reports, lambda t, x=x: r.cdf(x, t)).pvalue > 1e-3
    # log_prob is the density of cdf (numerical derivative) and integrates to 1
    t = np.linspace(-3 * r.sigma, 3 * r.sigma, 101)
    h = 1e-5 * r.sigma
    derivative = (r.cdf(0.2, t + h) - r.cdf(0.2, t - h)) / (2 * h)
    np.testing.assert_allclose(np.exp(r.log_prob(0.2, t)), derivative, rtol=1e-6)
    # negative control: a randomizer with 10% less noise is rejected
    wrong = dataclasses.replace(r)
    object.__setattr__(wrong, "sigma", 0.9 * r.sigma)
    reports = wrong.randomize(np.full(20_000, 0.2), rng)
    assert stats.kstest(reports, lambda s: r.cdf(0.2, s)).pvalue < 1e-6


def test_same_seed_same_reports_and_inputs_checked():
    r = make_randomizer("gaussian", epsilon0=1.0, delta0=1e-6)
    values = np.linspace(0, 1, 50)
    a = r.randomize(values, np.random.default_rng(3))
    np.testing.assert_array_equal(a, r.randomize(values, np.random.default_rng(3)))
    with pytest.raises(ParameterError):
        r.randomize(np.array([0.5, 1.2]), np.random.default_rng(3))
    with pytest.raises(ParameterError):  # no per-user budgets
        r.randomize(values, np.random.default_rng(3), epsilon=np.full(50, 1.0))


def test_mean_and_sum_estimators_unbiased_with_variance_sigma2_over_n():
    r = make_randomizer("gaussian", epsilon0=0.8, delta0=1e-6, low=-1.0, high=2.0)
    n, reps = 40, 20_000
    rng = np.random.default_rng(150)
    values = -1.0 + 3.0 * rng.random(n)
    values[:2] = (-1.0, 2.0)
    reports = r.randomize(np.broadcast_to(values, (reps, n)), rng)
    for name, truth, scale in (("mean", values.mean(), 1.0), ("sum", values.sum(), n)):
        estimator = make_estimator(name, r)
        estimates = estimator.estimate(r.aggregate(reports), n)
        variance = float(estimator.variance(values, n))
        assert variance == pytest.approx(scale ** 2 * r.sigma ** 2 / n, rel=1e-12)
        se = math.sqrt(variance / reps)
        assert abs(estimates.mean() - truth) < 4.5 * se
        # sample variance of a normal: standard error variance * sqrt(2 / (reps - 1))
        assert abs(estimates.var(ddof=1) - variance) < 4.5 * variance * math.sqrt(2 / (reps - 1))


def test_sum_sampler_agrees_with_the_reports():
    r = make_randomizer("gaussian", epsilon0=1.0, delta0=1e-5)
    values = np.linspace(0, 1, 30)
    rng = np.random.default_rng(9)
    direct = r.aggregate(r.randomize(np.broadcast_to(values, (5000, 30)), rng))
    sampled = r.sample_sum(np.full(5000, values.sum()), 30, rng)
    assert stats.ks_2samp(direct, sampled).pvalue > 1e-3
    shifted = r.sample_sum(np.full(5000, values.sum() + 0.3 * r.sigma * math.sqrt(30)), 30, rng)
    assert stats.ks_2samp(direct, shifted).pvalue < 1e-6  # the check can fail
    assert not randomizer_class("gaussian").has_aggregate_sampler  # histograms: categorical only


# -- the catalogue -------------------------------------------------------------------------------
def thm38_check(epsilon0, n, delta, delta0, eps):
    """002 Thm 3.8 read directly: some delta_in with eps0 <= log(n / (16 log(4/delta_in))) and
    eq. (1) at delta_in <= eps makes the total delta_in + (e^eps + 1)(1 + e^-eps0/2) n delta0 at
    most delta; we take the largest delta_in the budget allows."""
    d_in = delta - (math.exp(eps) + 1) * (1 + math.exp(-epsilon0) / 2) * n * delta0
    assert d_in > 0
    assert epsilon0 <= math.log(n / (16 * math.log(4 / d_in)))
    e0 = math.exp(epsilon0)
    eq1 = math.log(1 + (e0 - 1) / (e0 + 1) * (8 * math.sqrt(e0 * math.log(4 / d_in)) / math.sqrt(n)
                                              + 8 * e0 / n))
    return eq1, d_in


@pytest.mark.parametrize("epsilon0,n,delta,delta0", [
    (1.0, 10_000, 1e-6, 1e-12), (0.5, 100_000, 1e-6, 1e-13), (2.0, 10**6, 1e-5, 1e-13),
    (1.0, 10_000, 1e-6, 3e-11)])
def test_thm38_is_registered_and_valid(epsilon0, n, delta, delta0):
    spec = catalogue.get_bound("fmt21_approx_dp")
    assert spec.accepts_delta0 and "Thm 3.8" in spec.reference
    r = make_randomizer("gaussian", epsilon0=epsilon0, delta0=delta0)
    assert "fmt21_approx_dp" in [s.name for s in catalogue.applicable_bounds(r)]
    ev = catalogue.evaluate("fmt21_approx_dp", r, n, delta)
    assert ev.ok, ev.error
    eps = ev.result.epsilon
    eq1, _ = thm38_check(epsilon0, n, delta, delta0, eps)
    assert eq1 <= eps <= eq1 + 1e-8  # valid, and within the bisection's tolerance of the best
    # more delta0 costs: the pure bound at delta is smaller
    pure = fmt21.fmt21_closed_form(epsilon0, n, delta).epsilon
    assert pure <= eps
    # a pure randomizer gets Thm 3.1 (delta0 = 0)
    krr = make_randomizer("krr", epsilon0=epsilon0, domain_size=4)
    assert catalogue.evaluate("fmt21_approx_dp", krr, n, delta).result.epsilon == \
        pytest.approx(pure, rel=1e-9)


def test_thm38_refuses_when_n_delta0_eats_delta():
    r = make_randomizer("gaussian", epsilon0=1.0, delta0=1e-8)
    ev = catalogue.evaluate("fmt21_approx_dp", r, 10_000, 1e-6)
    assert not ev.ok and "delta0" in ev.error and "n delta0 < delta" in ev.error


def test_gdp_bound_takes_delta0():
    spec = catalogue.get_bound("gspa-gdp")
    assert spec.accepts_delta0
    pure = make_randomizer("krr", epsilon0=1.0, domain_size=4)
    approx = make_randomizer("gaussian", epsilon0=1.0, delta0=0.2)
    a = catalogue.evaluate("gspa-gdp", approx, 10_000, 1e-6)
    b = catalogue.evaluate("gspa-gdp", pure, 10_000, 1e-6)
    assert a.ok and b.ok and a.result.epsilon > b.result.epsilon  # mu grows by 1/sqrt(0.8)
    assert "delta0 = 0.2" in a.result.note


@dataclasses.dataclass(frozen=True)
class ApproximateKRR(KRR):
    """k-RR claimed (eps0, delta0)-LDP: a subject every pure-LDP bound must refuse."""

    delta0: float = 1e-9


def test_every_pure_ldp_bound_refuses_delta0():
    """From the registry: each bound with accepts_delta0 False refuses an (eps0, delta0)-LDP
    subject it would otherwise apply to, naming delta0; the others do not refuse for that."""
    gaussian = make_randomizer("gaussian", epsilon0=1.0, delta0=1e-9)
    krr = ApproximateKRR(1.0, 4, 1e-9)
    profile = BudgetProfile.from_groups([0.5, 1.0], [60, 40])
    users = PersonalizedUsers(ApproximateKRR(1.0, 4, 1e-9), profile)
    assert randomizer_delta0(users) == 1e-9 and randomizer_delta0(KRR(1.0, 4)) == 0.0
    refused, checked = set(), set()
    for spec in catalogue.all_bounds():
        # bounds of other kinds of randomizers (multi-message, metric DP) apply to none of
        # these subjects; every generic and personalized bound applies to one of them
        subjects = [s for s in (gaussian, krr, users) if spec.applies_to(s)]
        if subjects:
            checked.add(spec.name)
        for subject in subjects:
            ev = catalogue.evaluate(spec.name, subject, 100, 1e-6)
            reason = f"{spec.name} needs a pure eps0-LDP randomizer (delta0 = 0)"
            if spec.accepts_delta0:
                assert reason not in ev.error
            else:
                assert not ev.ok and ev.error.startswith(reason), (spec.name, ev.error)
                assert "delta0 = 1e-09" in ev.error
                refused.add(spec.name)
    assert {"optimal-blanket", "exact-lower", "fmt21_closed", "variation-ratio"} <= refused
    assert {s.name for s in catalogue.all_bounds() if s.scope in ("generic", "personalized")} \
        <= checked


def test_catalogue_listing_shows_delta0():
    text = catalogue.catalogue_markdown()
    assert "| delta0 > 0 |" in text
    rows = {line.split("|")[1].strip(" `"): line for line in text.splitlines()
            if line.startswith("| `")}
    for spec in catalogue.all_bounds():
        assert f"| {'yes' if spec.accepts_delta0 else 'no'} |" in rows[spec.name]
    assert (ROOT / "docs" / "bounds.md").read_text() == text  # docs/bounds.md regenerated
    listed = json.loads(invoke("list", "--json").output)["bounds"]
    assert listed["fmt21_approx_dp"]["delta0"] == "accepted"
    assert listed["optimal-blanket"]["delta0"].startswith("refused")


# -- the command line ----------------------------------------------------------------------------
def test_bound_command_lists_thm38():
    result = invoke("bound", "--randomizer", "gaussian", "--epsilon0", 1, "--delta0", 1e-12,
                    "--n", 10_000, "--delta", 1e-6, "--json", "-q")
    assert result.exit_code == 0, result.output
    records = {r["method"]: r for r in json.loads(result.output)}
    r = make_randomizer("gaussian", epsilon0=1.0, delta0=1e-12)
    assert records["fmt21_approx_dp"]["epsilon"] == pytest.approx(
        catalogue.evaluate("fmt21_approx_dp", r, 10_000, 1e-6).result.epsilon)
    assert records["optimal-blanket"]["epsilon"] is None
    assert "delta0 = 1e-12" in records["optimal-blanket"]["error"]
    # the brief's setting: listed, with Thm 3.8's own reason (n delta0 > delta)
    result = invoke("bound", "--randomizer", "gaussian", "--epsilon0", 1, "--delta0", 1e-8,
                    "--n", 10_000, "--delta", 1e-6, "-q")
    assert result.exit_code == 0
    assert "fmt21_approx_dp: not computed: delta0 = 1e-08: 002 Thm 3.8 needs" in result.output


@pytest.mark.parametrize("args,text", [
    (("--randomizer", "gaussian"), "--delta0 is required for gaussian"),
    (("--randomizer", "gaussian", "--delta0", 1.5), "--delta0 = 1.5: must lie in the open"),
    (("--randomizer", "krr", "--domain-size", 4, "--delta0", 1e-9),
     "--delta0 = 1e-09: krr is a pure eps0-LDP randomizer")])
def test_bound_command_bad_delta0_is_one_line(args, text):
    result = invoke("bound", *args, "--epsilon0", 1, "--n", 1000, "--delta", 1e-6, "-q")
    assert result.exit_code == 2
    assert text in result.output and len(result.output.strip().splitlines()) == 1


def test_bound_command_delta0_zero_for_a_pure_randomizer():
    result = invoke("bound", "--randomizer", "krr", "--domain-size", 4, "--epsilon0", 1,
                    "--delta0", 0, "--n", 1000, "--delta", 1e-6, "--method", "fmt21_closed",
                    "-q")
    assert result.exit_code == 0, result.output


# -- a scenario ----------------------------------------------------------------------------------
def test_run_the_gaussian_scenario(tmp_path):
    text = SCENARIO.read_text().replace("repetitions = 200", "repetitions = 40")
    text = text.replace("n = 10000", "n = 2000")
    assert "repetitions = 40" in text and "n = 2000" in text
    path = tmp_path / "gaussian_mean.toml"
    path.write_text(text)
    result = invoke("run", path, "--out", tmp_path / "out", "--workers", 1, "--quiet")
    assert result.exit_code == 0, result.output
    bounds = pq.read_table(tmp_path / "out" / "gaussian_mean" / "bounds.parquet").to_pylist()
    thm38 = [row for row in bounds if row["method"] == "fmt21_approx_dp"]
    assert [row["epsilon0"] for row in thm38] == [0.5, 1.0, 2.0]
    for row in thm38:
        r = make_randomizer("gaussian", epsilon0=row["epsilon0"], delta0=1e-12)
        if row["epsilon"] is not None:
            assert row["epsilon"] == pytest.approx(
                catalogue.evaluate("fmt21_approx_dp", r, 2000, 1e-6).result.epsilon)
        else:  # eps0 = 2 is outside Thm 3.8's regime at n = 2000
            assert "002 Thm 3.8" in row["error"]
    blanket = [row for row in bounds if row["method"] == "optimal-blanket"]
    assert blanket and all(row["epsilon"] is None and "delta0" in row["error"]
                           for row in blanket)
    utility = pq.read_table(tmp_path / "out" / "gaussian_mean" / "utility.parquet").to_pandas()
    mse = utility[(utility.metric == "mse") & (utility.reference == "empirical")]
    for eps0, group in mse.groupby("epsilon0"):
        sigma = make_randomizer("gaussian", epsilon0=float(eps0), delta0=1e-12).sigma
        expected = sigma ** 2 / 2000
        # mean of 40 squared normal errors: relative standard error sqrt(2 / 40)
        assert abs(group.value.mean() - expected) < 4.5 * expected * math.sqrt(2 / 40)


def test_scenario_bounds_section_refuses_a_delta0_key(tmp_path):
    path = tmp_path / "bad.toml"
    text = SCENARIO.read_text()
    assert text.count("\ndelta = 1e-6\n") == 1
    path.write_text(text.replace("\ndelta = 1e-6\n", "\ndelta = 1e-6\ndelta0 = 1e-9\n"))
    result = invoke("run", path, "--out", tmp_path / "out", "--workers", 1, "--quiet")
    assert result.exit_code == 2
    assert "bounds.delta0" in result.output and "randomizer.delta0" in result.output


# -- empirical check: the randomizer-level audit with its (eps0, delta0) statement -----------------
@dataclasses.dataclass(frozen=True)
class LeakyGaussian(Gaussian):
    """Declares the calibrated sigma but samples with half of it (planted fault)."""

    def randomize(self, values, rng, epsilon=None):
        values = self.check_values(values)
        return values + 0.5 * self.sigma * rng.standard_normal(np.shape(values))


def test_audit_with_delta0():
    """Samples of the worst pair (low, high) give an (eps0, delta0) lower bound: eps_lb <= eps0
    for the honest randomizer (at delta0) and above eps0 for the leaky one."""
    options = RandomizerAuditOptions(trials=40_000, confidence=0.999)
    honest = make_randomizer("gaussian", epsilon0=1.1, delta0=0.1, low=-0.5, high=1.5)
    pair = honest.neighbour_candidates().pairs[0]
    assert pair == (-0.5, 1.5)
    audit = audit_randomizer(honest, options, 1, inputs=pair, delta0=honest.delta0)
    assert not audit.ldp_violated and not audit.fit_rejected
    assert 0 < audit.epsilon_lb <= honest.epsilon0
    leaky = LeakyGaussian(1.1, 0.1, -0.5, 1.5)
    audit = audit_randomizer(leaky, options, 1, inputs=pair, delta0=leaky.delta0)
    assert audit.ldp_violated and audit.epsilon_lb > leaky.epsilon0 and audit.fit_rejected


def test_composition_over_rounds_refuses_delta0():
    """Every composed method composes pure eps0-LDP rounds (PLDs of decompositions, the clone
    reduction): an (eps0, delta0)-LDP round must not get a pure round's number."""
    r = make_randomizer("gaussian", epsilon0=1.0, delta0=1e-12)
    with pytest.raises(ParameterError) as info:
        compose_rounds([Round(r, 10_000, 3)], 1e-6, "fmt21-clone")
    assert info.value.field == "randomizer.delta0"
    result = invoke("bound", "--randomizer", "gaussian", "--epsilon0", 1, "--delta0", 1e-12,
                    "--n", 10_000, "--delta", 1e-6, "--rounds", 3, "--json", "-q")
    assert result.exit_code == 0, result.output
    records = json.loads(result.output)
    assert records and all(r["epsilon"] is None for r in records)
    assert any("delta0" in r["error"] for r in records if r["method"] == "fmt21-clone")


# -- a proven lower bound, and no proven upper bound below it ------------------------------------
def test_sum_lower_bound_is_the_sum_statistics_hockey_stick():
    r = make_randomizer("gaussian", epsilon0=2.0, delta0=0.01)
    n, delta = 2, 1e-2
    ev = catalogue.evaluate("gaussian-sum-lower", r, n, delta)
    assert ev.ok and ev.spec.kind.value == "lower" and ev.spec.accepts_delta0
    eps = ev.result.epsilon
    scale = r.sigma * math.sqrt(n)
    # quadrature (not the closed form): the sum's delta at eps is above delta, and a little
    # above eps it is below: the bound is the root, from below
    assert hockey_stick_by_quadrature(scale, eps, 1.0) > delta
    assert hockey_stick_by_quadrature(scale, eps * (1 + 1e-6), 1.0) < delta
    # Monte Carlo of the attack "sum > t" at the threshold where the two sum densities' ratio
    # is e^eps: P1(S) - e^eps P0(S) = delta (within 5 standard errors, which are < delta / 10)
    rng = np.random.default_rng(5)
    others = np.full(n - 1, 0.3)
    reps = 400_000
    s1 = r.sample_sum(np.full(reps, 1.0 + others.sum()), n, rng)
    s0 = r.sample_sum(np.full(reps, 0.0 + others.sum()), n, rng)
    t = others.sum() + 0.5 + eps * scale ** 2
    z = (s1 > t) - math.exp(eps) * (s0 > t)
    se = z.std() / math.sqrt(reps)
    assert se < delta / 10 and abs(z.mean() - delta) < 5 * se
    # and the bound of 2 users is below the randomizer's own eps0 (post-processing)
    assert eps < r.epsilon0


@pytest.mark.parametrize("epsilon0", [0.5, 1.0, 2.0])
@pytest.mark.parametrize("n", [10**4, 10**5])
@pytest.mark.parametrize("delta", [1e-6, 1e-8])
def test_no_proven_upper_bound_below_the_lower_bound(epsilon0, n, delta):
    r = make_randomizer("gaussian", epsilon0=epsilon0, delta0=delta / (100 * n))
    evaluations = catalogue.evaluate_many(r, n, delta)
    lower = [e.result.epsilon for e in evaluations
             if e.ok and e.spec.kind.value == "lower" and e.result.status.value == "proven"]
    upper = {e.spec.name: e.result.epsilon for e in evaluations
             if e.ok and e.spec.kind.value == "upper" and e.result.status.value == "proven"}
    assert lower and max(lower) > 0
    for name, eps in upper.items():
        assert eps >= max(lower), name
    if epsilon0 <= 1.0:  # Thm 3.8's regime holds there on this grid
        assert "fmt21_approx_dp" in upper
