"""Benchmark: every registered bound for 10-RR over a grid of n and eps0, with peak memory.

Run with:  python3 -m pytest tests/benchmarks/bench_bounds_grid.py -m benchmark -s
           (SHUFFLESIM_BENCH_CSV=path.csv also writes the rows as CSV)

Setting (issue 18): k-RR with k = 10, delta = 1e-6; n in {10^3, 10^4, 10^5, 10^6, 10^8} and eps0
in {0.01, 1, 4, 8}, plus n = 10^9 at eps0 = 0.01. Each bound runs in its own process (so that
one bound's caches never speed up another's), after a warm-up call at n = 100 that pays for the
imports and the first-call set-up; every point is then timed cold for the engine's per-(n,
weights) plan and table caches, which are cleared before each call. Prints, per bound and point:
wall seconds (untraced), tracemalloc peak (MB, from a second traced run of points under 30 s)
and eps; a point that exceeds the per-call limit (default 120
s, SHUFFLESIM_BENCH_LIMIT) is reported as a timeout and the bound's remaining larger n at that
eps0 are skipped. Targets (issue 18): < 0.05 s for optimal-blanket and < 0.1 s for
exact-lower at n = 10^3-10^4; exact-lower at n = 10^8, eps0 = 1 < 3 s and < 300 MB; every
bound at eps0 = 0.01, n = 10^9 < 10 s.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys

import pytest

from shufflesim.protocols.bounds.catalogue import applicable_bounds
from shufflesim.protocols.randomizers import make_randomizer

K = 10
DELTA = 1e-6
NS = (10**3, 10**4, 10**5, 10**6, 10**8)
EPS0S = (0.01, 1.0, 4.0, 8.0)
EXTRA = ((10**9, 0.01),)
LIMIT = float(os.environ.get("SHUFFLESIM_BENCH_LIMIT", "120"))

#: The worker: evaluates one bound over the points given on stdin, one JSON line per point.
WORKER = r"""
import json, signal, sys, time, tracemalloc
from shufflesim.protocols.bounds import catalogue
from shufflesim.protocols.randomizers import make_randomizer

try:
    from shufflesim.protocols.bounds.engine import plans as engine_plans
    CACHES = [engine_plans.t_plan, engine_plans.multi_plan]
except (ImportError, AttributeError):
    CACHES = []
try:
    from shufflesim.protocols.bounds.engine import exact_band
    CACHES += [exact_band._b_tables, exact_band._x_tables, exact_band._seen_parameters,
               exact_band._built]
except (ImportError, AttributeError):
    pass

name, k, delta, limit = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
MEMORY_RUN_BELOW = 30.0
points = json.loads(sys.stdin.read())

class Timeout(Exception):
    pass

def alarm(signum, frame):
    raise Timeout()

signal.signal(signal.SIGALRM, alarm)
catalogue.evaluate(name, make_randomizer("krr", epsilon0=1.0, domain_size=k), 100, delta)
skip = set()


def cold():
    for cache in CACHES:
        (cache.clear if isinstance(cache, (dict, set)) else cache.cache_clear)()


for n, eps0 in points:
    if eps0 in skip:
        print(json.dumps({"n": n, "eps0": eps0, "status": "skipped"}), flush=True)
        continue
    randomizer = make_randomizer("krr", epsilon0=eps0, domain_size=k)
    cold()
    start = time.perf_counter()
    signal.setitimer(signal.ITIMER_REAL, limit)
    try:
        ev = catalogue.evaluate(name, randomizer, n, delta)
        status = "ok" if ev.result is not None else "not computed"
        eps = None if ev.result is None else float(ev.result.epsilon)
    except Timeout:
        status, eps = "timeout", None
        skip.add(eps0)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    seconds = time.perf_counter() - start
    peak = None
    if status == "ok" and seconds < MEMORY_RUN_BELOW:
        # peak memory from a second, traced run (tracemalloc slows numpy-heavy code, so the
        # time above is taken without it)
        cold()
        tracemalloc.start()
        catalogue.evaluate(name, randomizer, n, delta)
        peak = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
    print(json.dumps({"n": n, "eps0": eps0, "status": status, "epsilon": eps,
                      "seconds": seconds, "peak_mb": peak}), flush=True)
"""


def _bound_names() -> list[str]:
    probe = make_randomizer("krr", epsilon0=1.0, domain_size=K)
    return [spec.name for spec in applicable_bounds(probe)]


def _points() -> list[tuple[int, float]]:
    points = [(n, e) for e in EPS0S for n in NS]
    return points + list(EXTRA)


@pytest.mark.benchmark
def test_every_bound_over_the_grid():
    rows = []
    print(f"\n{'bound':<26} {'eps0':>5} {'n':>6} {'seconds':>9} {'peak MB':>8}  eps")
    for name in _bound_names():
        done = subprocess.run(
            [sys.executable, "-c", WORKER, name, str(K), str(DELTA), str(LIMIT)],
            input=json.dumps(_points()), capture_output=True, text=True, check=False,
            timeout=LIMIT * len(_points()) + 120)
        if done.returncode != 0:
            # One bound's worker failing (e.g. a half-edited tree) must not hide the others.
            last = (done.stderr.strip().splitlines() or ["?"])[-1]
            rows.append({"bound": name, "status": f"worker failed: {last}"})
            print(f"{name:<26} worker failed: {last[:120]}")
        for line in done.stdout.splitlines():
            row = {"bound": name, **json.loads(line)}
            rows.append(row)
            if row["status"] in ("ok", "timeout"):
                eps = "-" if row.get("epsilon") is None else f"{row['epsilon']:.6g}"
                mark = "" if row["status"] == "ok" else "  TIMEOUT"
                peak = "-" if row.get("peak_mb") is None else f"{row['peak_mb']:.1f}"
                print(f"{name:<26} {row['eps0']:>5g} {row['n']:>6.0e} "
                      f"{row['seconds']:>9.3f} {peak:>8}  {eps}{mark}")
    path = os.environ.get("SHUFFLESIM_BENCH_CSV")
    if path:
        keys = ["bound", "eps0", "n", "status", "epsilon", "seconds", "peak_mb"]
        with open(path, "w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=keys, extrasaction="ignore")
            writer.writeheader()
            writer.writerows(rows)
    assert rows
