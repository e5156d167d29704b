"""engine/t_window: the joint Chernoff bound on the part of E[(S + s)_+] with the pair count T
outside a window holds against exact sums over every (N_a, N_b), and the narrowed window moves
the conditioning method's bracket by less than its own width (issue 32)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from shufflesim.protocols.bounds.engine import common, conditioning, plans, t_window
from shufflesim.protocols.bounds.numerical import decompositions as dec
from shufflesim.protocols.distributions import binom
from shufflesim.protocols.randomizers import make_randomizer


def _exact_outside(c, w, n, t_lo, t_hi, shifts_v, shifts_p):
    """E[(S + s)_+ 1{T < t_lo or T > t_hi}] for three categories (pair 0, 1; pool 2), T = N_0 +
    N_1, by the exact double sum over (N_0, N_1)."""
    total = 0.0
    for t in range(n + 1):
        if t_lo <= t <= t_hi:
            continue
        pt = binom.pmf(t, n, w[0] + w[1])
        a = np.arange(t + 1.0)
        pa = binom.pmf(a, t, w[0] / (w[0] + w[1]))
        s = c[0] * a + c[1] * (t - a) + c[2] * (n - t)
        vals = np.maximum(s[:, None] + shifts_v[None, :], 0.0) @ shifts_p
        total += pt * float(pa @ vals)
    return total


@pytest.mark.parametrize("seed", range(5))
def test_outside_bound_holds_against_exact_sums(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(150, 400))
    w = rng.dirichlet([2.0, 2.0, 3.0])
    c = np.array([rng.uniform(0.5, 2.0), -rng.uniform(0.5, 2.0), rng.uniform(-0.3, 0.1)])
    cat = common.Categories(c, w, n, 0.0)
    shifts_v = rng.uniform(-2, 2, size=3)
    shifts_p = rng.dirichlet([1.0, 1.0, 1.0])
    shifts_err = np.zeros(3)
    mean, sd = n * (w[0] + w[1]), math.sqrt(n * (w[0] + w[1]) * (1 - w[0] - w[1]))
    var = n * cat.variance
    lam = (-n * cat.mean + math.sqrt((n * cat.mean) ** 2 + 4 * var)) / (2 * var)
    ratios = []
    for z in (1.0, 2.0, 3.0):
        lo, hi = math.floor(mean - z * sd), math.ceil(mean + z * sd)
        exact = _exact_outside(c, w, n, lo, hi, shifts_v, shifts_p)
        bound = t_window.outside_bound(cat, (0, 1), lo, hi, shifts_v, shifts_p, shifts_err, lam)
        assert exact <= bound
        ratios.append(exact / bound if bound > 0 else 1.0)
    assert max(ratios) > 0.01               # not vacuous (Chernoff: a constant factor off)


def test_a_bound_for_the_wrong_edges_is_caught():
    """Negative control: the bound computed for a window 2 sd wider on each side (edges off by
    2 sd) falls below the exact outside part of the true window."""
    n = 300
    w = np.array([0.3, 0.3, 0.4])
    c = np.array([1.0, -1.0, -0.05])
    cat = common.Categories(c, w, n, 0.0)
    sv, sp, se = np.zeros(1), np.ones(1), np.zeros(1)
    mean, sd = n * 0.6, math.sqrt(n * 0.6 * 0.4)
    lo, hi = math.floor(mean - 2 * sd), math.ceil(mean + 2 * sd)
    exact = _exact_outside(c, w, n, lo, hi, sv, sp)
    var = n * cat.variance
    lam = (-n * cat.mean + math.sqrt((n * cat.mean) ** 2 + 4 * var)) / (2 * var)
    assert t_window.outside_bound(cat, (0, 1), lo, hi, sv, sp, se, lam) >= exact
    wrong = t_window.outside_bound(cat, (0, 1), lo - 2 * sd, hi + 2 * sd, sv, sp, se, lam)
    assert wrong < exact


def test_narrowed_window_keeps_the_bracket():
    """10-RR (0, 1, 2), n = 1e8: the narrowed window (7 sd of 9.8) changes the conditioning
    bracket by less than 2 % of its width on each side."""
    r = make_randomizer("krr", epsilon0=1.0, domain_size=10)
    n = 10**8
    cat = common.categories(dec.exact_pair_atoms(r, 0, 1, 2), n, 1.2815e-4)
    roles = conditioning.choose_roles(cat)
    tp = plans.t_plan(n, float(cat.w[roles.a] + cat.w[roles.b]))
    args = (cat, np.zeros(1), np.ones(1), np.zeros(1), 0)
    window = conditioning._narrow_window(cat, roles, tp, *args[1:4])
    assert window is not None and window[1] - window[0] < 0.8 * tp.t.size
    lo, hi = conditioning.conditioning_bounds(*args)
    original = conditioning._narrow_window
    try:
        conditioning._narrow_window = lambda *a: None
        lo_full, hi_full = conditioning.conditioning_bounds(*args)
    finally:
        conditioning._narrow_window = original
    width = hi_full - lo_full
    assert lo <= lo_full and hi >= hi_full - 1e-9 * width     # never tighter than the sum
    assert lo_full - lo <= 0.02 * width and hi - hi_full <= 0.02 * width
