"""Benchmark: the whole SimPy pipeline at 10^6 clients.

Run with:  python3 -m pytest tests/benchmarks/bench_pipeline.py -m benchmark -s
Target (brief H6): 10^6 clients, batch_size 10^4, k-RR: the whole pipeline run in under 10 s on
the project's 2-core machine.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from shufflesim.protocols.randomizers import make_randomizer
from shufflesim.simulator.pipeline import DelayConfig, PipelineConfig, run_pipeline

N = 10**6
TARGET_SECONDS = 10.0


class _Frequency:
    def __init__(self, randomizer):
        e = np.exp(randomizer.epsilon0)
        self.p, self.q = e / (e + randomizer.domain_size - 1), 1 / (e + randomizer.domain_size - 1)

    def estimate(self, counts, n):
        return (counts / n - self.q) / (self.p - self.q)


def _time(config, label, epsilon_per_batch=True):
    randomizer = make_randomizer("krr", epsilon0=1.0, domain_size=10)
    values = np.random.default_rng(0).integers(0, 10, size=N)
    start = time.perf_counter()
    result = run_pipeline(
        randomizer, values, config, np.random.default_rng(1), estimator=_Frequency(randomizer),
        batch_epsilon=(lambda h: 1.0 / np.sqrt(h)) if epsilon_per_batch else None,
    )
    seconds = time.perf_counter() - start
    released = int(result.batches["size"][~result.batches.dropped].sum())
    print(f"\n{label}: {seconds:.2f} s for {N:,} clients, {len(result.batches):,} batches, "
          f"{released / seconds:,.0f} messages/s end to end")
    return seconds, result


@pytest.mark.benchmark
def test_pipeline_million_clients_batch_size_10k():
    config = PipelineConfig(arrival="uniform", batch_size=10**4, timeout=0.05,
                            delay=DelayConfig("exponential", mean=1e-3))
    seconds, result = _time(config, "k-RR, batch_size 10^4, uniform arrivals, delays")
    assert len(result.batches) == 100
    assert seconds < TARGET_SECONDS


@pytest.mark.benchmark
def test_pipeline_million_clients_timeout_driven():
    # low traffic: about 100 messages per timer-released batch, 10^4 batches
    config = PipelineConfig(arrival="poisson", window=1.0, batch_size=10**4, timeout=1e-4,
                            min_batch=20, dropout=0.1)
    seconds, result = _time(config, "k-RR, timeout-driven, Poisson arrivals, dropout 0.1")
    assert (result.batches.reason == "timeout").mean() > 0.9
