"""Monte Carlo checks of the multi-message estimators (protocols/estimators/multi_message.py):
unbiased, and the exact variance formula matches the sample variance (bands from the sample
size and the sample fourth moment), on the aggregate path and on the reports path; planted
faults (a wrong blanket count) are detected; refusals are one-line ParameterErrors."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from shufflesim.protocols.errors import ParameterError
from shufflesim.protocols.estimators import make_estimator
from shufflesim.protocols.randomizers import make_randomizer

FREQUENCY = [
    ("cheu", dict(epsilon0=1.0, domain_size=5, flip_probability=0.2, blanket_messages=2)),
    ("balls_into_bins", dict(epsilon0=1.0, bins=12, special_bins=3, blanket_messages=3)),
    ("balls_into_bins", dict(epsilon0=1.0, bins=10, special_bins=2, domain_size=4,
                             blanket_messages=1)),
    ("pure_dump", dict(epsilon0=1.0, domain_size=5, blanket_messages=4)),
    ("mix_dump", dict(epsilon0=1.0, domain_size=5, flip_probability=0.4, blanket_messages=2)),
]
SUM = [
    ("balcer", dict(epsilon0=1.0, blanket_messages=5, coin_probability=0.2)),
    ("balcer", dict(epsilon0=1.0, blanket_messages=3, coin="uniform")),
]
#: Standard errors allowed for the mean and for the variance.
Z = 4.5


def check_unbiased_and_variance(estimates, truth, variance):
    """estimates (reps, ...): mean within Z standard errors of the truth, sample variance
    within Z standard errors (from the sample fourth central moment) of ``variance``."""
    reps = estimates.shape[0]
    mean = estimates.mean(axis=0)
    assert np.all(np.abs(mean - truth) <= Z * np.sqrt(variance / reps)), (mean, truth)
    centred = estimates - mean
    sample_var = (centred ** 2).sum(axis=0) / (reps - 1)
    m4 = (centred ** 4).mean(axis=0)
    se_var = np.sqrt(np.maximum(m4 - sample_var ** 2, 0) / reps)
    assert np.all(np.abs(sample_var - variance) <= Z * se_var + 1e-15), (sample_var, variance)


@pytest.mark.parametrize(("name", "params"), FREQUENCY, ids=[n for n, _ in FREQUENCY])
@pytest.mark.parametrize("path", ["aggregate", "reports"])
def test_frequency_unbiased_with_exact_variance(name, params, path):
    r = make_randomizer(name, **params)
    est = make_estimator("multi_message_frequency", r)
    k = r.input_size
    counts = np.arange(k) * 3 + 2
    n = int(counts.sum())
    reps = 20_000 if path == "aggregate" else 4000
    rng = np.random.default_rng(15)
    if path == "aggregate":
        aggregate = r.sample_aggregate(np.broadcast_to(counts, (reps, k)), rng)
    else:
        values = np.broadcast_to(np.repeat(np.arange(k), counts), (reps, n))
        aggregate = r.aggregate(r.randomize(values, rng))
    estimates = est.estimate(aggregate, n)
    variance = est.variance(counts)
    check_unbiased_and_variance(estimates, counts / n, variance)
    np.testing.assert_allclose(est.variance_from_frequencies(counts / n, n), variance)


@pytest.mark.parametrize(("name", "params"), SUM, ids=["biased", "uniform"])
@pytest.mark.parametrize("path", ["aggregate", "reports"])
def test_sum_unbiased_with_exact_variance(name, params, path):
    r = make_randomizer(name, **params)
    est = make_estimator("multi_message_sum", r)
    values = (np.arange(150) % 3 == 0).astype(np.int64)
    n = values.size
    reps = 20_000 if path == "aggregate" else 4000
    rng = np.random.default_rng(16)
    if path == "aggregate":
        counts = np.array([n - values.sum(), values.sum()])
        aggregate = r.sample_aggregate(np.broadcast_to(counts, (reps, 2)), rng)
    else:
        aggregate = r.aggregate(r.randomize(np.broadcast_to(values, (reps, n)), rng))
    estimates = est.estimate(aggregate, n)
    variance = est.variance(values, n)
    p = r.probability
    assert variance == pytest.approx(n * r.blanket_messages * p * (1 - p))
    assert est.per_user_variance(1) * n == pytest.approx(variance)
    check_unbiased_and_variance(estimates, values.sum(), variance)


def test_planted_fault_is_detected():
    """An estimator debiasing with the wrong blanket count is biased: the check fails."""
    r = make_randomizer("pure_dump", epsilon0=1.0, domain_size=5, blanket_messages=4)
    wrong = dataclasses.replace(r, blanket_messages=3)
    counts = np.array([2, 5, 8, 11, 14])
    n = int(counts.sum())
    aggregate = r.sample_aggregate(np.broadcast_to(counts, (20_000, 5)),
                                   np.random.default_rng(17))
    est = make_estimator("multi_message_frequency", wrong)
    with pytest.raises(AssertionError):
        check_unbiased_and_variance(est.estimate(aggregate, n), counts / n,
                                    est.variance(counts))


def test_estimate_accepts_array_of_sizes():
    """The pipeline passes realized batch sizes (an array broadcasting over leading axes)."""
    r = make_randomizer("cheu", epsilon0=1.0, domain_size=4, flip_probability=0.1,
                        blanket_messages=1)
    est = make_estimator("multi_message_frequency", r)
    agg = r.sample_aggregate(np.array([[5, 5, 5, 5], [1, 2, 3, 4]]), np.random.default_rng(0))
    by_row = est.estimate(agg, np.array([20, 10]))
    np.testing.assert_allclose(by_row[1], est.estimate(agg[1], 10))


@pytest.mark.parametrize(("estimator", "name", "params"), [
    ("multi_message_frequency", "krr", dict(epsilon0=1.0, domain_size=4)),
    ("multi_message_frequency", "balcer", SUM[0][1]),
    ("multi_message_sum", "cheu", FREQUENCY[0][1]),
    ("frequency", "cheu", FREQUENCY[0][1]),
    ("sum", "balcer", SUM[0][1]),
])
def test_refusals_are_one_line(estimator, name, params):
    with pytest.raises(ParameterError) as info:
        make_estimator(estimator, make_randomizer(name, **params))
    assert "\n" not in str(info.value)
