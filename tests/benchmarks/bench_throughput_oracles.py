"""Benchmark: frequency-oracle throughput, per-user reports vs the sufficient statistic.

Run with:  python3 -m pytest tests/benchmarks/bench_throughput_oracles.py -m benchmark -s

OUE and OLH with d = 1024. The per-user path (randomize + aggregate) materialises n x d bits
for OUE (n d bytes), so it is timed on N_PER_USER users and reported as reports per second
(it is linear in n); the sufficient-statistic path (``sample_aggregate``) is timed at
n = 10^7 directly. Target (foundation issue): the sufficient-statistic path for OUE is at least
100x faster than per-user bit sampling.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from shufflesim.protocols.randomizers import make_randomizer

D = 1024
N = 10**7
N_PER_USER = 100_000
TARGET_SPEEDUP = 100.0


def _best_of(repeats, fn):
    best = np.inf
    for _ in range(repeats):  # a few timing repeats
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def _throughput(name, **params):
    r = make_randomizer(name, domain_size=D, **params)
    rng = np.random.default_rng(0)
    values = rng.integers(0, D, size=N_PER_USER)
    counts = np.bincount(rng.integers(0, D, size=N), minlength=D)
    per_user = _best_of(2, lambda: r.aggregate(r.randomize(values, rng)))
    sufficient = _best_of(3, lambda: r.sample_aggregate(counts, rng))
    per_user_rate = N_PER_USER / per_user
    sufficient_rate = N / sufficient
    print(f"\n{name} (d={D}, eps0={r.epsilon0}): per-user {per_user_rate:,.0f} reports/s "
          f"({per_user:.2f} s for {N_PER_USER:,}); sufficient statistic "
          f"{sufficient_rate:,.0f} reports/s ({sufficient * 1e3:.2f} ms for {N:,}); "
          f"speed-up {sufficient_rate / per_user_rate:,.0f}x")
    return per_user_rate, sufficient_rate


@pytest.mark.benchmark
def test_oue_sufficient_statistic_speedup():
    per_user_rate, sufficient_rate = _throughput("oue", epsilon0=1.0)
    assert sufficient_rate >= TARGET_SPEEDUP * per_user_rate


@pytest.mark.benchmark
def test_olh_throughput():
    per_user_rate, sufficient_rate = _throughput("olh", epsilon0=2.0)
    assert sufficient_rate > per_user_rate
