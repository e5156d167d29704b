"""Benchmark: per-user lifetime accounting of a pipeline run (issue 16).

Run with:  python3 -m pytest tests/benchmarks/bench_lifetime.py -m benchmark -s
Target (issue 16): a pipeline run of 10^5 users over 30 rounds with per-user accounting in
under 60 s on the project's 2-core machine. Two shapes: one batch per round with dropout (the
daily collection), and batches of at most 5000 messages released by size or timeout with
network delays (batch sizes vary, more distinct signatures).
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from shufflesim.protocols.randomizers import make_randomizer
from shufflesim.simulator.pipeline import DelayConfig, PipelineConfig, run_pipeline
from shufflesim.simulator.pipeline.lifetime import lifetime_columns, summary

N = 10**5
ROUNDS = 30
DELTA = 1e-6
TARGET_SECONDS = 60.0


def _time(config, label):
    randomizer = make_randomizer("krr", epsilon0=1.0, domain_size=10)
    values = np.random.default_rng(0).integers(0, 10, size=N)
    start = time.perf_counter()
    result = run_pipeline(randomizer, values, config, np.random.default_rng(1),
                          track_clients=True)
    simulated = time.perf_counter() - start
    columns = lifetime_columns(result.member_sizes, result.colluding, randomizer,
                               randomizer.epsilon0, DELTA)
    seconds = time.perf_counter() - start
    eps = columns["epsilon"].to_numpy(zero_copy_only=False)
    notes = columns["note"].to_pylist()
    stats = summary(eps)
    print(f"\n{label}: {seconds:.1f} s ({simulated:.1f} s pipeline, "
          f"{seconds - simulated:.1f} s accounting) for {N:,} users x {ROUNDS} rounds, "
          f"{len(result.batches):,} batches, {len(set(notes))} distinct notes")
    print("  lifetime eps: " + ", ".join(f"{k} {v:.4f}" for k, v in stats.items()))
    print(f"  rounds participated: min {columns['rounds'].min()}, "
          f"median {np.median(columns['rounds']):.0f}, max {columns['rounds'].max()}")
    return seconds, columns


@pytest.mark.benchmark
def test_lifetime_one_batch_per_round():
    config = PipelineConfig(arrival="uniform", rounds=ROUNDS, dropout=0.2)
    seconds, columns = _time(config, "k-RR, one batch per round, dropout 0.2")
    assert np.all(np.asarray(columns["epsilon"]) <= columns["rounds"] * 1.0 + 1e-12)
    assert seconds < TARGET_SECONDS


@pytest.mark.benchmark
def test_lifetime_size_and_timeout_batches():
    config = PipelineConfig(arrival="poisson", rounds=ROUNDS, dropout=0.2, batch_size=5000,
                            timeout=0.02, delay=DelayConfig("exponential", mean=1e-3))
    seconds, columns = _time(config, "k-RR, batch_size 5000 / timeout 0.02, delays, dropout 0.2")
    assert seconds < TARGET_SECONDS
