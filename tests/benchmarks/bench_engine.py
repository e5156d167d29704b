"""Benchmark: the hockey-stick engine's eps(delta) for 10-RR up to n = 10^8.

Run with:  python3 -m pytest tests/benchmarks/bench_engine.py -m benchmark -s

Setting (brief H4a): k-RR with k = 10, eps0 = 1, delta = 1e-6; the whole eps(delta) computation
(engine.epsilon_bound over both directions; k-RR is symmetric, so the swapped direction is
deduplicated) for the blanket GPARV (000 Table 1) and the exact-pair GPARV (000 Thm 14), at
n = 10^4, 10^6 and 10^8. Prints seconds (wall and process CPU), the number of delta
evaluations, the bracket [lower, upper] of eps and the peak memory (tracemalloc peak of the
computation; process max RSS). Targets (brief): < 1 s at n = 10^6, < 10 s at n = 10^8, < 4 GB;
n = 10^4 is allowed 2 s (the polishing pass needs the multi-block refinement there, where the
pool's spread is a larger share of sd(S)).
The plans cached per (n, weights) are cleared before each run, so every timing is cold.
"""

from __future__ import annotations

import math
import resource
import time
import tracemalloc

import numpy as np
import pytest

from shufflesim.protocols.bounds.atoms import RatioAtoms
from shufflesim.protocols.bounds.engine import plans as engine_plans
from shufflesim.protocols.bounds.engine.core import epsilon_bound

EPS0 = 1.0
DELTA = 1e-6
TARGET_SECONDS = {10**4: 2.0, 10**6: 1.0, 10**8: 10.0}
TARGET_BYTES = 4 * 1024**3


def krr_blanket(eps0: float, k: int = 10) -> RatioAtoms:
    e = math.exp(eps0)
    p = 1.0 / (e + k - 1)
    return RatioAtoms(np.array([e, 1.0, 1.0]), np.array([1.0, e, 1.0]),
                      np.array([p, p, (k - 2) * p]))


def krr_pair(eps0: float, k: int = 10) -> RatioAtoms:
    e = math.exp(eps0)
    p = 1.0 / (e + k - 1)
    return RatioAtoms(np.array([e, 1.0, 1.0 / e, 1.0]), np.array([1.0, e, 1.0 / e, 1.0]),
                      np.array([p, p, e * p, (k - 3) * p]))


def _clear_caches():
    for fn in (engine_plans.t_plan, engine_plans.multi_plan):
        fn.cache_clear()


@pytest.mark.benchmark
@pytest.mark.parametrize("n", [10**4, 10**6, 10**8])
@pytest.mark.parametrize("name, atoms_fn", [("blanket", krr_blanket), ("exact-pair", krr_pair)])
def test_epsilon_of_delta_krr(name, atoms_fn, n):
    atoms = atoms_fn(EPS0)
    _clear_caches()
    tracemalloc.start()
    wall, cpu = time.perf_counter(), time.process_time()
    res = epsilon_bound([atoms, atoms.swapped()], n, DELTA)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(f"\n{name:10s} n={n:>9d}  eps={res.value:.6g} in [{res.lower:.8g}, {res.upper:.8g}]"
          f"  evaluations={res.evaluations}  wall={wall:.2f}s cpu={cpu:.2f}s"
          f"  peak(tracemalloc)={peak / 2**20:.0f} MiB  maxrss={rss / 2**20:.0f} MiB")
    assert not res.saturated and res.lower <= res.upper
    assert cpu < TARGET_SECONDS[n], f"{cpu:.2f}s CPU exceeds the {TARGET_SECONDS[n]}s target"
    assert peak < TARGET_BYTES and rss < TARGET_BYTES
