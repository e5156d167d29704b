"""Conformance suite: every registered randomizer against its own declared distribution.

For each name in ``randomizer_names()``, built from the example parameters it declares
(``example``; a randomizer without them fails) the suite checks:

* reports lie in the declared output space (shape, index round trip, finite log_prob, and for
  continuous outputs the ``output_domain`` when declared);
* goodness of fit: discrete -> one chi-square statistic summed over the test inputs (cells with
  expected count < 5 pooled), continuous -> Kolmogorov-Smirnov per input against ``cdf(x, t)``
  (Bonferroni over the inputs); significance ALPHA, fixed seeds;
* eps0 is tight: the brute-force max over inputs x, x' and outputs y of
  log R(x)(y) - log R(x')(y) equals eps0 to 1e-12 (continuous: over a fine output grid that
  contains the extreme points);
* determinism under a seed; personalized budgets (an epsilon array equal to eps0 reproduces the
  declared distribution; a mixed array follows each user's own budget) or a clear refusal;
* aggregate(randomize(.)) and sample_aggregate(.) agree in distribution (two-sample chi-square
  per support count and on one linear projection, Bonferroni).

Expectations on randomizers (stated here for their authors): categorical or interval
``input_domain``; discrete ones implement ``output_index`` / ``outputs_from_index`` on the small
configurations below and accept explicit ``inputs`` in ``output_pmf``; continuous ones
(``output_kind == "continuous"``) implement ``cdf(x, t)`` and may declare ``output_domain``.

Negative controls at the end show that each statistical check rejects a deliberately wrong
randomizer, so these tests can fail.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from scipy import stats

from shufflesim.protocols.errors import ParameterError
from shufflesim.protocols.randomizers import (
    Categorical,
    randomizer_class,
    randomizer_names,
)
from shufflesim.protocols.randomizers.oue import OUE
from shufflesim.protocols.randomizers.registry import example_randomizer

#: Significance level of every statistical test in this module (per randomizer and check).
ALPHA = 1e-3

SAMPLES_PER_INPUT = 20_000


def _make(name: str, **override):
    return example_randomizer(name, **override)


def _test_inputs(randomizer) -> np.ndarray:
    """All categorical inputs; for an interval: endpoints, midpoint, an off-grid point and the
    randomizer's own extreme points (``grid_inputs``) when it declares them."""
    domain = randomizer.input_domain
    if isinstance(domain, Categorical):
        return np.arange(domain.size)
    low, high = domain.low, domain.high
    points = [low, high, 0.5 * (low + high), low + 0.37 * (high - low)]
    if hasattr(randomizer, "grid_inputs"):
        points.extend(randomizer.grid_inputs())
    return np.unique(np.asarray(points, dtype=float))


def _input_grid(randomizer) -> np.ndarray:
    """A fine input grid containing the extreme inputs (for the eps0 tightness check)."""
    domain = randomizer.input_domain
    if isinstance(domain, Categorical):
        return np.arange(domain.size)
    grid = np.linspace(domain.low, domain.high, 41)
    return np.unique(np.concatenate([grid, _test_inputs(randomizer)]))


def _is_continuous(randomizer) -> bool:
    return randomizer.output_kind == "continuous"


def _sample(randomizer, inputs, n, rng, epsilon=None):
    """Reports of n users per input: array (len(inputs), n) + output_shape."""
    values = np.repeat(np.asarray(inputs)[:, None], n, axis=1)
    return randomizer.randomize(values, rng, epsilon=epsilon)


def _pooled_chisquare(observed: np.ndarray, expected: np.ndarray) -> tuple[float, int]:
    """Chi-square statistic and degrees of freedom after pooling cells with expected < 5."""
    small = expected < 5
    obs, exp = observed[~small], expected[~small]
    if small.any():
        obs = np.append(obs, observed[small].sum())
        exp = np.append(exp, expected[small].sum())
        if exp[-1] < 5 and exp.size > 1:  # the pooled cell itself is small: merge it again
            j = int(np.argmin(exp[:-1]))
            obs[j] += obs[-1]
            exp[j] += exp[-1]
            obs, exp = obs[:-1], exp[:-1]
    if exp.size < 2:
        return 0.0, 0
    stat = stats.chisquare(obs, exp * obs.sum() / exp.sum()).statistic
    return float(stat), exp.size - 1


