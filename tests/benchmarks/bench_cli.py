"""Benchmark: the command line as a user feels it.

Run with:  python3 -m pytest tests/benchmarks/bench_cli.py -m benchmark -s

Prints (issue 18's targets in brackets; issue 32's rows of plot, list and fig4.toml in
test_issue_32_plot_list_and_fig4_rows, before and after with BENCH_BEFORE, below):
* start-up: `shufflesim --help` and `shufflesim bound --help`, best of 5 fresh processes [< 0.3 s];
* the README's calibrate example, 10-RR, target eps 0.5, delta 1e-6, n = 1000, one fresh
  process [< 2 s];
* the first bound call in a process after the imports (blanket_hoeffding at n = 1000) [< 50 ms];
* closed forms, warm (blanket_hoeffding, blanket_hoeffding_generic, fmt21_closed), median of
  200 calls [< 100 us].
"""

from __future__ import annotations

import os
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


# ---------------------------------------------------------------------------------------------
# Issue 32's rows of this lane: plot, list, fig4 (the others: bench_interactive.py). Each row
# runs in a fresh process; wall, CPU (user + sys from os.wait4, the process and the children
# it waited for) and peak RSS, with the load average. BENCH_BEFORE=<dir> runs every row with
# PYTHONPATH=<dir> too (a directory whose ``shufflesim`` folder holds the ``protocols`` and
# ``simulator`` folders of the tree to compare with), alternating before and after.
# ---------------------------------------------------------------------------------------------
ROOT = Path(__file__).resolve().parents[2]
CLI = "import sys; from shufflesim.simulator.cli import entry; sys.argv[0] = 'shufflesim'; entry()"
FIG4 = ROOT / "scenarios" / "learning" / "fig4.toml"


def _measured(argv: list[str], env_extra: dict | None = None) -> tuple[float, float, float]:
    """(wall s, CPU s, peak RSS MB) of ``python argv`` in a fresh process."""
    env = {**os.environ, **(env_extra or {})}
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, *argv], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    assert proc.returncode == 0, argv
    return (time.perf_counter() - start, usage.ru_utime + usage.ru_stime,
            usage.ru_maxrss / 1024.0)


def _trees() -> list[tuple[str, dict]]:
    before = os.environ.get("BENCH_BEFORE")
    return ([("before", {"PYTHONPATH": before})] if before else []) + [("after", {})]


def _print_row(name: str, label: str, measured: tuple[float, float, float], target: str) -> None:
    wall, cpu, rss = measured
    print(f"{name} | {label} | {wall:.2f} | {cpu:.2f} | {rss:.0f} | "
          f"{os.getloadavg()[0]:.1f} | {target}", flush=True)


@pytest.mark.benchmark
def test_issue_32_plot_list_and_fig4_rows(tmp_path):
    """``shufflesim plot`` on audit_krr's results [< 10 s], ``shufflesim list`` cold (an empty
    user cache: the shipped snapshot when it is fresh) and built (no snapshot) [< 0.3 s], and
    fig4.toml with one repetition of each training [< 3 s CPU] and as shipped (10)."""
    print("\nrow | tree | wall s | CPU s | peak RSS MB | load | target")
    results = tmp_path / "results"
    # issue 32's row: fig4 with one repetition of each training ([learning] repetitions = 1)
    one_repetition = tmp_path / "fig4_one_repetition.toml"
    one_repetition.write_text(FIG4.read_text().replace("\nrepetitions = 10\n",
                                                       "\nrepetitions = 1\n"))
    assert one_repetition.read_text() != FIG4.read_text()
    for label, env in _trees():  # audit_krr's results, once per tree (not a row)
        _measured(["-c", CLI, "run", str(ROOT / "scenarios" / "audit_krr.toml"), "--out",
                   str(results / label), "--workers", "1", "-q"], env)
    build = ("import sys; from pathlib import Path; "
             "from shufflesim.simulator.cli import catalogue_cache, main; "
             "catalogue_cache.SNAPSHOT = Path('/nonexistent'); "
             "sys.argv[0] = 'shufflesim'; main(['list'])")
    for label, env in _trees():
        best = min(_measured(["-c", CLI, "plot", str(results / label / "audit_krr"),
                              "--out", str(tmp_path / f"plots-{label}-{i}"), "-q"], env)
                   for i in range(2))  # best of two
        _print_row("plot audit_krr", label, best, "< 10 s")
        cold = min(_measured(["-c", CLI, "list"], {**env, "SHUFFLESIM_CACHE_DIR":
                                                   str(tmp_path / f"cache-{label}-{i}")})
                   for i in range(3))
        _print_row("list, cold (empty user cache)", label, cold, "< 0.3 s")
        if label == "after":
            built = min(_measured(["-c", build], {**env, "SHUFFLESIM_CACHE_DIR":
                                                  str(tmp_path / f"b-{i}")}) for i in range(2))
            _print_row("list, built (no snapshot, empty cache)", label, built, "(was cold)")
        for name, scenario in (("fig4.toml at one repetition", one_repetition),
                               ("fig4.toml as shipped (10 repetitions)", FIG4)):
            fig4 = _measured(["-c", CLI, "run", str(scenario), "--out",
                              str(tmp_path / f"{scenario.stem}-{label}"), "--workers", "1",
                              "-q"], env)
            _print_row(name, label, fig4, "< 3 s CPU" if scenario != FIG4 else "(as shipped)")
