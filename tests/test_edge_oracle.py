"""Every proven bound against the high-precision oracle (tests/edge_oracle.py) at the edges:
eps0 in {1e-6, 0.01, 8, 12, 16, 20, 30}, n in {2, 3, 5, 10, 20}, delta in {1e-15, 1e-12, 1e-6,
0.3}, k-RR domains up to 2^16 and unary encodings up to d = 1024 (issue 14, "Sound at the
edges").

A proven upper bound eps_U must satisfy D_{e^eps_U}(X0 || X1) <= delta for every neighbouring
pair the oracle evaluates (each pair's divergence is at most the mechanism's); a proven lower
bound eps_L claims that one of its own pairs has D_{e^eps_L} >= delta, so the maximum over the
oracle's pairs (which include the bound's candidates) must reach delta. The oracle's values are
exact to ~1e-55; ``SLACK`` only absorbs that.

The default run checks a small subset; the whole grid is marked slow.
"""

from __future__ import annotations

import itertools
import math
import os

import edge_oracle as eo
import mpmath as mp
import numpy as np
import pytest

from shufflesim.protocols.bounds import catalogue as cat
from shufflesim.protocols.bounds.numerical import clones
from shufflesim.protocols.bounds.result import BoundKind, BoundStatus
from shufflesim.protocols.randomizers import make_randomizer

SLACK = mp.mpf(10) ** -40

EPS0 = (1e-6, 0.01, 8.0, 12.0, 16.0, 20.0, 30.0)
NS = (2, 3, 5, 10, 20)
DELTAS = (1e-15, 1e-12, 1e-6, 0.3)
#: (registry name, domain size or None); unary encodings only up to n = 10 (the oracle's
#: histogram has 8 groups for three distinct inputs: C(n + 7, 7) histograms).
CONFIGS = (("brr", None), ("krr", 3), ("krr", 1024), ("krr", 65536), ("oue", 3),
           ("oue", 1024), ("rappor", 3), ("rappor", 1024))


# -- the oracle itself --------------------------------------------------------------------------
@pytest.mark.parametrize("name,d", [("krr", 3), ("krr", 5), ("brr", None), ("oue", 3),
                                    ("rappor", 4)])
def test_oracle_group_laws_match_the_randomizers(name, d):
    """The oracle's re-derived group laws agree with the randomizers' declared pmf (summed over
    the outputs of each group) at an ordinary eps0."""
    kwargs = {} if d is None else {"domain_size": d}
    r = make_randomizer(name, epsilon0=1.3, **kwargs)
    pmf = np.asarray(r.output_pmf())
    size = pmf.shape[0]
    rows = eo.group_rows(name, 1.3, size, range(min(size, 3)))
    inputs = sorted(rows)
    for x in inputs:
        if name in ("krr", "brr"):
            expected = [pmf[x, v] for v in inputs] + (
                [pmf[x, len(inputs):].sum()] if size > len(inputs) else [])
        else:
            expected = []
            for bits in itertools.product((0, 1), repeat=len(inputs)):
                idx = [y for y in range(pmf.shape[1])
                       if all(((y >> v) & 1) == bit for v, bit in zip(inputs, bits, strict=True))]
                expected.append(pmf[x, idx].sum())
        np.testing.assert_allclose([float(p) for p in rows[x]], expected, rtol=1e-13)


def test_oracle_reproduces_binary_rr_with_one_user():
    """n = 1: the pair is binary RR itself, D = q - e^eps (1 - q) at eps < eps0."""
    truth = eo.pair_truth("brr", 2.0, 2, 0, 1, ())
    q = mp.e ** 2 / (1 + mp.e ** 2)
    assert abs(truth.delta(0.5) - (q - mp.exp(0.5) * (1 - q))) < mp.mpf(10) ** -50


# -- the reported failure ------------------------------------------------------------------------
def test_fmt21_numerical_at_eps0_20_brr_n3_is_sound():
    """Issue 14: fmt21_numerical returned 19.999999964493327 at brr, n = 3, eps0 = 20,
    delta = 1e-12, where the true delta is 3.55e-8. The true delta at the returned eps must be at
    most 1e-12, for every neighbouring pair."""
    res = clones.fmt21_numerical(20.0, 3, 1e-12)
    worst = max(eo.pair_truth("brr", 20.0, 2, *pair).delta(res.epsilon)
                for pair in eo.neighbour_pairs("brr", 2, 3))
    assert worst <= mp.mpf(1e-12) + SLACK, (res.epsilon, worst)
    # its own delta function must not be negative (it was -3.8e-21)
    assert clones.fmt21_numerical_delta(19.999999964493327, 20.0, 3) >= float(worst) * (1 - 1e-9)


# -- the grid ------------------------------------------------------------------------------------
def _randomizer(name, d, eps0):
    kwargs = {} if d is None else {"domain_size": d}
    return make_randomizer(name, epsilon0=eps0, **kwargs)


_TRUTHS: dict = {}


