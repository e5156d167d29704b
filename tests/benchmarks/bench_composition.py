"""Benchmark: lifetime accounting, T = 1000 rounds of 10-RR (eps0 = 1) at n = 10^6.

Run with:  python3 -m pytest tests/benchmarks/bench_composition.py -m benchmark -s

Times compose_rounds (per-round PLD of the 000 Thm 13 blanket pair, dp_accounting
self-composition, eps(delta)) for ``optimal-blanket``, and prints the other methods at the same
setting for comparison. Target (issue 16): optimal-blanket in under 10 s on this machine.
"""

from __future__ import annotations

import time

import pytest

from shufflesim.protocols.accounting.compose import Round, compose_rounds
from shufflesim.protocols.randomizers import make_randomizer

N, T, EPS0, DELTA = 10**6, 1000, 1.0, 1e-6
TARGET_SECONDS = 10.0


@pytest.mark.benchmark
def test_optimal_blanket_thousand_rounds_at_a_million_users():
    r = make_randomizer("krr", epsilon0=EPS0, domain_size=10)
    start = time.perf_counter()
    res = compose_rounds([Round(r, N, T)], DELTA, "optimal-blanket")
    seconds = time.perf_counter() - start
    print(f"\noptimal-blanket 10-RR eps0={EPS0} n={N} T={T} delta={DELTA}: eps = "
          f"{res.epsilon:.6f} in {seconds:.2f} s ({res.note})")
    for method in ("exact-lower", "fmt21-clone"):
        t0 = time.perf_counter()
        other = compose_rounds([Round(r, N, T)], DELTA, method)
        print(f"{method}: eps = {other.epsilon:.6f} in {time.perf_counter() - t0:.2f} s")
    assert seconds < TARGET_SECONDS
