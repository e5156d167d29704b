"""Benchmark: the single-round ``optimal-blanket`` bound (000 Thm 13 + Alg. 7) over a sweep of
randomizers, eps0, delta and n, against issue 32's target "< 0.05 s at every n <= 1e6".

Run with:  python -m pytest tests/benchmarks/bench_optimal_sweep.py -m benchmark -s
or as a script (no pytest), writing one JSON line per point:
    python tests/benchmarks/bench_optimal_sweep.py [--out FILE] [--only krr3,hr16]
        [--eps0 0.5,1] [--delta 1e-6] [--n 2e4,3e4] [--repeat 1]

Each point is measured in this process with every cache of ``shufflesim.protocols`` cleared
first (lru caches, the engine's table caches, the band sharing's seen parameters, row memos),
so it is the cost of a first call at that (randomizer, n, delta) in a warm process ("fresh
cache"); the registry and the modules are already imported. It prints CPU seconds (user + sys
of the process, every thread: exact_band builds tables on a helper thread) and wall seconds
per point, the value and its stated error, the engine's delta(eps) evaluations (``evals``, a
figure the machine's load does not move; engine.core.delta_of_epsilon calls), then the worst
points by CPU and how many are over the target. With ``--repeat R`` the CPU figure is the
median of R cold calls.

Grid (issue 32 item 4, the randomizers people use): k-RR k = 2, 3, 10, 50, 1000; brr; oue and
rappor d = 4, 16; hr d = 16; subset d = 6; olh, blh d = 4 (the tightness grid's sizes);
eps0 in {0.1, 0.5, 1, 2, 4, 8}; delta in {1e-4, 1e-6, 1e-8, 1e-12}; n on a log grid of 15
values from 1e2 to 1e6. The machine is shared: compare CPU, not wall, and state the load.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import time

if __name__ == "__main__":     # one BLAS thread, as every command (before numpy loads)
    for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_name, "1")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

TARGET_CPU = 0.05

#: name -> (registry name, keyword arguments)
RANDOMIZERS = {
    "krr2": ("krr", {"domain_size": 2}),
    "krr3": ("krr", {"domain_size": 3}),
    "krr10": ("krr", {"domain_size": 10}),
    "krr50": ("krr", {"domain_size": 50}),
    "krr1000": ("krr", {"domain_size": 1000}),
    "brr": ("brr", {}),
    "oue4": ("oue", {"domain_size": 4}),
    "oue16": ("oue", {"domain_size": 16}),
    "rappor4": ("rappor", {"domain_size": 4}),
    "rappor16": ("rappor", {"domain_size": 16}),
    "hr16": ("hr", {"domain_size": 16}),
    "subset6": ("subset", {"domain_size": 6}),
    "olh4": ("olh", {"domain_size": 4}),
    "blh4": ("blh", {"domain_size": 4}),
}
EPS0 = (0.1, 0.5, 1.0, 2.0, 4.0, 8.0)
DELTAS = (1e-4, 1e-6, 1e-8, 1e-12)
NS = tuple(int(round(float(x))) for x in np.logspace(2, 6, 15))


def clear_caches() -> None:
    """Clear every cache a previous bound left in the loaded ``shufflesim.protocols`` modules:
    functions with ``cache_clear`` (lru_cache, engine.table_cache), objects with ``clear`` that
    are row memos, and exact_band's sharing records."""
    from shufflesim.protocols.bounds.engine import band_sharing, exact_band
    from shufflesim.protocols.bounds.engine.binomial_memo import RowMemo
    for name, module in list(sys.modules.items()):
        if not name.startswith("shufflesim.protocols") or module is None:
            continue
        for obj in list(vars(module).values()):
            clear = getattr(obj, "cache_clear", None)
            if callable(clear) and not isinstance(obj, type):
                clear()
            elif isinstance(obj, RowMemo):
                obj.clear()
    band_sharing._seen_parameters.clear()
    exact_band._built.clear()


def _cpu() -> float:
    return time.process_time()        # user + sys of every thread of this process


@contextlib.contextmanager
def counted_evaluations():
    """A list that collects one entry per engine.core.delta_of_epsilon call meanwhile."""
    from shufflesim.protocols.bounds.engine import core
    calls, real = [], core.delta_of_epsilon

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    core.delta_of_epsilon = counting
    try:
        yield calls
    finally:
        core.delta_of_epsilon = real


