"""Benchmark: end-to-end throughput of the batch path (reports per second).

Run with:  python3 -m pytest tests/benchmarks/bench_batch_throughput.py -m benchmark -s

One unit of the batch path (simulator.batch.run_unit) per timing: sample the data (Zipf(0.7)
histogram laid out per user), randomize every user, shuffle (a uniform permutation of the
reports, unless ``shuffle = "skip"``), aggregate, estimate and compute the error metrics. Both
wall-clock and process CPU time (summed over threads) are printed; the best of a few timings is
kept, since the machine may be shared.

* k-RR (k = 10) at n = 10^7, reports path with and without the shuffle, and the aggregate path.
* OUE and OLH (d = 1024): the reports path materialises n x 1024 bits for OUE (and OLH's
  aggregate evaluates the hash of every user at every value), so it runs at n = 2 x 10^4
  (throughput is linear in n) and the aggregate path at n = 10^7.

Targets (foundation issue): k-RR at least 3 x 10^7 reports/s end to end *with* the shuffle
performed, on wall-clock time (the batch path uses the machine's cores: users are randomized in
pieces and the reports permuted in cache-sized blocks, concurrently in threads, see
simulator/threads.py and simulator/shuffling.py); OUE's sufficient-statistic path at least 100x
faster than per-user bit sampling. Process CPU time sums the threads, so it is printed for
information only.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from shufflesim.simulator.batch.run import BatchSetup, run_unit
from shufflesim.simulator.scenario.loader import parse_scenario

KRR_TARGET = 3e7
OUE_SPEEDUP_TARGET = 100.0
#: Users of the per-user (reports) path for d = 1024 oracles (one repetition in memory).
PER_USER_N = 20_000


def _setup(randomizer: str, d: int, n: int, path: str, shuffle: str) -> BatchSetup:
    text = f"""
name = "bench"
[population]
n = {n}
data = {{ distribution = "zipf", domain_size = {d}, exponent = 0.7 }}
budget = {{ distribution = "constant", epsilon0 = 1.0 }}
[randomizer]
name = "{randomizer}"
[estimator]
name = "frequency"
[batch]
path = "{path}"
shuffle = "{shuffle}"
memory_mb = 2048
"""
    return BatchSetup.from_settings(parse_scenario(text).points[0].settings)


def _rate(setup: BatchSetup, repeats: int = 3) -> tuple[float, float]:
    """Best-of-``repeats`` (wall, cpu) reports per second of one repetition."""
    rng = np.random.default_rng(0)
    run_unit(setup, 1, rng)  # warm-up
    wall = cpu = np.inf
    for _ in range(repeats):  # timing repeats
        w0, c0 = time.perf_counter(), time.process_time()
        run_unit(setup, 1, rng)
        wall = min(wall, time.perf_counter() - w0)
        cpu = min(cpu, time.process_time() - c0)
    return setup.n / wall, setup.n / cpu


def _show(label: str, rates: tuple[float, float]) -> None:
    print(f"  {label:<46} wall {rates[0]:>16,.0f} reports/s   cpu {rates[1]:>16,.0f} reports/s")


@pytest.mark.benchmark
def test_krr_end_to_end_throughput():
    n = 10**7
    print(f"\nk-RR (k = 10), n = {n:,}, end to end (data, randomize, shuffle, aggregate, "
          "estimate, metrics):")
    with_shuffle = _rate(_setup("krr", 10, n, "reports", "perform"))
    _show("reports path, shuffle performed", with_shuffle)
    skipped = _rate(_setup("krr", 10, n, "reports", "skip"))
    _show("reports path, shuffle skipped", skipped)
    aggregate = _rate(_setup("krr", 10, n, "aggregate", "perform"), repeats=5)
    _show("aggregate path (sufficient statistic)", aggregate)
    met = "met" if with_shuffle[0] >= KRR_TARGET else "NOT met"
    print(f"  target {KRR_TARGET:,.0f} reports/s (wall, shuffle performed): {met}")
    assert with_shuffle[0] >= KRR_TARGET


@pytest.mark.benchmark
@pytest.mark.parametrize("name", ["oue", "olh"])
def test_unary_and_hash_oracles_end_to_end(name):
    d = 1024
    print(f"\n{name.upper()} (d = {d}), end to end:")
    n = PER_USER_N
    reports = _rate(_setup(name, d, n, "reports", "perform"), repeats=2)
    _show(f"reports path, n = {n:,}, shuffle performed", reports)
    reports_skip = _rate(_setup(name, d, n, "reports", "skip"), repeats=2)
    _show(f"reports path, n = {n:,}, shuffle skipped", reports_skip)
    aggregate = _rate(_setup(name, d, 10**7, "aggregate", "perform"), repeats=3)
    _show("aggregate path, n = 10,000,000", aggregate)
    speedup = aggregate[1] / reports_skip[1]
    print(f"  sufficient statistic vs per-user reports (cpu): {speedup:,.0f}x")
    if name == "oue":
        assert speedup >= OUE_SPEEDUP_TARGET
