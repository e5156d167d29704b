"""Benchmark: the rows of issue 32 ("every command in interactive time"), before and after.

Run with:  python -m pytest tests/benchmarks/bench_interactive.py -m benchmark -s

Every row runs in a fresh process; it prints wall seconds, CPU seconds (user + sys of that
process, from os.wait4) and its peak RSS, with the 1-minute load average at its start (the
machine is shared: CPU seconds are the comparable figure). With BENCH_BEFORE=<dir> every row
is also run with PYTHONPATH=<dir>, a directory whose ``shufflesim`` folder holds the
``protocols`` and ``simulator`` folders of the tree to compare with (e.g. symlinks into a
``git worktree`` of an older commit); the two runs of a row alternate (before, after), so they
see about the same load. BENCH_ROWS=name,name selects rows; BENCH_TIMEOUT (default 900 s)
bounds each run. Rows of other issues' lanes (learning: 33, ``list``: 27) are left to them.
"""

from __future__ import annotations

import contextlib
import json
import os
import statistics
import subprocess
import sys
import time

import pytest

CLI = "import sys; from shufflesim.simulator.cli import entry; sys.argv[0] = 'shufflesim'; entry()"
KRR = ["--randomizer", "krr", "--domain-size", "10", "--delta", "1e-6", "-q"]

#: name -> (argv after "python -c CODE", target)
ROWS = {
    "calibrate-rounds": (["calibrate", *KRR, "--target-epsilon", "1", "--n", "100000",
                          "--rounds", "100"], "< 3 s, < 300 MB"),
    "bound-1e6-T1000": (["bound", *KRR, "--epsilon0", "1", "--n", "1000000", "--rounds",
                         "1000"], "< 1 s"),
    "bound-1e5-T100": (["bound", *KRR, "--epsilon0", "1", "--n", "100000", "--rounds", "100"],
                       "< 0.5 s"),
    "optimal-blanket-1e5-eps4": (["bound", *KRR, "--epsilon0", "4", "--n", "100000",
                                  "--method", "optimal-blanket"], "< 0.05 s (bound itself)"),
    "exact-lower-1e9": (["bound", *KRR, "--epsilon0", "1", "--n", "1000000000", "--method",
                         "exact-lower"], "< 1 s"),
    "laplace-metric-eps2": (["bound", "--randomizer", "laplace_metric", "--param", "pair_x0=0.4",
                             "--param", "pair_x1=0.6", "--epsilon0", "2", "--n", "10000",
                             "--delta", "1e-6", "--method", "optimal-blanket", "--method",
                             "exact-lower", "-q"], "< 2 s each"),
    "cheu-exact-lower-d16": (["bound", "--randomizer", "cheu", "--domain-size", "16",
                              "--param", "flip_probability=0.2", "--epsilon0", "1", "--n",
                              "10000", "--delta", "1e-6", "--method",
                              "multi-message-exact-lower", "-q"], "< 0.5 s"),
}

#: three round PLDs of 10-RR at n = 1e6 (one per composing method, T = 1)
_ROUND_PLDS = (
    "from shufflesim.protocols.randomizers import make_randomizer\n"
    "from shufflesim.protocols.accounting.compose import Round, compose_rounds\n"
    "r = make_randomizer('krr', epsilon0=1.0, domain_size=10)\n"
    "for m in ('optimal-blanket', 'exact-lower', 'fmt21-clone'):\n"
    "    compose_rounds([Round(r, 1000000, 1)], 1e-6, m)\n")