def measure(label: str, eps0: float, n: int, delta: float, repeat: int = 1) -> dict:
    """One point: the median CPU (and wall) of ``repeat`` cold optimal-blanket evaluations."""
    from shufflesim.protocols.bounds import catalogue
    from shufflesim.protocols.randomizers import make_randomizer
    name, kwargs = RANDOMIZERS[label]
    cpus, walls, ev = [], [], None
    for _ in range(repeat):
        randomizer = make_randomizer(name, epsilon0=eps0, **kwargs)
        clear_caches()
        with counted_evaluations() as calls:
            c0, w0 = _cpu(), time.perf_counter()
            ev = catalogue.evaluate("optimal-blanket", randomizer, n, delta)
            cpus.append(_cpu() - c0)
            walls.append(time.perf_counter() - w0)
    row = {"r": label, "eps0": eps0, "n": n, "delta": delta,
           "cpu": statistics.median(cpus), "wall": statistics.median(walls),
           "evals": len(calls)}
    if ev.result is None:
        row["error"] = ev.error
    else:
        row["value"] = float(ev.result.epsilon)
        row["err"] = float(ev.result.epsilon_error)
    return row


def sweep(labels, eps0s, deltas, ns, repeat=1, out=None):
    """Every point of the product, printed as it comes (and appended to ``out`` as JSON), with
    one BLAS thread (simulator/execution/blas.py; two threads made 2-RR at n = 193 take 0.1-0.2 s
    instead of 0.02 s on this loaded machine)."""
    from shufflesim.simulator.execution import blas
    with blas.one_blas_thread() if blas.available() else contextlib.nullcontext():
        return _sweep(labels, eps0s, deltas, ns, repeat, out)


def _sweep(labels, eps0s, deltas, ns, repeat, out):
    from shufflesim.protocols.bounds import catalogue
    from shufflesim.protocols.randomizers import make_randomizer
    # imports and first-use set-up, outside every point: the k-RR path, and the two-level
    # path with the FFT (engine.fft, zero_mixture, pool_law, scipy.fft: about 0.1 s that the
    # first point needing them paid, e.g. blh d = 4, eps0 = 8, n = 268270, delta = 1e-12)
    catalogue.evaluate("optimal-blanket", make_randomizer("krr", epsilon0=1.0, domain_size=3),
                       50, 1e-6)
    catalogue.evaluate("optimal-blanket", make_randomizer("rappor", epsilon0=1.0, domain_size=4),
                       2683, 1e-6)
    rows = []
    sink = open(out, "a") if out else None
    try:
        for label in labels:
            for eps0 in eps0s:
                for delta in deltas:
                    for n in ns:
                        row = measure(label, eps0, n, delta, repeat)
                        rows.append(row)
                        flag = " OVER" if row["cpu"] >= TARGET_CPU else ""
                        print(f"{label:8s} eps0={eps0:<4g} delta={delta:<6g} n={n:<8d} "
                              f"cpu {row['cpu']:.4f} wall {row['wall']:.4f} "
                              f"evals {row['evals']:<3d} "
                              f"{row.get('value', row.get('error'))}{flag}", flush=True)
                        if sink:
                            sink.write(json.dumps(row) + "\n")
                            sink.flush()
    finally:
        if sink:
            sink.close()
    return rows


def report(rows, worst: int = 25) -> None:
    over = [r for r in rows if r["cpu"] >= TARGET_CPU]
    total = sum(r["cpu"] for r in rows)
    print(f"\n{len(rows)} points, CPU {total:.2f} s in all, {len(over)} at or over "
          f"{TARGET_CPU} s, {sum(r['evals'] for r in rows)} engine evaluations, load average "
          f"{os.getloadavg()[0]:.2f}")
    for r in sorted(rows, key=lambda r: -r["cpu"])[:worst]:
        print(f"  {r['r']:8s} eps0={r['eps0']:<4g} delta={r['delta']:<6g} n={r['n']:<8d} "
              f"cpu {r['cpu']:.4f} wall {r['wall']:.4f}")


def _floats(text):
    return tuple(float(x) for x in text.split(","))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out")
    parser.add_argument("--only", help="comma-separated labels of RANDOMIZERS")
    parser.add_argument("--eps0")
    parser.add_argument("--delta")
    parser.add_argument("--n")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--worst", type=int, default=25)
    args = parser.parse_args(argv)
    labels = args.only.split(",") if args.only else list(RANDOMIZERS)
    for label in labels:
        if label not in RANDOMIZERS:
            print(f"error: --only: unknown label {label!r}", file=sys.stderr)
            return 2
    rows = sweep(labels, _floats(args.eps0) if args.eps0 else EPS0,
                 _floats(args.delta) if args.delta else DELTAS,
                 tuple(int(x) for x in _floats(args.n)) if args.n else NS,
                 args.repeat, args.out)
    report(rows, args.worst)
    return 0


@pytest.mark.benchmark
def test_optimal_blanket_sweep():
    """The whole grid (about 5000 points; several CPU minutes): prints the worst points."""
    rows = sweep(list(RANDOMIZERS), EPS0, DELTAS, NS)
    report(rows)
    assert all("value" in r or "error" in r for r in rows)


if __name__ == "__main__":
    sys.exit(main())
