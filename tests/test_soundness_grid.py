"""Soundness grid over every registered bound.

Over a grid of randomizers x domain size x eps0 x n x delta:

* every upper bound whose result is ``proven`` is >= every proven lower bound (the exact lower
  bound of 000 Thm 14 and 001 Thm 5.1) -- both on the conservative side of their own numerical
  error, so a failure is a real inconsistency;
* every upper bound is non-increasing in n and non-decreasing in eps0 (up to the larger point's
  own epsilon_error);
* upper bounds with another status (approximate, relies-on-stronger-clone-reduction) that fall
  below a proven lower bound are *collected*, not asserted, and written to a CSV file: its path is
  $SHUFFLESIM_SOUNDNESS_CSV or a file in pytest's tmp directory, printed (run with -s to see it).

Regime errors (a bound outside its validity regime) are skipped. The full grid (>= 1000 points)
is ``slow`` (set $SHUFFLESIM_SOUNDNESS_WORKERS to spread it over processes, and
$SHUFFLESIM_SOUNDNESS_N, e.g. "100,1000" or n off the grid such as "19307",
$SHUFFLESIM_SOUNDNESS_RANDOMIZERS, e.g. "krr,brr", and/or
$SHUFFLESIM_SOUNDNESS_CONFIGS, e.g. "rappor(domain_size=16);laplace()", for a partial run); the
default run uses a small subset. docs/soundness.md
records the latest full run and docs/soundness_grid.csv its collected rows.
"""

from __future__ import annotations

import csv
import itertools
import os
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from shufflesim.protocols.bounds import catalogue as cat
from shufflesim.protocols.bounds.result import BoundKind, BoundResult, BoundStatus
from shufflesim.protocols.randomizers import make_randomizer

#: (registry name, parameters) of the randomizers on the full grid.
FULL_DISCRETE = [
    ("krr", dict(domain_size=2)), ("krr", dict(domain_size=3)), ("krr", dict(domain_size=5)),
    ("krr", dict(domain_size=10)), ("krr", dict(domain_size=50)), ("brr", {}),
    ("rappor", dict(domain_size=4)), ("rappor", dict(domain_size=16)),
    ("oue", dict(domain_size=4)), ("oue", dict(domain_size=16)),
    ("subset", dict(domain_size=6, subset_size=2)), ("blh", dict(domain_size=8)),
    ("olh", dict(domain_size=8, hash_range=3)), ("hr", dict(domain_size=7)),
    ("duchi", {}), ("summation", dict(precision=4)),
]
#: Continuous outputs: the optimal and exact bounds discretize the Laplace ratio and take
#: minutes per point at n >= 10^5, so these stop at n = 10^4.
FULL_CONTINUOUS = [("laplace_binary", {}), ("laplace", {}), ("piecewise", {})]
FULL_EPSILON0 = (0.1, 0.5, 1.0, 2.0, 4.0, 8.0)
FULL_N = (100, 1000, 10**4, 10**5, 10**6)
FULL_N_CONTINUOUS = (100, 1000, 10**4)
FULL_DELTA = (1e-4, 1e-8)

SMALL_RANDOMIZERS = [("krr", dict(domain_size=3)), ("brr", {})]
SMALL_EPSILON0 = (0.5, 4.0)
SMALL_N = (40, 100)
SMALL_DELTA = (1e-6,)


@dataclass(frozen=True)
class Point:
    randomizer: str
    params: tuple
    epsilon0: float
    n: int
    delta: float

    def configuration(self) -> str:
        params = ",".join(f"{k}={v}" for k, v in self.params)
        return f"{self.randomizer}({params})"

    def label(self) -> str:
        return f"{self.configuration()} eps0={self.epsilon0} n={self.n} delta={self.delta}"


def grid(randomizers, epsilons, ns, deltas) -> list[Point]:
    return [Point(name, tuple(sorted(params.items())), e, n, d)
            for (name, params), e, n, d in itertools.product(randomizers, epsilons, ns, deltas)]


@dataclass(frozen=True)
class Entry:
    """One computed bound at one point (picklable, for worker processes)."""

    name: str
    kind: BoundKind
    status_label: str
    result: BoundResult