def discrete_gof_pvalue(randomizer, reference, inputs, rng, n=SAMPLES_PER_INPUT, epsilon=None):
    """p-value of 'reports of ``randomizer`` follow reference.output_pmf(inputs)' (one summed
    chi-square over the inputs)."""
    reports = _sample(randomizer, inputs, n, rng, epsilon)
    pmf = reference.output_pmf(np.asarray(inputs))
    total_stat, total_dof = 0.0, 0
    for i in range(len(inputs)):  # loop over the few test inputs
        observed = np.bincount(randomizer.output_index(reports[i]), minlength=pmf.shape[1])
        stat, dof = _pooled_chisquare(observed.astype(float), pmf[i] * n)
        total_stat += stat
        total_dof += dof
    return float(stats.chi2.sf(total_stat, total_dof))


def continuous_gof_pvalue(randomizer, reference, inputs, rng, n=SAMPLES_PER_INPUT, epsilon=None):
    """Bonferroni-combined KS p-value of the reports against reference.cdf(x, .)."""
    reports = _sample(randomizer, inputs, n, rng, epsilon)
    pvalues = [
        stats.kstest(reports[i], lambda t, x=x: reference.cdf(x, t)).pvalue
        for i, x in enumerate(inputs)
    ]
    return min(1.0, min(pvalues) * len(inputs))


def gof_pvalue(randomizer, reference, inputs, rng, epsilon=None):
    if _is_continuous(reference):
        return continuous_gof_pvalue(randomizer, reference, inputs, rng, epsilon=epsilon)
    return discrete_gof_pvalue(randomizer, reference, inputs, rng, epsilon=epsilon)


def max_log_ratio(randomizer, full_support: bool = True) -> float:
    """Brute force max over x, x', y of log R(x)(y) - log R(x')(y)."""
    inputs = _input_grid(randomizer)
    if _is_continuous(randomizer):
        lo, hi = _output_range(randomizer)
        outputs = np.unique(np.concatenate([np.linspace(lo, hi, 4001), inputs]))
        outputs = outputs[(outputs >= lo) & (outputs <= hi)]
    else:
        outputs = randomizer.outputs_from_index(np.arange(randomizer.output_size))
    log_p = randomizer.log_prob(
        inputs.reshape((-1,) + (1,)), outputs[None, ...]
    )  # (inputs, outputs)
    assert np.isfinite(log_p).all() or not full_support, \
        "declared distribution must have full support here"
    log_p = log_p[:, np.isfinite(log_p).any(axis=0)]  # outputs no input can produce: none
    return float((log_p.max(axis=0) - log_p.min(axis=0)).max())


def _output_range(randomizer) -> tuple[float, float]:
    """The declared output interval, or (for unbounded outputs) the input range widened by 3."""
    domain = randomizer.input_domain
    low, high = (0, domain.size - 1) if isinstance(domain, Categorical) else (domain.low,
                                                                             domain.high)
    out = getattr(randomizer, "output_domain", None)
    lo = out.low if out is not None and np.isfinite(out.low) else low - 3.0
    hi = out.high if out is not None and np.isfinite(out.high) else high + 3.0
    return float(lo), float(hi)


def aggregate_agreement_pvalue(randomizer, input_counts, repetitions, rng) -> float:
    """Bonferroni p-value for 'aggregate(randomize) and sample_aggregate have the same law':
    chi-square homogeneity on each support count and on sum_v (v + 1) C_v."""
    input_counts = np.asarray(input_counts)
    values = np.repeat(np.arange(input_counts.size), input_counts)
    batch = np.broadcast_to(values, (repetitions, values.size))
    direct = randomizer.aggregate(randomizer.randomize(batch, rng))
    sampled = randomizer.sample_aggregate(
        np.broadcast_to(input_counts, (repetitions, input_counts.size)), rng
    )
    assert direct.shape == sampled.shape
    weights = np.arange(1, direct.shape[-1] + 1)
    columns = [(direct[:, v], sampled[:, v]) for v in range(direct.shape[-1])]
    columns.append((direct @ weights, sampled @ weights))
    pvalues = []
    for a, b in columns:  # loop over the few statistics
        support = np.union1d(a, b)
        table = np.stack([
            np.bincount(np.searchsorted(support, a), minlength=support.size),
            np.bincount(np.searchsorted(support, b), minlength=support.size),
        ]).astype(float)
        expected = table.sum(axis=0)  # pool rare values, as for the one-sample test
        keep = expected >= 10
        if (~keep).any():
            table = np.column_stack([table[:, keep], table[:, ~keep].sum(axis=1)])
        table = table[:, table.sum(axis=0) > 0]
        if table.shape[1] < 2:
            pvalues.append(1.0)
            continue
        pvalues.append(stats.chi2_contingency(table, correction=False).pvalue)
    return min(1.0, min(pvalues) * len(pvalues))


