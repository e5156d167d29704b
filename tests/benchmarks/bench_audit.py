"""Benchmark: how close the empirical lower bound gets to the exact one, and how fast.

Run with:  python3 -m pytest tests/benchmarks/bench_audit.py -m benchmark -s
Setting (brief H7): shuffled binary randomized response, n = 1000, eps0 = 4, X0 = (0, 1, ..., 1)
vs X1 = (1, 1, ..., 1); the likelihood-ratio attack (a threshold on the count of reports 0),
both directions, confidence 0.95 (each direction 0.975), 10% of the trials choose the events.
Prints eps_lb / exact (000 Thm 14) at delta = 1e-6 and 1e-3 for 10^6, 10^7 and 10^8 trials per
world (one sampling serves both deltas). Targets: ratio >= 0.8 at delta = 1e-6 with 10^8
trials, which must take under two minutes on the project's 2-core machine.
"""

from __future__ import annotations

import time

import pytest

from shufflesim.protocols.randomizers import make_randomizer
from shufflesim.simulator.audit.shuffle_level import AuditOptions, audit_shuffle

DELTAS = (1e-6, 1e-3)
TARGET_SECONDS = 120.0
TARGET_RATIO = 0.8


@pytest.mark.benchmark
@pytest.mark.parametrize("trials", [10**6, 10**7, 10**8])
def test_binary_rr_bound_versus_exact(trials):
    r = make_randomizer("krr", epsilon0=4.0, domain_size=2)
    start = time.perf_counter()
    audit = audit_shuffle(r, 1000, DELTAS, AuditOptions(trials=trials, attacks=("lr",)), 2024,
                          x0=0, x1=1, others=1)
    seconds = time.perf_counter() - start
    for delta in DELTAS:
        best = audit.best(delta)
        exact = audit.exact[delta]
        print(f"\ntrials/world {trials:.0e}  delta {delta:.0e}  eps_lb {best.epsilon_lb:.4f}  "
              f"exact {exact:.4f}  ratio {best.epsilon_lb / exact:.3f}  "
              f"({best.direction}, {best.event})  {seconds:.1f} s")
        assert best.epsilon_lb <= exact
    if trials == 10**8:
        assert seconds < TARGET_SECONDS
        assert audit.epsilon_lb(1e-6) / audit.exact[1e-6] >= TARGET_RATIO
