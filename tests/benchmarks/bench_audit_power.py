"""Benchmark: detection power of the randomizer-level search (simulator/audit/search.py) against
an eps0 misdeclaration, and its cost (issue 17, closing note).

Run with:  python3 -m pytest tests/benchmarks/bench_audit_power.py -m benchmark -s
(environment: BENCH_POWER_REPS repetitions per factor, default 10; BENCH_POWER_SAMPLES samples
per audited input, default 10^6).

Setting: a client that runs eps = f * eps0 while claiming eps0 = 2; the audit says "not
eps0-LDP" when its lower bound (confidence 0.95, Bonferroni over the 4 certified events, 20% of
the samples select pairs and events) exceeds eps0. For each factor f of a grid, scanned upwards,
the detection rate over REPS seeds; reported: the smallest f detected in at least 90% of them.
"Samples" are per audited input (selection + certification): k-RR (k = 4, eps0 = 2) on all 4
inputs (12 ordered pairs); OUE (d = 64) and OLH (d = 1024) on 4 candidate inputs (the two ends
and two random values; both mechanisms treat every pair alike). OLH reports (value, hash seed)
are all distinct: its events use the decoder ("support" family); OUE's come from the learned
attack or the coordinates, k-RR's from exact output cells.

The mechanisms are vectorized numpy versions written here (the third-party clients are
audited in tests/test_audit_third_party.py; at 10^6 samples their per-report Python loops, not
the audit, would dominate the time).
"""

from __future__ import annotations

import os
import time

import pytest
from audit_mechanisms import krr, olh, oue

from shufflesim.simulator.audit.search import SearchOptions, search

EPS0 = 2.0
SAMPLES = int(float(os.environ.get("BENCH_POWER_SAMPLES", "1e6")))
REPS = int(os.environ.get("BENCH_POWER_REPS", "10"))
FACTORS = (1.005, 1.01, 1.015, 1.02, 1.03, 1.05, 1.075, 1.1, 1.15, 1.2, 1.3, 1.5, 2.0)
CASES = {"krr_k4": (lambda eps: (krr(eps, 4), None), 4, 4),
         "oue_d64": (lambda eps: (oue(eps, 64), None), 64, 4),
         "olh_d1024": (lambda eps: olh(eps, 1024), 1024, 4)}


def detection_rate(case: str, factor: float, reps: int) -> tuple[float, float]:
    make, d, inputs = CASES[case]
    sample, support = make(EPS0 * factor)
    opts = SearchOptions(SAMPLES, holdout_fraction=0.2, max_inputs=inputs, chunk=1 << 16)
    hits, seconds = 0, 0.0
    for seed in range(reps):
        start = time.perf_counter()
        r = search(sample, d, opts, seed=1000 + seed, support=support)
        seconds += time.perf_counter() - start
        hits += r.violates(EPS0)
    return hits / reps, seconds / reps


@pytest.mark.benchmark
@pytest.mark.parametrize("case", list(CASES))
def test_smallest_detected_factor(case):
    found = None
    for factor in FACTORS:
        rate, seconds = detection_rate(case, factor, REPS)
        print(f"\n{case}: factor {factor:<6} detected {rate:4.0%} of {REPS}  "
              f"{seconds:6.2f} s per audit ({SAMPLES:.0e} samples per input)", flush=True)
        if rate >= 0.9:
            found = factor
            break
    print(f"\n{case}: smallest factor detected with >= 90%: {found}")
    assert found is not None
    rate, _ = detection_rate(case, 1.0, max(2, REPS // 5))
    print(f"{case}: correct client (factor 1) flagged in {rate:.0%}")
    assert rate <= 0.5