NAMES = randomizer_names()


def test_every_registered_randomizer_declares_example_parameters():
    missing = sorted(n for n in NAMES if getattr(randomizer_class(n), "example", None) is None)
    assert not missing, f"declare example parameters (class attribute example) in {missing}"
    for name in NAMES:
        assert example_randomizer(name).name == name


@pytest.mark.parametrize("name", NAMES)
def test_outputs_lie_in_declared_space(name):
    r = _make(name)
    rng = np.random.default_rng(101)
    inputs = _test_inputs(r)
    reports = _sample(r, inputs, 500, rng)
    assert reports.shape == (len(inputs), 500) + r.output_shape
    log_p = r.log_prob(inputs[:, None], reports)
    assert log_p.shape == (len(inputs), 500)
    assert np.isfinite(log_p).all()
    if _is_continuous(r):
        out = getattr(r, "output_domain", None)
        if out is not None:
            assert (reports >= out.low).all() and (reports <= out.high).all()
    else:
        index = r.output_index(reports)
        assert index.dtype.kind == "i"
        assert (index >= 0).all() and (index < r.output_size).all()
        np.testing.assert_array_equal(r.output_index(r.outputs_from_index(index)), index)
        pmf = r.output_pmf(inputs)
        np.testing.assert_allclose(pmf.sum(axis=1), 1.0, atol=1e-12)


@pytest.mark.parametrize("name", NAMES)
def test_goodness_of_fit(name):
    r = _make(name)
    if getattr(r, "dimension", 1) == 2:
        pytest.skip("points of R^2: fit of radius, angle and projection in tests/test_metric_dp.py")
    pvalue = gof_pvalue(r, r, _test_inputs(r), np.random.default_rng(202))
    assert pvalue > ALPHA, f"{name}: reports do not follow the declared distribution (p={pvalue})"


@pytest.mark.parametrize("name", NAMES)
def test_epsilon0_is_tight(name):
    r = _make(name)
    if getattr(r, "dimension", 1) == 2:
        pytest.skip("points of R^2: tight metric guarantee checked in tests/test_metric_dp.py")
    if getattr(r, "delta0", 0) > 0:  # (eps0, delta0)-LDP: no finite log-ratio bound
        assert max_hockey_stick(r, r.epsilon0) == pytest.approx(r.delta0, rel=1e-4)
        return
    if getattr(r, "multi_message", False):  # eps0: a design target; LDP level log p (inf)
        assert max_log_ratio(r, full_support=False) == pytest.approx(r.local_epsilon, abs=1e-12)
        return
    assert max_log_ratio(r) == pytest.approx(r.epsilon0, abs=1e-12)


def max_hockey_stick(randomizer, epsilon: float) -> float:
    """Brute force max over inputs x, x' of int (R(x)(y) - e^eps R(x')(y))_+ dy (trapezoid on
    a fine output grid from the declared density): the delta of an (eps, delta)-LDP randomizer
    with continuous outputs."""
    inputs = _input_grid(randomizer)
    width = inputs.max() - inputs.min()
    for _ in range(20):  # widen the output range until it holds the whole mass
        outputs = np.linspace(inputs.min() - width, inputs.max() + width, 40_001)
        density = np.exp(randomizer.log_prob(inputs[:, None], outputs[None, :]))
        if np.trapezoid(density, outputs, axis=1).min() > 1 - 1e-9:
            break
        width *= 2
    else:
        pytest.fail("the declared density does not integrate to 1")
    best = 0.0
    for row in density:  # loop over the inputs x; vectorized over x' and y
        gap = np.clip(row[None, :] - np.exp(epsilon) * density, 0.0, None)
        best = max(best, float(np.trapezoid(gap, outputs, axis=1).max()))
    return best


@pytest.mark.parametrize("name", NAMES)
def test_same_seed_same_output(name):
    r = _make(name)
    inputs = _test_inputs(r)
    first = _sample(r, inputs, 200, np.random.default_rng(7))
    again = _sample(r, inputs, 200, np.random.default_rng(7))
    other = _sample(r, inputs, 200, np.random.default_rng(8))
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, other)