#: Python snippets (run with python -c), name -> (code, target)
SNIPPETS = {
    "round-pld-1e6": (_ROUND_PLDS, "< 0.1 s per PLD (three PLDs here, T = 1)"),
    # the same with one BLAS thread, as every command runs (simulator/execution/blas.py):
    # under load, OpenBLAS's two threads made the blanket PLD's small matrix products 25x
    # slower (0.65 -> 15.8 ms each at load 6; issue 32, session 13)
    "round-pld-1e6-one-blas-thread": (
        "from shufflesim.simulator.execution import blas\n"
        "blas.default_for_commands()\n" + _ROUND_PLDS,
        "< 0.1 s per PLD (three PLDs here, T = 1)"),
    "cyclic-geometric-exact-lower": (
        "import itertools\n"
        "import numpy as np\n"
        "from shufflesim.protocols.bounds.atoms import RatioAtoms\n"
        "from shufflesim.protocols.bounds.engine.core import epsilon_bound\n"
        "k, eps0, n = 7, 1.0, 1000\n"
        "dist = np.array([[min((x - y) % k, (y - x) % k) for y in range(k)] for x in range(k)])\n"
        "R = np.exp(-eps0 / 3 * dist)\n"
        "R /= R.sum(axis=1, keepdims=True)\n"
        "best = 0.0\n"
        "for x1, x2 in itertools.permutations(range(1, k), 2):   # x0 = 0 (rotations)\n"
        "    at = RatioAtoms(R[0] / R[x2], R[x1] / R[x2], R[x2])\n"
        "    est = epsilon_bound([at, RatioAtoms(at.b, at.a, at.weight)], n, 1e-6, 'lower')\n"
        "    best = max(best, est.value)\n"
        "print(best)\n",
        "< 5 s (000 Thm 14 over the 30 triples with x0 = 0 of a cyclic geometric randomizer "
        "over 7 values, R(x)(y) ~ e^(-eps0 d(x, y) / 3), eps0 = 1, n = 1000)"),
    "optimal-blanket-around-switch": (
        "from shufflesim.simulator.execution import blas\n"
        "blas.default_for_commands()\n"           # one BLAS thread, as commands run
        "from shufflesim.protocols.randomizers import make_randomizer\n"
        "from shufflesim.protocols.bounds import catalogue\n"
        "for eps0 in (1.0, 0.5):\n"
        "    r = make_randomizer('krr', epsilon0=eps0, domain_size=10)\n"
        "    for n in (30000, 40000, 50000, 60000):\n"
        "        catalogue.evaluate('optimal-blanket', r, n, 1e-6)\n",
        "< 0.05 s per call (eight calls here, 10-RR, around exact_band.MAX_CELLS)"),
    "optimal-blanket-sweep-worst": (
        "from shufflesim.simulator.execution import blas\n"
        "blas.default_for_commands()\n"           # one BLAS thread, as commands run
        "from shufflesim.protocols.randomizers import make_randomizer\n"
        "from shufflesim.protocols.bounds import catalogue\n"
        "for k, eps0, n, delta in ((3, 1.0, 268270, 1e-12), (10, 1.0, 268270, 1e-12),\n"
        "                          (3, 1.0, 30000, 1e-6), (3, 8.0, 10000, 1e-12),\n"
        "                          (2, 4.0, 373, 1e-6), (3, 1.0, 100, 1e-6),\n"
        "                          (2, 0.1, 71969, 1e-8), (50, 8.0, 720, 1e-12)):\n"
        "    r = make_randomizer('krr', epsilon0=eps0, domain_size=k)\n"
        "    catalogue.evaluate('optimal-blanket', r, n, delta)\n",
        "< 0.05 s per call (eight of the worst k-RR points of bench_optimal_sweep.py at "
        "fbce347: 0.27-4.9 s each there)"),
    "optimal-blanket-two-level": (
        "from shufflesim.simulator.execution import blas\n"
        "blas.default_for_commands()\n"           # one BLAS thread, as commands run
        "from shufflesim.protocols.randomizers import make_randomizer\n"
        "from shufflesim.protocols.bounds import catalogue\n"
        "for name, d, eps0, n in (('oue', 4, 4.0, 100), ('rappor', 16, 4.0, 100),\n"
        "                         ('hr', 16, 1.0, 100), ('subset', 6, 1.0, 100),\n"
        "                         ('olh', 4, 4.0, 1000), ('blh', 4, 4.0, 1000),\n"
        "                         ('oue', 4, 1.0, 193), ('rappor', 16, 1.0, 373)):\n"
        "    r = make_randomizer(name, epsilon0=eps0, domain_size=d)\n"
        "    catalogue.evaluate('optimal-blanket', r, n, 1e-6)\n",
        "< 0.05 s per call (eight two-level randomizers at small n, engine/zero_mixture.py; "
        "0.7-11 s each at 5c0220a)"),
    "optimal-blanket-two-level-large": (
        "from shufflesim.simulator.execution import blas\n"
        "blas.default_for_commands()\n"           # one BLAS thread, as commands run
        "from shufflesim.protocols.randomizers import make_randomizer\n"
        "from shufflesim.protocols.bounds import catalogue\n"
        "for name, d, eps0, n in (('hr', 16, 1.0, 10000), ('rappor', 16, 4.0, 100000),\n"
        "                         ('oue', 4, 1.0, 5179), ('subset', 6, 1.0, 5179),\n"
        "                         ('olh', 4, 4.0, 138950), ('hr', 16, 4.0, 268270),\n"
        "                         ('blh', 4, 4.0, 268270), ('oue', 4, 0.5, 2683)):\n"
        "    r = make_randomizer(name, epsilon0=eps0, domain_size=d)\n"
        "    catalogue.evaluate('optimal-blanket', r, n, 1e-6)\n",
        "< 0.05 s per call (eight two-level points at n >= 2683 whose polish ran blocks and the "
        "FFT at 3413ab2: 0.9-5.2 s each there)"),
    "blanket-hoeffding-cold": (
        "from shufflesim.protocols.randomizers import make_randomizer\n"
        "from shufflesim.protocols.bounds import catalogue\n"
        "for k in range(200):\n"
        "    r = make_randomizer('krr', epsilon0=0.3 + 1e-4 * k, domain_size=10)\n"
        "    catalogue.evaluate('blanket_hoeffding', r, 100000, 1e-6)\n",
        "<= Balle's closed form per call (200 uncached calls here)"),
}


