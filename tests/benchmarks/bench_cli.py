"""Benchmark: the command line as a user feels it.

Run with:  python3 -m pytest tests/benchmarks/bench_cli.py -m benchmark -s

Prints (issue 18's targets in brackets):
* start-up: `shufflesim --help` and `shufflesim bound --help`, best of 5 fresh processes [< 0.3 s];
* the README's calibrate example, 10-RR, target eps 0.5, delta 1e-6, n = 1000, one fresh
  process [< 2 s];
* the first bound call in a process after the imports (blanket_hoeffding at n = 1000) [< 50 ms];
* closed forms, warm (blanket_hoeffding, blanket_hoeffding_generic, fmt21_closed), median of
  200 calls [< 100 us].
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest

from shufflesim.protocols.bounds import catalogue
from shufflesim.protocols.randomizers import make_randomizer

SCRIPT = shutil.which("shufflesim") or str(Path(sys.executable).with_name("shufflesim"))
CALIBRATE = ["calibrate", "--randomizer", "krr", "--domain-size", "10", "--target-epsilon",
             "0.5", "--delta", "1e-6", "--n", "1000", "--quiet"]


def _wall(args: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run([SCRIPT, *args], capture_output=True, check=True, timeout=600)
    return time.perf_counter() - start


@pytest.mark.benchmark
def test_start_up():
    for args in (["--help"], ["bound", "--help"]):
        best = min(_wall(args) for _ in range(5))
        print(f"\nshufflesim {' '.join(args)}: {best:.3f} s (best of 5) [target < 0.3 s]")


@pytest.mark.benchmark
def test_calibrate_readme_example():
    seconds = _wall(CALIBRATE)
    print(f"\nshufflesim {' '.join(CALIBRATE)}: {seconds:.2f} s [target < 2 s]")


@pytest.mark.benchmark
def test_first_bound_call_in_a_process():
    code = ("import time; from shufflesim.protocols.bounds import catalogue; "
            "from shufflesim.protocols.randomizers import make_randomizer; "
            "r = make_randomizer('krr', epsilon0=1.0, domain_size=10); t = time.perf_counter(); "
            "catalogue.evaluate('blanket_hoeffding', r, 1000, 1e-6); "
            "print(time.perf_counter() - t)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, timeout=120)
    print(f"\nfirst bound call after the imports: {float(done.stdout) * 1e3:.1f} ms "
          "[target < 50 ms]")


@pytest.mark.benchmark
@pytest.mark.parametrize("name", ["blanket_hoeffding", "blanket_hoeffding_generic",
                                  "fmt21_closed"])
def test_closed_forms_warm(name):
    randomizer = make_randomizer("krr", epsilon0=0.3, domain_size=10)
    catalogue.evaluate(name, randomizer, 100_000, 1e-6)
    times = []
    for _ in range(200):
        start = time.perf_counter()
        catalogue.evaluate(name, randomizer, 100_000, 1e-6)
        times.append(time.perf_counter() - start)
    print(f"\n{name}, warm: {statistics.median(times) * 1e6:.0f} us (median of 200) "
          "[target < 100 us]")
