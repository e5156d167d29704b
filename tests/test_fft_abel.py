"""fft._spread_bounds' lower side (issue 32, session 17): P[|S| < r] is bounded from the
convolution of S' = S + W with a Hoeffding margin of a few sd of W (divided by 1 - p_w, since
Hoeffding holds given the users' values) and Abel radii in quarter steps. Checked against the
enumeration (the truth), against the previous single 12-sd margin (never lower, here higher),
and the cumulative P[|S'| < R] against the one-set weighted sum."""

import math

import numpy as np
import pytest

from shufflesim.protocols.bounds.engine import fft as F
from shufflesim.protocols.bounds.engine.common import Categories
from shufflesim.protocols.bounds.engine.enumerate import enumeration_bounds
from shufflesim.protocols.bounds.engine.fft_gap import _shape

# subset (6, 2), eps0 = 4 (test_fft_finer), and a two-level law with most mass on 0 (hr16-like)
LAWS = {
    "subset": (np.array([-247.096492, -193.498342, -4.52573012, -3.54404576, -0.0649114624,
                         0.916772899, 50.0541043]),
               np.array([0.01060105, 0.00353368, 0.19293263, 0.01060105, 0.57879789,
                         0.19293263, 0.01060105])),
    "two-level": (np.array([-64.07, -34.27, -1.1498, 0.0, 29.78]),
                  np.array([0.0168, 0.0147, 0.0626, 0.8891, 0.0168])),
}


def _grid(cats, length):
    n_users, z, sd, spread = _shape(cats)
    span = 2 * F.K_WINDOW * sd + 4 * spread
    h = span / (length - 1)
    return h, length, sd, 0.5 * (length * h - 2 * spread) / sd


def _cats(name, n):
    c, w = LAWS[name]
    return [Categories(c, w / w.sum(), n, 0.0)]


@pytest.mark.parametrize("name,n,length", [("subset", 20, 4096), ("subset", 60, 4096),
                                            ("two-level", 40, 4096), ("two-level", 200, 4096)])
def test_lower_side_holds_and_is_not_below_the_old_one(monkeypatch, name, n, length):
    cats = _cats(name, n)
    e_lo, e_hi = enumeration_bounds(cats)
    grid = _grid(cats, length)
    lo, hi = F._spread_bounds(cats, *grid)
    assert lo <= e_hi and e_lo <= hi
    monkeypatch.setattr(F, "ABEL_RADII", np.arange(0.0, 13.0))
    monkeypatch.setattr(F, "ABEL_MARGINS", np.array([12.0]))
    old_lo, old_hi = F._spread_bounds(cats, *grid)
    assert old_hi == hi
    assert lo >= old_lo * (1 - 1e-12)
    assert e_lo - lo < 0.85 * (e_lo - old_lo)       # the gap below the truth shrank


def test_cumulative_near_zero_matches_the_weighted_sum():
    cats = _cats("two-level", 200)
    h, length, sd, k_window = _grid(cats, 4096)
    conv = F._convolve(F._spread_laws(cats, h), h, length, sd, k_window)
    reach = np.array([0.0, 0.5 * h, h, 3.3 * h, 40 * h, 400.5 * h])
    got = F._near_zero_upper(conv, reach)
    for r, g in zip(reach, got, strict=True):
        near = F._near_zero(conv, float(r))
        est = float(np.sum(np.exp(np.minimum(conv.log_f(conv.lattice[near] * h), 700.0))
                           * conv.probs[near]))
        _, up = conv.weighted_sum(near, np.ones_like)
        assert g >= est
        assert math.isclose(g, up, rel_tol=1e-9, abs_tol=1e-300)
