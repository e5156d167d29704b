"""Benchmark: time of issue 31's exact-curve bounds at n = 1e3, 1e6 and 1e8 (its closing note).

Run with (the n = 1e8 brr row takes minutes of CPU; select rows with -k):

    python3 -m pytest tests/benchmarks/bench_exact_curves.py -m benchmark -s

Each row prints the value, its certified bracket, wall and CPU seconds (user + system of this
process) and the load average before and after. Nothing about time is asserted; the only
assertion is that a computed upper bound is not below the proven lower bounds of the catalogue
at the same point (exact-lower), so a wrong side would show here too. Rows outside a bound's
regime print its refusal.
"""

from __future__ import annotations

import os
import resource
import time

import pytest

from shufflesim.protocols.bounds import catalogue as cat
from shufflesim.protocols.bounds.numerical.krr_relabel import krr_relabel_epsilon
from shufflesim.protocols.errors import ParameterError
from shufflesim.protocols.randomizers import make_randomizer

ROWS = [
    # (bound, randomizer name, options, eps0, n, delta)
    ("krr-exact", "krr", dict(domain_size=3), 4.0, 10**3, 1e-12),
    ("krr-exact", "krr", dict(domain_size=3), 10.0, 10**5, 1e-4),
    ("krr-exact", "krr", dict(domain_size=3), 10.0, 10**6, 1e-8),
    ("krr-exact", "krr", dict(domain_size=3), 10.0, 10**8, 1e-8),
    ("krr-exact-lower", "krr", dict(domain_size=3), 4.0, 10**3, 1e-12),
    ("krr-exact-lower", "krr", dict(domain_size=10), 1.0, 100, 1e-12),
    ("krr-relabel", "krr", dict(domain_size=10), 1.0, 40, 1e-12),
    ("krr-relabel", "krr", dict(domain_size=10), 1.0, 10**3, 1e-12),
    ("brr-exact", "brr", {}, 1.0, 10**3, 1e-6),
    ("brr-exact", "brr", {}, 1.0, 10**6, 1e-6),
    ("brr-exact", "brr", {}, 4.0, 10**8, 1e-6),
    ("brr-exact", "brr", {}, 1.0, 10**8, 1e-6),
]


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


@pytest.mark.benchmark
@pytest.mark.parametrize("bound, name, options, epsilon0, n, delta", ROWS,
                         ids=[f"{r[0]}-{r[1]}{r[2].get('domain_size', '')}-e{r[3]:g}-n{r[4]:.0e}"
                              for r in ROWS])
def test_exact_curve_time(bound, name, options, epsilon0, n, delta):
    randomizer = make_randomizer(name, epsilon0=epsilon0, **options)
    load0 = os.getloadavg()[0]
    wall, cpu = time.perf_counter(), _cpu()
    try:
        result = cat.get_bound(bound).compute(randomizer, n, delta)
    except ParameterError as refusal:
        print(f"\n{bound} {name} eps0={epsilon0:g} n={n:.0e} delta={delta:g}: refused ({refusal})")
        return
    wall, cpu = time.perf_counter() - wall, _cpu() - cpu
    print(f"\n{bound} {name}{options.get('domain_size', '')} eps0={epsilon0:g} n={n:.0e} "
          f"delta={delta:g}: {result.epsilon:.9g} (error {result.epsilon_error:.2g}) "
          f"wall {wall:.2f} s, CPU {cpu:.2f} s, load {load0:.1f} -> {os.getloadavg()[0]:.1f}")
    if result.kind.value == "upper":
        lower = cat.get_bound("exact-lower").compute(randomizer, n, delta).epsilon
        assert result.epsilon >= lower * (1 - 1e-9)


@pytest.mark.benchmark
@pytest.mark.parametrize("epsilon0, delta", [(1.0, 1e-12), (4.0, 1e-4)])
def test_krr_relabel_direct_time(epsilon0, delta):
    """10-RR at n = 100 (issue 31's two points above 1.01 in session 11), through the module's
    krr_relabel_epsilon (the catalogue declares n <= 40)."""
    randomizer = make_randomizer("krr", epsilon0=epsilon0, domain_size=10)
    load0 = os.getloadavg()[0]
    wall, cpu = time.perf_counter(), _cpu()
    result = krr_relabel_epsilon(randomizer, 100, delta)
    wall, cpu = time.perf_counter() - wall, _cpu() - cpu
    print(f"\nkrr-relabel krr10 eps0={epsilon0:g} n=100 delta={delta:g}: {result.epsilon:.9g} "
          f"(error {result.epsilon_error:.2g}) wall {wall:.2f} s, CPU {cpu:.2f} s, "
          f"load {load0:.1f} -> {os.getloadavg()[0]:.1f}")
    lower = cat.get_bound("exact-lower").compute(randomizer, 100, delta).epsilon
    assert result.epsilon >= lower * (1 - 1e-9)
