"""Benchmark: the whole design table at n = 10^6 and T = 365 (issue 30).

Run with:  python3 -m pytest tests/benchmarks/bench_design.py -m benchmark -s
Setting: a daily frequency collection for a year, d = 100 values, lifetime (eps, delta) =
(1, 1e-8); every candidate of the frequency task (10 single-message frequency oracles with
their parameters, pure_dump, two mix_dump variants). Each run starts from an empty calibration
cache, in a fresh process state for the design module (the composed PLDs' own caches in
protocols.accounting stay warm after the first repetition, as in a long session). Prints wall
and CPU seconds and the load average. Target: under 10 s on the project's 2-core machine
(reported, not asserted: no assertion may depend on timing).
"""

from __future__ import annotations

import os
import time

import pytest

from shufflesim.simulator.design import design
from shufflesim.simulator.design.certificate import clear_cache

TARGET_SECONDS = 10.0


@pytest.mark.benchmark
def test_design_table_at_a_million_users_over_a_year():
    clear_cache()
    load = os.getloadavg()
    wall, cpu = time.perf_counter(), time.process_time()
    frame = design("frequency", 10**6, 1.0, 1e-8, 365, domain_size=100)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    met = frame[frame.meets_target]
    print(f"\n{len(frame)} candidates ({len(met)} meet the target): wall {wall:.1f} s, "
          f"CPU {cpu:.1f} s (target {TARGET_SECONDS:g} s); load average before "
          f"{load[0]:.1f}, after {os.getloadavg()[0]:.1f}")
    print(met[["rank", "randomizer", "parameters", "epsilon0", "blanket_messages", "bound",
               "epsilon", "bits", "messages", "predicted_l2"]].to_string(index=False))
    assert len(frame) >= 10 and len(met) >= 10
    assert (met.epsilon <= 1.0).all()
