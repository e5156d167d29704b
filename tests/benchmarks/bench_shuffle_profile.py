"""Benchmark: a Gaussian client with sigma 20 % too small at the shuffle level, n = 5 and 10,
10^6 trials per world (issue 29, item 2 of session 11's lane t29l): the whole audit with default
flags (binned histogram attacks, fit, the learned rows and ``implementation-shuffled-profile``),
and the learned rows alone (learned_rows.py). Prints the verdicts, wall and CPU seconds and the
load average; asserts only that the profile row convicts the faulty client and passes the
correct one (no timing assertion).

Run with:  python3 -m pytest tests/benchmarks/bench_shuffle_profile.py -m benchmark -s
"""

from __future__ import annotations

import os
import time

import numpy as np
import pytest

from shufflesim.protocols.randomizers import make_randomizer
from shufflesim.simulator.audit.implementation import Claim
from shufflesim.simulator.audit.learned_rows import implementation_draw, learned_rows
from shufflesim.simulator.audit.run import audit_implementation
from shufflesim.simulator.audit.shuffle_level import AuditOptions

TRIALS = int(os.environ.get("BENCH_TRIALS", str(10**6)))
GAUSS = make_randomizer("gaussian", epsilon0=1.0, delta0=1e-6)


def _client(factor):
    sigma = factor * GAUSS.sigma

    def client(values, rng):
        values = np.asarray(values, dtype=float)
        return values + rng.normal(0.0, sigma, size=values.shape)

    return client


class _Tested:
    def __init__(self, factor):
        self.randomize = _client(factor)


def _timed(fn):
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - wall, time.process_time() - cpu


@pytest.mark.benchmark
@pytest.mark.parametrize("n", [5, 10])
def test_profile_rows_alone(n):
    for factor, caught in ((0.8, True), (1.0, False)):
        rows, wall, cpu = _timed(lambda factor=factor: learned_rows(
            implementation_draw(_Tested(factor), 0.0, 1.0, n), GAUSS, n, (1e-3,),
            AuditOptions(trials=TRIALS), np.random.SeedSequence(0), {}, x0=0.0, x1=1.0,
            source="client", claimed="gaussian", pair="(0, 1, 1)"))
        row = next(r for r in rows if r["bound"] == "implementation-shuffled-profile")
        print(f"\nn={n} sigma x {factor}: eps_lb {row['epsilon_lb']:.4f} vs eps* "
              f"{row['bound_epsilon']:.4f} at delta* {row['delta']:.3g}, p {row['p_value']:.3g}"
              f"; wall {wall:.1f} s, CPU {cpu:.1f} s, load {os.getloadavg()[0]:.1f}")
        assert (row["verdict"] == "violated") is caught


@pytest.mark.benchmark
@pytest.mark.parametrize("n", [5, 10])
def test_whole_shuffle_audit(n):
    claim = Claim(GAUSS, delta0=1e-6)
    rows, wall, cpu = _timed(lambda: audit_implementation(
        _client(0.8), claim, trials=TRIALS, level="shuffle", n=n, delta=(1e-3,), seed=0))
    print(f"\nn={n} sigma x 0.8, whole audit: wall {wall:.1f} s, CPU {cpu:.1f} s, load "
          f"{os.getloadavg()[0]:.1f}")
    for r in rows:
        if r["row_type"] == "verdict" and r.get("subject") == "implementation":
            print(f"  {r['bound']}: {r['verdict']} eps_lb {r.get('epsilon_lb')} vs "
                  f"{r.get('bound_epsilon')} (adjusted p {r.get('adjusted_p_value')})")
    got = {r["bound"]: r for r in rows if r["row_type"] == "verdict"}
    assert got["implementation-shuffled-profile"]["verdict"] == "violated"
