"""Issue 32: engine/band_sums.py (the band's part of exact_band.row_bounds, laid out
band-step-major) against the cell-by-cell definition of exact_band's module docstring: the
band's part of f, sum_k P[B = k] G(k), and of its slope, sum_k P[B = k] CX(xv(k)) with xv the
largest x whose value is > -3 ve; including the cells whose next x lies within 4 ve of 0 (the
slope's rare x^ + 1) and the rows whose x* falls below or above X's window."""

from __future__ import annotations

import math

import numpy as np
import pytest

from shufflesim.protocols.bounds.engine import band_sums as bs
from shufflesim.protocols.bounds.engine import common, exact_band
from shufflesim.protocols.bounds.numerical import decompositions as dec
from shufflesim.protocols.randomizers import make_randomizer


def _rows(k, eps0, n, eps):
    """The band's inputs for every row of 3-RR / 10-RR's blanket at n (row_bounds' prelude)."""
    r = make_randomizer("krr", epsilon0=eps0, domain_size=k)
    cat = exact_band.reduced(common.categories(dec.blanket_atoms(r, 0, 1), n, eps))[0]
    sh = exact_band._shape(cat)
    plan = exact_band.band_plan(n, sh.w_pair, sh.rho, sh.q)
    t = plan.t
    m = n - t
    rows = np.arange(t.size)
    return sh, plan, t, m, rows


def _inputs(sh, plan, t, m, rows, alpha):
    d, e = sh.d, sh.e
    b_lo = plan.b_lo[rows]
    b_hi = np.minimum(b_lo + plan.b_w - 1, t)
    x_lo = plan.x_lo[rows]
    x_hi = np.minimum(x_lo + plan.x_w - 1, m)
    k_hi = np.ceil(-(alpha + e * x_hi) / d)
    k_lo = np.floor(-(alpha + e * x_lo) / d)
    kb0, kb1 = np.maximum(k_lo, b_lo), np.minimum(k_hi, b_hi + 1)
    size = abs(sh.cb) * t + abs(sh.base) * m
    ve = 8 * common.U * (size + d * (t + 1) + abs(e) * (m + 1)) * (1 + 1e-6)
    ix_hi = (x_hi - x_lo).astype(np.int64)
    width = int(np.max(kb1 - kb0, initial=0.0))
    return (d, e, alpha, kb0, kb1, b_lo, x_lo, x_hi, ix_hi, rows, plan.x_rows[rows], ve, width)


def _by_cells(plan, d, e, alpha, kb0, kb1, b_lo, x_lo, x_hi, ix_hi, bi, xt, ve, width):
    """The definition, one cell at a time (Python floats)."""
    ae = abs(e)
    df, ds = np.zeros(alpha.size), np.zeros(alpha.size)
    for i in range(alpha.size):
        for k in range(int(kb0[i]), int(kb1[i])):
            a = float(alpha[i]) + d * k
            p = float(plan.pb[bi[i], k - int(b_lo[i])])
            xs = math.floor(a / ae)
            xh = min(max(xs, x_lo[i] - 1), x_hi[i])
            ix = int(xh - x_lo[i] + 1)
            if xs >= x_lo[i]:
                g = max(a + e * xh, 0.0) * plan.cx[xt[i], ix] + ae * plan.ccx[xt[i], ix - 1]
                df[i] += p * g
            iv = min(max(math.floor((a + 4 * ve[i]) / ae) - int(x_lo[i]) + 1, 0), ix_hi[i] + 1)
            ds[i] += p * plan.cx[xt[i], iv]
    return df, ds


@pytest.mark.parametrize("k,eps0,n,eps", [(3, 1.0, 400, 0.2), (10, 0.5, 600, 0.08),
                                          (3, 4.0, 300, 1.5)])
def test_band_sums_match_the_cell_by_cell_definition(k, eps0, n, eps):
    sh, plan, t, m, rows = _rows(k, eps0, n, eps)
    alpha = sh.cb * t + sh.base * m
    args = _inputs(sh, plan, t, m, rows, alpha)
    assert args[-1] >= 2                                  # a band of several k
    df, ds = bs.band_sums(plan, *args)
    ref_df, ref_ds = _by_cells(plan, *args)
    assert np.any(ref_df > 0)
    np.testing.assert_allclose(df, ref_df, rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(ds, ref_ds, rtol=1e-12, atol=1e-300)


def test_the_slope_takes_the_next_x_within_4_ve_of_zero(monkeypatch):
    """Shift each row so that one band cell's next x has the value -2 ve: its CX(x^ + 1) must
    enter the slope (the definition's floor((a + 4 ve) / |e|)), and without that cell's
    look-up (bumps off) the slope falls short of the definition."""
    sh, plan, t, m, rows = _rows(3, 1.0, 400, 0.2)
    alpha = sh.cb * t + sh.base * m
    args = _inputs(sh, plan, t, m, rows, alpha)
    d, e, ve = sh.d, sh.e, args[-2]
    # at B's and X's modes: the cell k with x = the mode of X at the value -2 ve
    k = np.round(t * sh.rho)
    target_x = np.round(m * sh.q)
    alpha2 = -2 * ve - d * k - e * target_x
    args2 = _inputs(sh, plan, t, m, rows, alpha2)
    df, ds = bs.band_sums(plan, *args2)
    ref_df, ref_ds = _by_cells(plan, *args2)
    np.testing.assert_allclose(ds, ref_ds, rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(df, ref_df, rtol=1e-12, atol=1e-300)
    live = np.flatnonzero(ref_ds > 1e-3)
    assert live.size > 5
    # negative control: the same sums without the x^ + 1 look-ups fall short on those rows
    monkeypatch.setattr(bs, "np", _NoBumps(np))
    _, ds_short = bs.band_sums(plan, *args2)
    assert np.all(ds_short[live] < ref_ds[live] * (1 - 1e-6))


class _NoBumps:
    """numpy, except that ``nonzero`` finds no cell (band_sums then skips the x^ + 1
    look-ups): a planted fault for the negative control."""

    def __init__(self, module):
        self._module = module

    def __getattr__(self, name):
        return getattr(self._module, name)

    def nonzero(self, a):
        return tuple(np.zeros(0, dtype=np.intp) for _ in range(np.ndim(a)))


@pytest.mark.parametrize("k,eps0,n,eps", [(1000, 2.0, 100, 0.3293), (1000, 1.0, 193, 0.05999),
                                          (3, 8.0, 37276, 7.9413)])
def test_the_band_from_k_lo_plus_one_keeps_the_bracket(k, eps0, n, eps):
    """exact_band.row_bounds starts the band at k_lo + 1 only where k_lo's values are all
    below -3 ve. Where X's window starts at 0 with most of its mass there (k-RR with many
    categories), the former blanket rule (the slope + CX(x_lo) for the skipped k) widened
    the bracket at delta ~1e-12 from ~1e-8 to ~1e-3 relative (session 16)."""
    r = make_randomizer("krr", epsilon0=eps0, domain_size=k)
    cat = common.categories(dec.blanket_atoms(r, 0, 1), n, eps)
    assert exact_band.applicable(cat)
    lo, hi = exact_band.band_bounds(cat)
    assert 0 < lo <= hi
    assert hi - lo <= 1e-6 * hi
