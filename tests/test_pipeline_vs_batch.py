"""The pipeline (one batch, no dropouts) and the direct batch path agree in distribution.

200 repetitions of each at a fixed seed: the pipeline run end to end (SimPy clients, shuffler,
analyzer) and direct numpy randomize + aggregate + estimate with the same randomizer on the same
data. Two-sample Kolmogorov-Smirnov tests on each frequency estimate and on the l2 error, at a
family-wise significance alpha = 0.01 (Bonferroni over the statistics). The estimates are
discrete, which makes KS conservative; a power check shows that the same test rejects a
pipeline run at a different eps0.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from shufflesim.protocols.randomizers import make_randomizer
from shufflesim.simulator.pipeline import PipelineConfig, run_pipeline

ALPHA = 0.01
REPETITIONS = 200
K, N = 4, 2000


class KRRFrequency:
    """The standard unbiased k-RR frequency estimate (C_v / n - q) / (p - q): an independent
    stand-in for protocols.estimators in this test."""

    def __init__(self, randomizer):
        e = np.exp(randomizer.epsilon0)
        self.p = e / (e + randomizer.domain_size - 1)
        self.q = 1 / (e + randomizer.domain_size - 1)

    def estimate(self, counts, n):
        return (np.asarray(counts) / n - self.q) / (self.p - self.q)


def _data():
    weights = 1 / np.arange(1, K + 1) ** 0.7
    return np.random.default_rng(123).choice(K, size=N, p=weights / weights.sum())


def _pipeline_estimates(eps0, seed):
    randomizer = make_randomizer("krr", epsilon0=eps0, domain_size=K)
    estimator = KRRFrequency(randomizer)
    config = PipelineConfig(arrival="uniform")  # no size trigger, no timer: one batch at the end
    values = _data()
    out = []
    for child in np.random.SeedSequence(seed).spawn(REPETITIONS):
        result = run_pipeline(randomizer, values, config, np.random.default_rng(child),
                              estimator=estimator)
        assert len(result.batches) == 1 and result.batches["size"].iloc[0] == N
        out.append(result.estimate)
    return np.array(out)


def _batch_estimates(eps0, seed):
    randomizer = make_randomizer("krr", epsilon0=eps0, domain_size=K)
    values = np.broadcast_to(_data(), (REPETITIONS, N))
    reports = randomizer.randomize(values, np.random.default_rng(seed))
    reports = np.random.default_rng(seed + 1).permuted(reports, axis=1)  # the shuffle
    return KRRFrequency(randomizer).estimate(randomizer.aggregate(reports), N)


def _p_values(a, b):
    truth = np.bincount(_data(), minlength=K) / N
    statistics = [(a[:, v], b[:, v]) for v in range(K)]
    statistics.append((np.linalg.norm(a - truth, axis=1), np.linalg.norm(b - truth, axis=1)))
    return np.array([stats.ks_2samp(x, y).pvalue for x, y in statistics])


def test_pipeline_agrees_with_batch_path_in_distribution():
    pipe = _pipeline_estimates(1.0, seed=2024)
    batch = _batch_estimates(1.0, seed=99)
    p = _p_values(pipe, batch)
    assert (p > ALPHA / p.size).all(), p
    # and both are centred on the data's frequencies (unbiased), within 6 standard errors
    truth = np.bincount(_data(), minlength=K) / N
    for sample in (pipe, batch):
        se = sample.std(axis=0, ddof=1) / np.sqrt(REPETITIONS)
        assert (np.abs(sample.mean(axis=0) - truth) < 6 * se).all()


def test_two_sample_test_has_power_against_a_wrong_budget():
    pipe = _pipeline_estimates(0.6, seed=2024)
    batch = _batch_estimates(1.0, seed=99)
    assert _p_values(pipe, batch).min() < ALPHA / 5


def test_pipeline_with_the_project_estimators():
    """The pipeline drives protocols.estimators: frequency (k-RR, OUE) and mean (Laplace)."""
    from shufflesim.protocols.estimators import make_estimator

    config = PipelineConfig(arrival="uniform", batch_size=300, timeout=0.2, min_batch=50)
    values = _data()
    krr = make_randomizer("krr", epsilon0=1.0, domain_size=K)
    result = run_pipeline(krr, values, config, np.random.default_rng(4),
                          estimator=make_estimator("frequency", krr))
    released = result.rounds[0].released
    np.testing.assert_allclose(result.estimate,
                               KRRFrequency(krr).estimate(result.aggregate, released))

    oue = make_randomizer("oue", epsilon0=1.0, domain_size=K)
    result = run_pipeline(oue, values, config, np.random.default_rng(5),
                          estimator=make_estimator("frequency", oue))
    assert result.estimate.shape == (K,)
    assert result.aggregate.sum() >= 0 and result.rounds[0].released > 0

    laplace = make_randomizer("laplace", epsilon0=1.0)
    x = np.random.default_rng(6).uniform(0, 1, size=N)
    result = run_pipeline(laplace, x, config, np.random.default_rng(7),
                          estimator=make_estimator("mean", laplace), keep_outputs=True)
    # unbiased for the mean of the released clients' values; Var = 2 / (eps0^2 n)
    released = np.concatenate([b.clients for b in result.outputs])
    assert released.size == result.rounds[0].released
    sd = np.sqrt(2.0 / released.size)
    assert abs(float(result.estimate) - x[released].mean()) < 6 * sd