def _run(argv: list[str], pythonpath: str | None, timeout: float) -> tuple[float, float, float,
                                                                           float, int]:
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    load = os.getloadavg()[0]
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, *argv], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = start + timeout
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.perf_counter() > deadline:
            proc.kill()
            pid, status, usage = os.wait4(proc.pid, 0)
            break
        time.sleep(0.02)
    proc.returncode = os.waitstatus_to_exitcode(status)   # reaped here, not by Popen
    wall = time.perf_counter() - start
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024.0, load, \
        proc.returncode


def _selected(names):
    chosen = os.environ.get("BENCH_ROWS")
    return [n for n in names if not chosen or n in chosen.split(",")]


#: Rows also run with a warm bytecode cache (what an installed package has; this machine sets
#: PYTHONDONTWRITEBYTECODE=1, so the plain rows compile every project module they import).
CACHED_ROWS = ("bound-1e5-T100",)


@pytest.mark.benchmark
def test_issue_32_rows(tmp_path):
    before = os.environ.get("BENCH_BEFORE")
    timeout = float(os.environ.get("BENCH_TIMEOUT", "900"))
    jobs = [(n, ["-c", CLI, *ROWS[n][0]], ROWS[n][1]) for n in _selected(ROWS)]
    jobs += [(n, ["-c", SNIPPETS[n][0]], SNIPPETS[n][1]) for n in _selected(SNIPPETS)]
    jobs += [(f"{n}, bytecode cache", ["-c", CLI, *ROWS[n][0]], ROWS[n][1])
             for n in _selected(CACHED_ROWS)]
    print("\nrow | tree | wall s | CPU s | peak RSS MB | load | exit | target")
    for name, argv, target in jobs:
        trees = ([("before", before)] if before else []) + [("after", None)]
        for label, path in trees:
            with (_bytecode_cache(tmp_path / label) if name.endswith("bytecode cache")
                  else contextlib.nullcontext()):
                if name.endswith("bytecode cache"):
                    _run(argv, path, timeout)   # fills the cache
                wall, cpu, rss, load, status = _run(argv, path, timeout)
            print(f"{name} | {label} | {wall:.2f} | {cpu:.2f} | {rss:.0f} | {load:.1f} | "
                  f"{status} | {target}", flush=True)


# --- start-up: what a command imports, and what that costs (issue 32, lane t32i) -----------

#: Prints, at exit, the modules a command (argv after the code) ended with, one JSON list.
_DUMP = ("import atexit, json, sys; "
         "atexit.register(lambda: print(json.dumps(list(sys.modules)), file=sys.__stderr__)); "
         "from shufflesim.simulator.cli import entry; sys.argv[0] = 'shufflesim'; entry()")
