"""Benchmark: a sweep of 200 units on 1 and 2 local worker processes (and a 2-worker Dask
local cluster), in units per second.

Run with:  python3 -m pytest tests/benchmarks/bench_units.py -m benchmark -s

The sweep: 20 points (eps0) x 10 chunks of 2 repetitions of 10-ary randomized response with
n = 2 x 10^5 users, all reports randomized and shuffled (below the sizes at which the batch path
itself uses threads, so one worker uses one core). Worker start-up is excluded (each pool is
warmed up on four units first) and reported separately; each figure is the best of two timings;
the tables of every executor are checked equal. On a 2-core machine the ideal speed-up at 2
workers is 2; other processes competing for the cores lower it.
"""

from __future__ import annotations

import os
import time

import numpy as np
import pytest

from shufflesim.simulator.execution.executors import DaskExecutor, InlineExecutor, ProcessExecutor
from shufflesim.simulator.execution.runner import run_scenario
from shufflesim.simulator.scenario.loader import parse_scenario

EPSILONS = ", ".join(f"{e:.3f}" for e in np.geomspace(0.25, 4.0, 20))
SWEEP = f"""
name = "bench_units"
seed = 1
repetitions = 20
[population]
n = 200000
data = {{ distribution = "zipf", domain_size = 10, exponent = 0.7 }}
budget = {{ distribution = "constant", epsilon0 = 1.0 }}
[randomizer]
name = "krr"
[estimator]
name = "frequency"
[batch]
chunk_repetitions = 2
[sweep]
"population.budget.epsilon0" = [{EPSILONS}]
"""
#: Four units: every worker process is started (and imports the package) before the timing.
WARM_UP = SWEEP.replace("repetitions = 20", "repetitions = 4").replace(
    f"[{EPSILONS}]", "[1.0, 2.0]")


def _timed(executor, scenario, repeats: int = 2):
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        tables = run_scenario(scenario, executor=executor)
        best = min(best, time.perf_counter() - start)
    return best, tables


@pytest.mark.benchmark
def test_units_scale_with_workers():
    scenario = parse_scenario(SWEEP)
    warm = parse_scenario(WARM_UP)
    units = 20 * 10
    assert sum(-(-p.settings.repetitions // 2) for p in scenario.points) == units
    print(f"\nload average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores "
          "(other processes take their share of the cores)")
    seconds, expected = _timed(InlineExecutor(), scenario)
    rates = {1: units / seconds}
    print(f"1 worker (this process): {seconds:.2f} s, {rates[1]:.1f} units/s")
    with ProcessExecutor(2, inline_seconds=0) as pool:
        start = time.perf_counter()
        run_scenario(warm, executor=pool)
        print(f"2 workers: start-up and four warm-up units {time.perf_counter() - start:.2f} s")
        seconds, tables = _timed(pool, scenario)
    rates[2] = units / seconds
    assert tables["utility"].equals(expected["utility"])
    print(f"2 local worker processes: {seconds:.2f} s, {rates[2]:.1f} units/s, "
          f"speed-up {rates[2] / rates[1]:.2f}x")
    try:
        dask = DaskExecutor(2)
    except Exception as error:  # the optional extra may be absent
        print(f"dask: not measured ({error})")
        return
    with dask:
        run_scenario(warm, executor=dask)
        seconds, tables = _timed(dask, scenario)
    assert tables["utility"].equals(expected["utility"])
    print(f"dask local cluster, 2 worker processes: {seconds:.2f} s, "
          f"{units / seconds:.1f} units/s, speed-up {units / seconds / rates[1]:.2f}x")