def evaluate_point(point: Point, names: list[str] | None = None) -> list[Entry]:
    randomizer = make_randomizer(point.randomizer, epsilon0=point.epsilon0, **dict(point.params))
    chosen = names
    if names is not None:
        chosen = [name for name in names if cat.get_bound(name).applies_to(randomizer)]
    return [Entry(e.spec.name, e.spec.kind, e.status_label, e.result)
            for e in cat.evaluate_many(randomizer, point.n, point.delta, chosen) if e.ok]


def evaluate_grid(points: list[Point], names: list[str] | None = None, workers: int = 1,
                  progress: bool = False) -> dict[Point, list[Entry]]:
    """All bounds at all points; ``workers`` > 1 spreads the points over processes;
    ``progress`` prints one line per point (seen with pytest -s)."""
    out: dict[Point, list[Entry]] = {}
    started = time.perf_counter()

    def done(point: Point, entries: list[Entry]) -> None:
        out[point] = entries
        if progress:
            print(f"[{len(out)}/{len(points)} {time.perf_counter() - started:.0f}s] "
                  f"{point.label()}: {len(entries)} bounds", flush=True)

    if workers <= 1:
        for point in points:
            done(point, evaluate_point(point, names))
        return out
    with ProcessPoolExecutor(max_workers=workers) as pool:
        for point, entries in zip(points, pool.map(evaluate_point, points,
                                                   [names] * len(points)), strict=True):
            done(point, entries)
    return out


def check(results: dict[Point, list], csv_path: Path) -> tuple[list[str], list[dict]]:
    """Returns (failures, collected rows). Failures: a proven upper bound below a proven lower
    bound, or a non-monotone upper bound."""
    failures: list[str] = []
    collected: list[dict] = []
    for point, evaluations in results.items():
        lowers = [e.result for e in evaluations
                  if e.kind is BoundKind.LOWER and e.result.status is BoundStatus.PROVEN]
        if not lowers:
            continue
        best = max(lowers, key=lambda r: r.epsilon)
        for e in evaluations:
            r = e.result
            if e.kind is not BoundKind.UPPER or r.epsilon >= best.epsilon:
                continue
            if r.status is BoundStatus.PROVEN:
                failures.append(f"{point.label()}: proven {r.method} = {r.epsilon:.6g} < "
                                f"{best.method} = {best.epsilon:.6g}")
            else:
                collected.append({
                    "randomizer": point.randomizer, "params": dict(point.params),
                    "epsilon0": point.epsilon0, "n": point.n, "delta": point.delta,
                    "method": r.method, "status": e.status_label, "epsilon": r.epsilon,
                    "epsilon_error": r.epsilon_error, "lower_method": best.method,
                    "lower_epsilon": best.epsilon,
                    "relative_gap": (best.epsilon - r.epsilon) / best.epsilon,
                })
    failures += _monotonicity(results)
    with csv_path.open("w", newline="") as handle:
        fields = ["randomizer", "params", "epsilon0", "n", "delta", "method", "status",
                  "epsilon", "epsilon_error", "lower_method", "lower_epsilon", "relative_gap"]
        writer = csv.DictWriter(handle, fieldnames=fields)
        writer.writeheader()
        writer.writerows(collected)
    return failures, collected


def _monotonicity(results: dict[Point, list]) -> list[str]:
    """Upper bounds: non-increasing in n (fixed randomizer, eps0, delta), non-decreasing in eps0
    (fixed randomizer, n, delta); the larger value may exceed the smaller one by its own
    epsilon_error (both are upper ends of their brackets)."""
    table = {}
    for point, evaluations in results.items():
        for e in evaluations:
            if e.kind is BoundKind.UPPER:
                table[(point, e.name)] = e.result
    failures = []
    for (point, method), result in table.items():
        for (other, other_method), other_result in table.items():
            if other_method != method or (other.randomizer, other.params, other.delta) != (
                    point.randomizer, point.params, point.delta):
                continue
            more_users = other.epsilon0 == point.epsilon0 and other.n > point.n
            larger_eps0 = other.n == point.n and other.epsilon0 > point.epsilon0
            slack = 1e-9 * point.epsilon0
            if more_users and other_result.epsilon > result.epsilon + other_result.epsilon_error \
                    + slack:
                failures.append(f"{method} increases with n: {point.label()} -> n={other.n}: "
                                f"{result.epsilon:.6g} -> {other_result.epsilon:.6g}")
            if larger_eps0 and result.epsilon > other_result.epsilon + result.epsilon_error \
                    + slack:
                failures.append(f"{method} decreases with eps0: {point.label()} -> "
                                f"eps0={other.epsilon0}: {result.epsilon:.6g} -> "
                                f"{other_result.epsilon:.6g}")
    return failures


