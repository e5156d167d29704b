"""Issue 13 item 1, acceptance: a randomizer is the home of its own analysis.

A toy 3-output mechanism is defined here, in the test module, and registered in one place (the
registry's ``register`` decorator, applied by a fixture that undoes it afterwards so that other
tests see the built-in registry). Without touching any other file it then goes through

* ``shufflesim run`` (CLI) and ``run_scenario``: the batch path, a ``[pipeline]`` section, and a
  scenario with per-user budgets, a personalized estimator and personalized bounds;
* ``shufflesim bound`` with optimal-blanket and exact-lower (upper >= lower), and the
  variation-ratio bound with the row the toy declares;
* ``shufflesim audit`` at the randomizer, shuffle and pipeline levels;
* the personalized estimators (GSPA and the tagged weightings) from its declared support.

The toy, "exclusion response": over inputs {0, 1, 2} it reports a value *other* than its input
with probability b each and the input itself with probability a, b / a = e^eps0
(a = 1 / (1 + 2 e^eps0)). A report y supports every value except y, so a value is supported
w.p. p* = 2b when it is the input and q* = a + b otherwise: a frequency oracle with
p* - q* = b - a > 0. It declares nothing about its decomposition (finite outputs: the discrete
default) nor about its symmetry (every neighbour pair is enumerated).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import numpy as np
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from shufflesim.protocols.bounds.numerical import decompositions, optimal, variation_ratio
from shufflesim.protocols.estimators import make_estimator
from shufflesim.protocols.randomizers import (
    Categorical,
    Randomizer,
    make_randomizer,
    randomizer_names,
)
from shufflesim.protocols.randomizers.analysis import DISCRETE_PMF, VariationRatioRow, ldp_row
from shufflesim.protocols.randomizers.registry import register, unregister
from shufflesim.simulator.cli import main

NAME = "exclusion3"


@dataclass(frozen=True)
class ExclusionResponse(Randomizer):
    """The toy of the module docstring: 3 inputs, 3 outputs, per-user budgets."""

    epsilon0: float

    name = NAME
    supports_personalized = True

    @property
    def input_domain(self) -> Categorical:
        return Categorical(3)

    @property
    def output_size(self) -> int:
        return 3

    @staticmethod
    def _levels(eps):
        """(a, b): P[y = x] and P[y = v] for each v != x."""
        e = np.exp(np.asarray(eps, dtype=float))
        return 1.0 / (1.0 + 2.0 * e), e / (1.0 + 2.0 * e)

    # -- sampling and the declared distribution ----------------------------------------------
    def randomize(self, values, rng, epsilon=None):
        values = self.check_values(values)
        a, _ = self._levels(self._epsilon_array(values, epsilon))
        keep = rng.random(values.shape) < a
        shift = rng.integers(1, 3, size=values.shape)  # one of the two other values, uniformly
        return np.where(keep, values, (values + shift) % 3)

    def aggregate(self, outputs):
        """Support counts: C_v = number of reports other than v."""
        outputs = np.asarray(outputs)
        counts = np.stack([(outputs == v).sum(axis=-1) for v in range(3)], axis=-1)
        return outputs.shape[-1] - counts

    def log_prob(self, x, y):
        a, b = self._levels(self.epsilon0)
        return np.where(np.asarray(x) == np.asarray(y), np.log(a), np.log(b))

    def output_index(self, outputs):
        return np.asarray(outputs, dtype=np.int64)

    def outputs_from_index(self, index):
        return np.asarray(index, dtype=np.int64)

    # -- what the estimators read --------------------------------------------------------------
    def support_probabilities(self, epsilon=None):
        p, q = self.support_arrays(self.epsilon0 if epsilon is None else epsilon)
        return float(p), float(q)

    def support_arrays(self, epsilon):
        a, b = self._levels(epsilon)
        return 2.0 * b, a + b

    def weighted_support(self, reports, scale):
        reports = np.asarray(reports)
        scale = np.asarray(scale, dtype=float)
        named = np.stack([(scale * (reports == v)).sum(axis=-1) for v in range(3)], axis=-1)
        return scale.sum(axis=-1)[..., None] - named

    # -- what the variation-ratio bound reads ---------------------------------------------------
    def variation_ratio_parameters(self) -> VariationRatioRow:
        """TV(R(x), R(x')) = b - a = (e^eps0 - 1) / (2 e^eps0 + 1) (from the definition)."""
        tv = math.expm1(self.epsilon0) / (2 * math.exp(self.epsilon0) + 1)
        return ldp_row(self.epsilon0, tv, "toy: exact total variation")


@pytest.fixture(scope="module", autouse=True)
def toy_registered():
    """The one registration (the registry decorator), undone after this module's tests."""
    before = randomizer_names()
    register(ExclusionResponse)
    yield
    unregister(NAME)
    assert randomizer_names() == before


def _cli(*args):
    result = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


# -- the declarations ----------------------------------------------------------------------------
def test_declarations_and_defaults():
    r = make_randomizer(NAME, epsilon0=1.0)
    assert decompositions.decomposition_family(r) is DISCRETE_PMF  # the default
    cand = decompositions.neighbour_candidates(r)
    assert cand.exhaustive and set(cand.pairs) == {(0, 1), (0, 2), (1, 2)}
    assert NAME in decompositions.supported_randomizers()
    assert NAME in variation_ratio.specific_parameter_names()
    params = variation_ratio.parameters_for(r)
    assert params.source == "toy: exact total variation"
    pmf = r.output_pmf()
    tv = max(float(np.clip(pmf[i] - pmf[j], 0, None).sum()) for i in range(3) for j in range(3))
    assert params.beta == pytest.approx(tv, rel=1e-9)
    assert r.bytes_per_user == 8 and r.has_weighted_support


def test_not_supported_answers():
    """What a randomizer does not declare is refused with a message naming what is missing, or
    falls back to the generic answer."""
    from shufflesim.protocols.errors import ParameterError

    @dataclass(frozen=True)
    class Opaque(ExclusionResponse):  # no enumerable outputs, no row, no support
        name = "opaque"

        @property
        def output_size(self):
            return None

        def variation_ratio_parameters(self):
            return None

        def support_arrays(self, epsilon):
            return None

    r = Opaque(1.0)
    with pytest.raises(ParameterError, match="opaque declares no decomposition"):
        decompositions.neighbour_candidates(r)
    assert not decompositions.has_decomposition(r)
    assert variation_ratio.parameters_for(r) == variation_ratio.generic_parameters(1.0)
    with pytest.raises(ParameterError, match="support_arrays"):
        make_estimator("gspa_frequency", r)
    with pytest.raises(ParameterError, match="weighted_support"):
        make_estimator("uniform_frequency", make_randomizer("olh", epsilon0=1.0, domain_size=4))


def test_bounds_through_the_python_api():
    r = make_randomizer(NAME, epsilon0=1.5)
    upper = optimal.optimal_blanket_epsilon(r, 500, 1e-6)
    lower = optimal.exact_lower_epsilon(r, 500, 1e-6)
    assert 0 < lower.epsilon <= upper.epsilon < 1.5
    assert upper.status.value == "proven"


# -- bound: CLI ----------------------------------------------------------------------------------
def test_bound_cli_optimal_and_exact():
    result = _cli("bound", "--randomizer", NAME, "--epsilon0", "1.5", "--n", "500",
                  "--delta", "1e-6", "--method", "optimal-blanket", "--method", "exact-lower",
                  "--method", "variation-ratio", "--json")
    records = {r["method"]: r for r in json.loads(result.stdout)}
    upper, lower = records["optimal-blanket"], records["exact-lower"]
    assert upper["kind"] == "upper" and lower["kind"] == "lower"
    assert upper["status"] == "proven" and lower["status"] == "proven"
    assert 0 < lower["epsilon"] <= upper["epsilon"] < 1.5
    assert "toy: exact total variation" in records["variation-ratio"]["note"]
    assert not upper.get("below_proven_lower")


# -- audit: CLI, three levels --------------------------------------------------------------------
def test_audit_randomizer_level():
    result = _cli("audit", "--randomizer", NAME, "--epsilon0", "1.5", "--level", "randomizer",
                  "--trials", "20000", "--json")
    records = json.loads(result.stdout)
    attacks = [r for r in records if r["row_type"] == "attack"]
    assert len({r["direction"] for r in attacks}) == 6  # every ordered pair of the 3 inputs
    assert all(0 <= r["epsilon_lb"] <= 1.5 for r in attacks)
    verdicts = [r for r in records if r["row_type"] == "verdict"]
    assert verdicts and all(r["verdict"] != "violated" for r in verdicts)


@pytest.mark.parametrize("level", ["shuffle", "pipeline"])
def test_audit_shuffle_and_pipeline_levels(level):
    result = _cli("audit", "--randomizer", NAME, "--epsilon0", "2", "--n", "30",
                  "--delta", "1e-3", "--trials", "4000", "--level", level,
                  "--bound", "optimal-blanket", "--json", "--quiet")
    records = json.loads(result.stdout)
    attacks = [r for r in records if r["row_type"] == "attack"]
    verdicts = {r["bound"]: r for r in records if r["row_type"] == "verdict"}
    assert attacks and all(0 <= r["epsilon_lb"] <= r["exact_lower"] + 1e-9 for r in attacks)
    assert verdicts["optimal-blanket"]["verdict"] == "consistent"
    assert (verdicts["exact-lower"]["bound_epsilon"]
            <= verdicts["optimal-blanket"]["bound_epsilon"])


# -- run: CLI, batch path, [pipeline], personalized budgets --------------------------------------
BATCH = f"""
name = "toy-batch"
seed = 11
repetitions = 40
[population]
n = 2000
data = {{ distribution = "uniform", domain_size = 3 }}
budget = {{ distribution = "constant", epsilon0 = 1.0 }}
[randomizer]
name = "{NAME}"
[estimator]
name = "frequency"
[bounds]
delta = 1e-6
methods = ["optimal-blanket", "exact-lower"]
"""

PIPELINE = f"""
name = "toy-pipeline"
seed = 12
repetitions = 2
[population]
n = 400
data = {{ distribution = "uniform", domain_size = 3 }}
budget = {{ distribution = "constant", epsilon0 = 2.0 }}
[randomizer]
name = "{NAME}"
[estimator]
name = "frequency"
[pipeline]
arrival = "poisson"
window = 60.0
batch_size = 100
timeout = 30.0
delta = 1e-6
"""

PERSONALIZED = f"""
name = "toy-personalized"
seed = 13
repetitions = 40
[population]
n = 1000
data = {{ distribution = "uniform", domain_size = 3 }}
budget = {{ distribution = "groups", fractions = [0.5, 0.5], epsilons = [0.5, 2.0] }}
[randomizer]
name = "{NAME}"
[estimator]
name = "gspa_frequency"
[bounds]
delta = 1e-6
[sweep]
"estimator.name" = ["gspa_frequency", "weighted_frequency", "uniform_frequency"]
"""


def _run(tmp_path, text):
    path = tmp_path / "scenario.toml"
    path.write_text(text)
    out = tmp_path / "results"
    # one worker: spawned worker processes would not see a randomizer registered by a test
    _cli("run", path, "--out", out, "--workers", "1", "--quiet")
    name = text.split('name = "', 1)[1].split('"', 1)[0]
    return out / name


def _frequency_errors_are_small(utility, tolerance):
    table = utility.to_pandas()
    mae = table[(table["metric"] == "mae") & (table["reference"] == "empirical")]["value"]
    assert len(mae) > 0 and np.isfinite(mae).all()
    assert mae.mean() < tolerance


def test_run_batch_path(tmp_path):
    results = _run(tmp_path, BATCH)
    _frequency_errors_are_small(pq.read_table(results / "utility.parquet"), 0.1)
    bounds = pq.read_table(results / "bounds.parquet").to_pandas().set_index("method")
    assert bounds.loc["exact-lower", "epsilon"] <= bounds.loc["optimal-blanket", "epsilon"] < 1.0


def test_run_pipeline_section(tmp_path):
    results = _run(tmp_path, PIPELINE)
    batches = pq.read_table(results / "batches.parquet").to_pandas()
    assert len(batches) > 0
    assert ((batches["epsilon"] > 0) & (batches["epsilon"] <= 2.0 + 1e-9)).all()
    assert pq.read_table(results / "utility.parquet").num_rows > 0


def test_run_personalized_budgets(tmp_path):
    results = _run(tmp_path, PERSONALIZED)
    utility = pq.read_table(results / "utility.parquet").to_pandas()
    assert set(utility["estimator"]) == {"gspa_frequency", "weighted_frequency",
                                         "uniform_frequency"}
    _frequency_errors_are_small(pq.read_table(results / "utility.parquet"), 0.15)
    bounds = pq.read_table(results / "bounds.parquet").to_pandas()
    methods = set(bounds["method"])
    assert {"optimal-blanket-tagged", "baseline-min-budget", "gspa-gdp-personalized"} <= methods
    computed = bounds[np.isfinite(bounds["epsilon"].astype(float))]
    assert len(computed) > 0 and (computed["epsilon"] <= 2.0 + 1e-9).all()


# -- the personalized estimators, from the declared support --------------------------------------
@pytest.mark.parametrize("estimator", ["gspa_frequency", "uniform_frequency",
                                       "weighted_frequency"])
def test_personalized_estimators_are_unbiased(estimator):
    r = make_randomizer(NAME, epsilon0=2.0)
    est = make_estimator(estimator, r)
    rng = np.random.default_rng(5)
    n, reps = 600, 400
    values = rng.integers(0, 3, size=n)
    eps = rng.choice([0.5, 1.0, 2.0], size=n)
    reports = r.randomize(np.broadcast_to(values, (reps, n)), rng,
                          np.broadcast_to(eps, (reps, n)))
    estimates = est.estimate_reports(reports, np.broadcast_to(eps, (reps, n)))
    expected = est.expectation(values, eps)
    variance = est.variance(values, eps)
    np.testing.assert_allclose(estimates.mean(axis=0), expected,
                               atol=6 * np.sqrt(variance.max() / reps))
    np.testing.assert_allclose(estimates.var(axis=0), variance, rtol=0.25)
