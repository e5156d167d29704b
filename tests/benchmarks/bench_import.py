"""Benchmark: ``python -c "import shufflesim"`` (issue 28: target < 0.2 s).

Run with:  python -m pytest tests/benchmarks/bench_import.py -m benchmark -s

Prints, for fresh processes: the wall and CPU seconds of ``python -c "import shufflesim"``
beside those of a bare ``python -c "pass"`` (the interpreter's own start), best and median of
7 runs, and the load average; then the first use of a name (``shufflesim.bounds``, which
imports the numerics) in one process.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import time

import pytest


def _fresh(code: str) -> tuple[float, float]:
    """(wall, CPU) seconds of a fresh ``python -c code`` (CPU: user + system of the child)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


@pytest.mark.benchmark
def test_import_shufflesim():
    print(f"\nload average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for label, code in (("python -c pass", "pass"),
                        ('python -c "import shufflesim"', "import shufflesim"),
                        ("... and shufflesim.__version__, __all__",
                         "import shufflesim; shufflesim.__version__; shufflesim.__all__")):
        runs = [_fresh(code) for _ in range(7)]
        walls, cpus = [w for w, _ in runs], [c for _, c in runs]
        print(f"{label}: wall best {min(walls):.3f} s, median {statistics.median(walls):.3f} s; "
              f"CPU best {min(cpus):.3f} s, median {statistics.median(cpus):.3f} s "
              "[target < 0.2 s]")


@pytest.mark.benchmark
def test_first_use_of_a_name():
    code = ("import time; t = time.perf_counter(); import shufflesim; a = time.perf_counter(); "
            "shufflesim.bounds; b = time.perf_counter(); "
            "print(f'{a - t:.3f} {b - a:.3f}')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, timeout=120)
    imported, first = done.stdout.split()
    print(f"\nin one process: import shufflesim {imported} s; first read of shufflesim.bounds "
          f"(imports pandas and the bound stack) {first} s")
