"""Benchmark: do runs scale with cores? (issue 32 item 6)

Run with (on an idle machine: wall speed-ups on a loaded one mean nothing):

    python3 -m pytest tests/benchmarks/bench_scaling.py -m benchmark -s -k "points24 or audit"

Four runs, each a fresh ``shufflesim run`` process per worker count (1, 2 and all cores):

* ``points24``: the shipped scenarios/scaling_audit.toml (24 sweep points of k-RR, d = 4, 8,
  16; per point 4 simulation units and an audit unit of 10^6 trials per world, 1-4 s of
  CPU each): the run of 20 units or more of issue 32's target;
* ``audit``: the shipped scenarios/audit_krr.toml (18 points, audit units of 0.15-3 s);
* ``repetitions``: one k-RR sweep point, BENCH_SCALING_REPS repetitions (default 48) of
  BENCH_SCALING_N users (default 800000), one repetition per unit;
* ``sweep``: 24 k-RR sweep points over eps0, one repetition each, BENCH_SCALING_N users.

For each it prints wall and CPU seconds (user + system of the process and its workers), the
CPU per unit, the speed-up over 1 worker (wall) and the load average before and after, and
checks that the tables are identical whatever the workers (the only assertion: no timing is
asserted; every process of a run computes with one BLAS thread, simulator/execution/blas.py,
because the BLAS thread count changes the rounding of sums). Issue 32's target: 2 workers at
least 1.8x faster than 1 on the 2-core machine, on a run of 20 units or more.

Every run is traced (SHUFFLESIM_TRACE, simulator/execution/trace.py) and the benchmark prints
the trace's summary (simulator/execution/trace_report.py): a Gantt-like row per process, each
process's start-up, units, CPU and idle time, the serial parts, the critical path, and two
load-independent lengths from CPU seconds (the traced assignment, and a replay of the queue).
On a loaded machine compare those with the 1-worker run's CPU, not the wall times.

Starting a worker process costs about a second of CPU (imports) and a k-RR repetition of
800000 users about 0.05 s, so the light runs show the fixed costs; n = 800000 keeps one
repetition below the batch path's threading threshold (32 MB of working memory per piece),
so that one worker is one busy core. Select one with ``-k points24`` (``-k audit``, ...).
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

from shufflesim.simulator.execution import trace_report
from shufflesim.simulator.execution.trace import ENV

SCRIPT = shutil.which("shufflesim") or str(Path(sys.executable).with_name("shufflesim"))
N = int(os.environ.get("BENCH_SCALING_N", "800000"))
REPETITIONS = int(os.environ.get("BENCH_SCALING_REPS", "48"))
SCENARIO_DIR = Path(__file__).resolve().parents[2] / "scenarios"
AUDIT = SCENARIO_DIR / "audit_krr.toml"
SCALING = SCENARIO_DIR / "scaling_audit.toml"
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
    "points24": (SCALING.read_text(), 24),
    "audit": (AUDIT.read_text(), 18),
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


def _run(scenario: Path, out: Path, workers: int, trace: Path) -> tuple[float, float]:
    """(wall, CPU) seconds of one ``shufflesim run`` and its workers, traced to ``trace``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([SCRIPT, "run", str(scenario), "--out", str(out), "--workers",
                           str(workers), "-q"], timeout=3600, capture_output=True, text=True,
                          env={**os.environ, ENV: str(trace)})
    assert done.returncode == 0, done.stderr[-2000:]
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
    what = {"points24": "24 points (4 simulation units + an audit unit each)",
            "audit": "18 points (simulation + audit units)"}.get(
        kind, f"{units} simulation units of n = {N}")
    print(f"\n{kind}: {what}, {_cores()} cores; load average before {_load()}")
    tables, first = {}, None
    for workers in counts:
        out, trace = tmp_path / f"w{workers}", tmp_path / f"w{workers}.trace"
        wall, cpu = _run(scenario, out, workers, trace)
        first = first or wall
        tables[workers] = {p.name: pd.read_parquet(p) for p in out.glob("*/*.parquet")}
        print(f"  workers = {workers}: {wall:6.2f} s wall, {cpu:6.2f} s CPU "
              f"({cpu / units:.3f} s CPU per point or unit), speed-up {first / wall:.2f}x "
              f"[target at 2 workers on 2 cores: >= 1.8x]; load average {_load()}")
        traced = trace_report.read(trace.read_text().splitlines())
        print("    " + trace_report.summary(traced).replace("\n", "\n    "))
        print(f"    CPU path (a core per process, traced assignment) "
              f"{trace_report.cpu_path(traced):.2f} s; replayed from CPU with the executor's "
              f"queue {trace_report.replay(traced):.2f} s")
    for workers in counts[1:]:  # identical whatever the workers
        assert sorted(tables[workers]) == sorted(tables[1])
        for name, table in tables[1].items():
            pd.testing.assert_frame_equal(tables[workers][name].drop(columns="seconds",
                                                                     errors="ignore"),
                                          table.drop(columns="seconds", errors="ignore"))