def _csv_path(tmp_path: Path, name: str) -> Path:
    configured = os.environ.get("SHUFFLESIM_SOUNDNESS_CSV")
    return Path(configured) if configured else tmp_path / name


def _run(points, tmp_path, name, workers=1, progress=False):
    results = evaluate_grid(points, workers=workers, progress=progress)
    path = _csv_path(tmp_path, name)
    failures, collected = check(results, path)
    computed = sum(len(v) for v in results.values())
    print(f"\nsoundness grid: {len(points)} points, {computed} bound values, "
          f"{len(collected)} non-proven upper bounds below a proven lower bound -> {path}")
    return failures, collected, results


def test_soundness_small_grid(tmp_path):
    points = grid(SMALL_RANDOMIZERS, SMALL_EPSILON0, SMALL_N, SMALL_DELTA)
    failures, collected, results = _run(points, tmp_path, "soundness_small.csv")
    assert not failures, "\n".join(failures)
    # every point has the exact lower bound and at least one proven upper bound
    for point, evaluations in results.items():
        names = {e.name for e in evaluations}
        assert "exact-lower" in names, point.label()
        assert any(e.result.status is BoundStatus.PROVEN and e.kind is BoundKind.UPPER
                   for e in evaluations), point.label()


def test_check_flags_violations(tmp_path):
    """Negative control: a fabricated proven upper bound below the lower bound, and a
    non-monotone one, are reported; a non-proven one is collected in the CSV."""
    from dataclasses import replace

    points = grid([("krr", dict(domain_size=4))], (1.0, 2.0), (50,), (1e-6,))
    results = evaluate_grid(points, ["optimal-blanket", "variation-ratio", "exact-lower"])
    second = points[1]  # eps0 = 2.0
    upper = next(e for e in results[second] if e.name == "optimal-blanket")
    tiny = replace(upper, result=replace(upper.result, epsilon=1e-6))
    stronger = next(e for e in results[second] if e.name == "variation-ratio")
    results[second] = [*results[second], tiny,
                       replace(stronger, result=replace(stronger.result, epsilon=1e-6))]
    failures, collected = check(results, tmp_path / "control.csv")
    assert any("proven optimal-blanket = 1e-06" in f for f in failures)
    assert any("decreases with eps0" in f and f.startswith("optimal-blanket") for f in failures)
    assert any(row["method"] == "variation-ratio" and row["epsilon"] == 1e-6
               for row in collected)
    assert "variation-ratio" in (tmp_path / "control.csv").read_text()


@pytest.mark.slow
def test_soundness_full_grid(tmp_path):
    # $SHUFFLESIM_SOUNDNESS_N (comma-separated) gives the n of a partial run instead of FULL_N,
    # e.g. "19307,37276" (the continuous outputs keep only those <= 10^4)
    chosen = os.environ.get("SHUFFLESIM_SOUNDNESS_N")
    ns, ns_continuous = FULL_N, FULL_N_CONTINUOUS
    if chosen:
        ns = tuple(int(float(x)) for x in chosen.split(","))
        ns_continuous = tuple(n for n in ns if n <= max(FULL_N_CONTINUOUS))
    points = (grid(FULL_DISCRETE, FULL_EPSILON0, ns, FULL_DELTA)
              + grid(FULL_CONTINUOUS, FULL_EPSILON0, ns_continuous, FULL_DELTA))
    assert chosen or len(points) >= 1000
    names = os.environ.get("SHUFFLESIM_SOUNDNESS_RANDOMIZERS")
    if names:
        points = [p for p in points if p.randomizer in names.split(",")]
    # $SHUFFLESIM_SOUNDNESS_CONFIGS: configurations as labelled, e.g. "rappor(domain_size=16)"
    # (separated by ";")
    configs = os.environ.get("SHUFFLESIM_SOUNDNESS_CONFIGS")
    if configs:
        points = [p for p in points if p.configuration() in configs.split(";")]
    assert points, "the $SHUFFLESIM_SOUNDNESS_* filters select no point of the grid"
    workers = int(os.environ.get("SHUFFLESIM_SOUNDNESS_WORKERS", "1"))
    failures, collected, _ = _run(points, tmp_path, "soundness_full.csv", workers,
                                  progress=True)
    assert not failures, "\n".join(failures[:50])