#: Imports the modules of a JSON list (argv[1]) in their order: a command's imports alone, as
#: the console script makes them (with the garbage collector paused, protocols/import_gc.py,
#: where the tree has it).
_IMPORT = ("import importlib, json, sys\n"
           "load = importlib.import_module\n"
           "try:\n"
           "    from shufflesim.protocols import import_gc\n"
           "    import_gc.for_commands()\n"
           "    load = import_gc.import_module\n"
           "except ImportError: pass\n"
           "for m in json.load(open(sys.argv[1])):\n"
           "    if m not in sys.modules and m != '__main__':\n"
           "        try: load(m)\n"
           "        except Exception: pass\n")

#: name -> argv of the command whose imports are measured
STARTUP = {
    "bound-1e5-T100": ROWS["bound-1e5-T100"][0],
    "calibrate-rounds": ROWS["calibrate-rounds"][0],
    "bound-1e5-eps4 (one round)": ROWS["optimal-blanket-1e5-eps4"][0],
    "cheu-exact-lower-d16": ROWS["cheu-exact-lower-d16"][0],
    "audit k-RR d=2, n=20, 2000 trials": ["audit", "--randomizer", "krr", "--domain-size", "2",
                                          "--epsilon0", "2", "--n", "20", "--delta", "1e-3",
                                          "--trials", "2000", "--no-verdicts", "-q"],
}
#: The quickstart scenario, and a copy with a misspelt key (refused with exit code 2).
QUICKSTART = os.path.join(os.path.dirname(__file__), "..", "..", "scenarios", "quickstart.toml")


def _modules_of(argv: list[str], pythonpath: str | None, path) -> int:
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    done = subprocess.run([sys.executable, "-c", _DUMP, *argv], env=env, capture_output=True,
                          text=True, timeout=900)
    path.write_text(done.stderr.strip().splitlines()[-1])
    return len(json.loads(path.read_text()))


@pytest.mark.benchmark
def test_issue_32_startup_rows(tmp_path):
    """The CPU of a command's imports alone: a fresh process importing exactly the modules the
    command ended with (listed by a first run), as this machine runs Python
    (PYTHONDONTWRITEBYTECODE=1: every project module compiled in every process) and with a
    warm bytecode cache (what an installed package has); and whole commands that are
    start-up only (``--help``, ``import shufflesim.simulator.cli``, ``list`` from its
    snapshot, loading quickstart.toml, ``run`` of a scenario refused with exit code 2, and
    ``run`` of quickstart at 2 repetitions: mostly start-up)."""
    before = os.environ.get("BENCH_BEFORE")
    trees = ([("before", before)] if before else []) + [("after", None)]
    cache = tmp_path / "pycache"
    print("\nrow | tree | modules | import CPU s (no bytecode cache) | import CPU s (bytecode "
          "cache) | load")
    for name, argv in STARTUP.items():
        for label, path in trees:
            listed = tmp_path / f"{label}-{len(name)}.json"
            count = _modules_of(argv, path, listed)
            plain = _run(["-c", _IMPORT, str(listed)], path, 300)
            with _bytecode_cache(cache):
                _run(["-c", _IMPORT, str(listed)], path, 300)  # fills the cache
                cached = _run(["-c", _IMPORT, str(listed)], path, 300)
            print(f"imports of {name} | {label} | {count} | {plain[1]:.2f} | {cached[1]:.2f} | "
                  f"{plain[3]:.1f}", flush=True)
    print("\nrow | tree | wall s | CPU s | peak RSS MB | load | exit")
    bad, short = tmp_path / "bad.toml", tmp_path / "short.toml"
    with open(QUICKSTART) as file:
        text = file.read()
    bad.write_text(text.replace("exponent = 0.7", "exponnent = 0.7"))
    short.write_text(text.replace("repetitions = 200", "repetitions = 2"))
    load = ("import sys; from shufflesim.simulator.scenario.loader import load_scenario; "
            "load_scenario(sys.argv[1])")
    whole = {"--help": ["-c", CLI, "--help"],
             "import shufflesim.simulator.cli": ["-c", "import shufflesim.simulator.cli"],
             "list": ["-c", CLI, "list"],
             "load quickstart.toml": ["-c", load, QUICKSTART],
             "run, refused scenario, 1 worker": ["-c", CLI, "run", str(bad), "--out",
                                                 str(tmp_path / "out"), "--workers", "1"],
             "run, refused scenario, 2 workers": ["-c", CLI, "run", str(bad), "--out",
                                                  str(tmp_path / "out"), "--workers", "2"],
             "run quickstart at 2 repetitions, 1 worker": ["-c", CLI, "run", str(short),
                                                           "--out", str(tmp_path / "out"),
                                                           "--workers", "1", "-q"]}
    for name, argv in whole.items():
        for label, path in trees:
            wall, cpu, rss, load, status = _run(argv, path, 300)
            print(f"{name} | {label} | {wall:.2f} | {cpu:.2f} | {rss:.0f} | {load:.1f} | "
                  f"{status}", flush=True)