def _truths(name, d, eps0, n):
    """The oracle's pairs for this setting (cached): every configuration of
    :func:`edge_oracle.neighbour_pairs` plus the Thm 14 triples (0, 1, 2), (0, 1, 1), (0, 1, 0)."""
    key = (name, d, eps0, n)
    if key not in _TRUTHS:
        size = 2 if d is None else d
        pairs = {(x0, x1, tuple(o)) for x0, x1, o in eo.neighbour_pairs(name, size, n)}
        for x2 in (0, 1, 2):
            if x2 < size:
                pairs.add((0, 1, (x2,) * (n - 1)))
        _TRUTHS[key] = [eo.pair_truth(name, eps0, size, x0, x1, o) for x0, x1, o in sorted(pairs)]
        if len(_TRUTHS) > 8:
            _TRUTHS.pop(next(iter(_TRUTHS)))
    return _TRUTHS[key]


def _proven_bounds(randomizer):
    return [spec for spec in cat.applicable_bounds(randomizer)
            if spec.status is BoundStatus.PROVEN and spec.scope != "personalized"]


def check_point(name, d, eps0, n, delta) -> dict:
    """Evaluate every proven bound of the catalogue at one point against the oracle; returns
    counts {"upper": checked, "lower": checked, "failures": [...]}."""
    randomizer = _randomizer(name, d, eps0)
    truths = _truths(name, d, eps0, n)
    out = {"upper": 0, "lower": 0, "failures": [], "errors": []}
    for spec in _proven_bounds(randomizer):
        ev = cat.evaluate(spec.name, randomizer, n, delta)
        if not ev.ok:
            out["errors"].append((spec.name, ev.error))
            continue
        res = ev.result
        if res.status is not BoundStatus.PROVEN:
            continue
        eps = float(res.epsilon)
        worst = max(t.delta(eps) for t in truths)
        if spec.kind is BoundKind.UPPER:
            out["upper"] += 1
            if worst > mp.mpf(delta) + SLACK:
                out["failures"].append((spec.name, "upper", eps, float(worst)))
        else:
            out["lower"] += 1
            if eps > 0 and worst < mp.mpf(delta) - SLACK:
                out["failures"].append((spec.name, "lower", eps, float(worst)))
    return out


def grid_points():
    for (name, d), eps0, n, delta in itertools.product(CONFIGS, EPS0, NS, DELTAS):
        if name in ("oue", "rappor") and n > 10:
            continue
        yield name, d, eps0, n, delta


FAST = [
    ("brr", None, 20.0, 3, 1e-12),
    ("brr", None, 30.0, 2, 1e-15),
    ("brr", None, 1e-6, 5, 0.3),
    ("krr", 3, 16.0, 5, 1e-6),
    ("krr", 65536, 20.0, 3, 1e-12),
    ("krr", 1024, 0.01, 10, 1e-15),
    ("oue", 1024, 12.0, 3, 1e-6),
    ("rappor", 1024, 8.0, 2, 1e-12),
]


@pytest.mark.parametrize("name,d,eps0,n,delta", FAST)
def test_proven_bounds_against_the_oracle_fast(name, d, eps0, n, delta):
    out = check_point(name, d, eps0, n, delta)
    assert not out["failures"], out["failures"]
    assert out["upper"] >= 3


@pytest.mark.slow
def test_proven_bounds_against_the_oracle_full_grid():
    """The whole edge grid; counts are printed (run with -s) and, with
    SHUFFLESIM_EDGE_LOG=path, appended to a file point by point.
    SHUFFLESIM_EDGE_RESUME=path1,path2 skips the points already recorded in earlier logs (a
    line is written only once its point is complete), so an interrupted run can be continued;
    the printed totals then cover the new points only."""
    log = os.environ.get("SHUFFLESIM_EDGE_LOG")
    only = os.environ.get("SHUFFLESIM_EDGE_CONFIGS")
    done = set()
    for path in filter(None, os.environ.get("SHUFFLESIM_EDGE_RESUME", "").split(",")):
        with open(path) as fh:
            done |= {line.split(")", 1)[0] + ")" for line in fh if line.startswith("(")}
    totals = {"points": 0, "upper": 0, "lower": 0, "failures": []}
    for point in grid_points():
        if only and f"{point[0]}{point[1] or ''}" not in only.split(","):
            continue
        if repr(point) in done:
            continue
        out = check_point(*point)
        totals["points"] += 1
        totals["upper"] += out["upper"]
        totals["lower"] += out["lower"]
        totals["failures"] += [(point, f) for f in out["failures"]]
        if log:
            with open(log, "a") as fh:
                fh.write(f"{point} upper={out['upper']} lower={out['lower']} "
                         f"failures={out['failures']} errors={out['errors']}\n")
    print(f"edge grid: {totals['points']} points, {totals['upper']} upper-bound and "
          f"{totals['lower']} lower-bound comparisons, {len(totals['failures'])} failures")
    assert not totals["failures"], totals["failures"][:20]
    assert math.isfinite(totals["upper"])