@pytest.mark.parametrize("name", NAMES)
def test_personalized_budgets(name):
    r = _make(name)
    inputs = _test_inputs(r)
    values = np.repeat(inputs[:, None], 10, axis=1)
    rng = np.random.default_rng(303)
    if not r.supports_personalized:
        with pytest.raises(ParameterError):
            r.randomize(values, rng, epsilon=np.full(values.shape, r.epsilon0))
        return
    # An epsilon array equal to eps0 everywhere reproduces the declared distribution.
    same = np.full((len(inputs), SAMPLES_PER_INPUT), r.epsilon0)
    pvalue = gof_pvalue(r, r, inputs, rng, epsilon=same)
    assert pvalue > ALPHA, f"{name}: epsilon = eps0 array changes the distribution (p={pvalue})"
    # Mixed budgets: the users with the other budget follow that budget's distribution.
    other_eps = 2.0 * r.epsilon0
    mixed = np.empty((len(inputs), 2 * SAMPLES_PER_INPUT))
    mixed[:, ::2], mixed[:, 1::2] = r.epsilon0, other_eps
    reports = _sample(r, inputs, 2 * SAMPLES_PER_INPUT, rng, epsilon=mixed)[:, 1::2]
    reference = dataclasses.replace(r, epsilon0=other_eps)  # same other parameters (e.g. olh g)
    replay = _Replay(reference, reports)
    pvalue = gof_pvalue(replay, reference, inputs, rng)
    assert pvalue > ALPHA, f"{name}: per-user epsilon is not honoured (p={pvalue})"
    with pytest.raises(ParameterError):
        r.randomize(values, rng, epsilon=np.zeros(values.shape))


@dataclasses.dataclass
class _Replay:
    """Serves precomputed reports through the ``randomize`` interface of ``reference``."""

    reference: object
    reports: np.ndarray

    def randomize(self, values, rng, epsilon=None):
        return self.reports[:, : values.shape[1]]

    def output_index(self, outputs):
        return self.reference.output_index(outputs)


@pytest.mark.parametrize("name", NAMES)
def test_aggregate_sampler_agrees_with_per_user_path(name):
    r = _make(name)
    if not isinstance(r.input_domain, Categorical):
        assert not r.has_aggregate_sampler, "samplers take input histograms: categorical only"
        return
    if not r.has_aggregate_sampler:
        with pytest.raises(NotImplementedError):
            r.sample_aggregate(np.ones(r.input_domain.size, dtype=np.int64),
                               np.random.default_rng(0))
        return
    d = r.input_domain.size
    counts = 3 + 4 * np.arange(d)  # unequal counts, n = 3d + 2d(d-1)
    pvalue = aggregate_agreement_pvalue(r, counts, 3000, np.random.default_rng(404))
    assert pvalue > ALPHA, f"{name}: sample_aggregate disagrees with aggregate (p={pvalue})"


# -- negative controls: the checks above can fail -------------------------------------------


@dataclasses.dataclass(frozen=True)
class _MislabelledOUE(OUE):
    """Samples with a larger budget than it declares."""

    def randomize(self, values, rng, epsilon=None):
        return OUE(self.epsilon0 * 1.25, self.domain_size).randomize(values, rng)


@dataclasses.dataclass(frozen=True)
class _BiasedSamplerOUE(OUE):
    """A sufficient-statistic sampler with a slightly wrong bit probability."""

    def sample_aggregate(self, input_counts, rng):
        c = np.asarray(input_counts, dtype=np.int64)
        a, b = self.bit_probabilities()
        return rng.binomial(c, a) + rng.binomial(c.sum(axis=-1, keepdims=True) - c, 1.2 * b)


def test_negative_control_goodness_of_fit_rejects_wrong_budget():
    r = _MislabelledOUE(1.1, 5)
    assert gof_pvalue(r, r, np.arange(5), np.random.default_rng(202)) < ALPHA


def test_negative_control_ks_rejects_wrong_budget():
    laplace = _make("laplace")
    wrong = _make("laplace", epsilon0=1.15 * laplace.epsilon0)
    assert gof_pvalue(wrong, laplace, _test_inputs(laplace), np.random.default_rng(5)) < ALPHA


def test_negative_control_two_sample_rejects_wrong_sampler():
    r = _BiasedSamplerOUE(1.1, 5)
    counts = 3 + 4 * np.arange(5)
    assert aggregate_agreement_pvalue(r, counts, 3000, np.random.default_rng(404)) < ALPHA


def test_negative_control_tightness_detects_a_loose_declaration():
    r = _make("oue")
    assert max_log_ratio(dataclasses.replace(r, epsilon0=1.2)) != pytest.approx(1.1, abs=1e-12)