#: The steps of the row "bound-1e5-T100", each a fresh process adding to the one before
#: (imports with the collector paused and one BLAS thread, as commands import): where its CPU
#: goes (issue 32).
_ONE_THREAD = ("import os, gc\n"
               "for v in ('OPENBLAS_NUM_THREADS', 'OMP_NUM_THREADS', 'MKL_NUM_THREADS'):\n"
               "    os.environ.setdefault(v, '1')\n"
               "gc.disable()\n")
_BUDGET_STEPS = (
    ("python -c pass (interpreter, site)", "pass", False),
    ("+ numpy", _ONE_THREAD + "import numpy", False),
    ("+ scipy.special", _ONE_THREAD + "import numpy, scipy.special", False),
    ("+ click", _ONE_THREAD + "import numpy, scipy.special, click", False),
    ("+ the row's own modules, compiled", _ONE_THREAD + "import numpy, scipy.special, click\n"
     + _IMPORT, False),
    ("+ the row's own modules, bytecode cache", _ONE_THREAD + "import numpy, scipy.special, "
     "click\n" + _IMPORT, True),
    ("whole command, compiled", None, False),
    ("whole command, bytecode cache", None, True),
)


@pytest.mark.benchmark
def test_bound_row_budget(tmp_path):
    """Where the CPU of ``bound`` k-RR n = 1e5 over 100 rounds goes: median CPU seconds of each
    step of :data:`_BUDGET_STEPS` over BENCH_ROUNDS (default 7) alternating rounds; the
    difference between two steps is what the step adds (compute, printing and exit: the whole
    command minus its imports)."""
    rounds = int(os.environ.get("BENCH_ROUNDS", "7"))
    listed = tmp_path / "modules.json"
    _modules_of(ROWS["bound-1e5-T100"][0], None, listed)
    cache = tmp_path / "pycache"
    argvs = [["-c", code, str(listed)] if code else ["-c", CLI, *ROWS["bound-1e5-T100"][0]]
             for _, code, _ in _BUDGET_STEPS]
    with _bytecode_cache(cache):                       # fills the cache
        for (_, _, cached), argv in zip(_BUDGET_STEPS, argvs, strict=True):
            if cached:
                _run(argv, None, 300)
    cpu = {name: [] for name, _, _ in _BUDGET_STEPS}
    loads = []
    for _ in range(rounds):
        for (name, _, cached), argv in zip(_BUDGET_STEPS, argvs, strict=True):
            with (_bytecode_cache(cache) if cached else contextlib.nullcontext()):
                _, seconds, _, load, status = _run(argv, None, 300)
            assert status == 0, name
            cpu[name].append(seconds)
            loads.append(load)
    print(f"\nbound-1e5-T100 budget, {rounds} rounds, load {min(loads):.1f}-{max(loads):.1f}")
    print("step | CPU s median | min")
    for name, values in cpu.items():
        print(f"{name} | {statistics.median(values):.3f} | {min(values):.3f}")


@contextlib.contextmanager
def _bytecode_cache(folder):
    """Within: the processes this one starts write and read bytecode under ``folder`` (the
    environment's PYTHONDONTWRITEBYTECODE lifted)."""
    saved = {key: os.environ.get(key) for key in ("PYTHONDONTWRITEBYTECODE",
                                                  "PYTHONPYCACHEPREFIX")}
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = str(folder)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
