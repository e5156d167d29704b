"""Benchmark: ``shufflesim list``, cold (catalogue built: every plug-in imported) and warm
(the printed catalogue read from its cache, simulator/cli/catalogue_cache.py).

Run with:  python3 -m pytest tests/benchmarks/bench_list.py -m benchmark -s

Prints wall and CPU seconds (children's user + system) of fresh processes, best of 3, and the
load average [issue 32's target for list: < 0.3 s; before issue 27: 1.26 s].
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

SCRIPT = shutil.which("shufflesim") or str(Path(sys.executable).with_name("shufflesim"))


def _run(env: dict) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([SCRIPT, "list"], capture_output=True, check=True, timeout=600, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


@pytest.mark.benchmark
def test_list_cold_and_warm(tmp_path):
    cold = []
    for i in range(3):
        env = dict(os.environ, SHUFFLESIM_CACHE_DIR=str(tmp_path / f"cold{i}"))
        cold.append(_run(env))
    env = dict(os.environ, SHUFFLESIM_CACHE_DIR=str(tmp_path / "cold0"))
    warm = [_run(env) for _ in range(3)]
    for label, runs in (("cold", cold), ("warm", warm)):
        wall, cpu = min(runs)
        print(f"\nshufflesim list, {label}: {wall:.3f} s wall, {cpu:.3f} s CPU (best of 3) "
              f"[target < 0.3 s]; load average {os.getloadavg()[0]:.1f}")
