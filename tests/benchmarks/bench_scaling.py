"""Benchmark: do runs scale with cores? (issue 32 item 6)

Run with (on an idle machine: wall speed-ups on a loaded one mean nothing):

    python3 -m pytest tests/benchmarks/bench_scaling.py -m benchmark -s

Two k-RR runs, each a fresh ``shufflesim run`` process per worker count (1, 2 and all cores):

* ``repetitions``: one sweep point, BENCH_SCALING_REPS repetitions (default 40) of
  BENCH_SCALING_N users (default 300000), one repetition per unit (40 units);
* ``sweep``: 24 sweep points over eps0, one repetition each, BENCH_SCALING_N users.

For each it prints wall and CPU seconds (user + system of the process and its workers), the
CPU per unit, the speed-up over 1 worker (wall) and the load average before and after, and
checks that the tables are identical whatever the workers (the only assertion: no timing is
asserted). Issue 32's target: 2 workers at least 1.8x faster than 1 on the 2-core machine.
n = 300000 keeps one repetition below the batch path's threading threshold (32 MB of working
memory per piece), so that one worker is one busy core.
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

SCRIPT = shutil.which("shufflesim") or str(Path(sys.executable).with_name("shufflesim"))
N = int(os.environ.get("BENCH_SCALING_N", "300000"))
REPETITIONS = int(os.environ.get("BENCH_SCALING_REPS", "40"))
EPSILONS = [round(0.25 * k, 2) for k in range(1, 25)]

HEAD = """seed = 7
[population]
n = {n}
data = {{ distribution = "zipf", domain_size = 10, exponent = 0.7 }}
budget = {{ distribution = "constant", epsilon0 = 1.0 }}
[randomizer]
name = "krr"
[estimator]
name = "frequency"
[batch]
chunk_repetitions = 1
"""
SCENARIOS = {
    "repetitions": (f'name = "scaling_repetitions"\nrepetitions = {REPETITIONS}\n'
                    + HEAD.format(n=N), REPETITIONS),
    "sweep": ('name = "scaling_sweep"\nrepetitions = 1\n' + HEAD.format(n=N)
              + f'[sweep]\n"population.budget.epsilon0" = {EPSILONS}\n', len(EPSILONS)),
}


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def _run(scenario: Path, out: Path, workers: int) -> tuple[float, float]:
    """(wall, CPU) seconds of one ``shufflesim run`` and its workers."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([SCRIPT, "run", str(scenario), "--out", str(out), "--workers", str(workers),
                    "-q"], check=True, timeout=3600, capture_output=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


@pytest.mark.benchmark
@pytest.mark.parametrize("kind", list(SCENARIOS))
def test_speed_up_with_workers(kind, tmp_path):
    text, units = SCENARIOS[kind]
    scenario = tmp_path / f"{kind}.toml"
    scenario.write_text(text)
    counts = sorted({1, 2, _cores()})
    print(f"\n{kind}: {units} simulation units of n = {N}, {_cores()} cores; "
          f"load average before {_load()}")
    tables, first = {}, None
    for workers in counts:
        out = tmp_path / f"w{workers}"
        wall, cpu = _run(scenario, out, workers)
        first = first or wall
        tables[workers] = pd.read_parquet(next(out.glob("*/utility.parquet")))
        print(f"  workers = {workers}: {wall:6.2f} s wall, {cpu:6.2f} s CPU "
              f"({cpu / units:.3f} s CPU per unit), speed-up {first / wall:.2f}x "
              f"[target at 2 workers on 2 cores: >= 1.8x]; load average {_load()}")
    for workers in counts[1:]:
        pd.testing.assert_frame_equal(tables[workers], tables[1])  # identical whatever workers
