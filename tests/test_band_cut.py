"""Issue 32: exact_band's B windows cut below the band (band_levels.band_cut, _b_tables with a
z-level), and ended above it (band_levels.band_top: SB and SSB past the end count the mass
above). The cut leaves out only columns the band sum never reads: the bracket equals the whole
window's within its own width, the left-out mass carries no term, the lower bound on X's window
start that the cut relies on holds, and a cut placed too high (a planted fault) still gives a
bracket that holds the truth (the mass below the cut is bounded, not dropped); likewise an end
placed too low."""

from __future__ import annotations

import numpy as np
import pytest

from shufflesim.protocols.bounds.engine import band_levels, common, exact_band
from shufflesim.protocols.bounds.engine.band_recurrence import CHAIN_ROWS, _x_recurrence
from shufflesim.protocols.bounds.engine.plans import t_plan
from shufflesim.protocols.bounds.numerical import decompositions as dec
from shufflesim.protocols.randomizers import make_randomizer


def _cat(k, eps0, n, eps, exact=False):
    r = make_randomizer("krr", epsilon0=eps0, domain_size=k)
    atoms = dec.exact_pair_atoms(r, 0, 1, 2) if exact else dec.blanket_atoms(r, 0, 1)
    return common.categories(atoms, n, eps)


def _fresh():
    exact_band._b_tables.cache_clear()
    exact_band._x_tables.cache_clear()
    exact_band._cuts.clear()
    exact_band._tops.clear()
    exact_band._built.clear()
    exact_band._seen_parameters.clear()


def _whole_window(monkeypatch, cat):
    _fresh()
    monkeypatch.setattr(exact_band, "band_cut", lambda *a: None)
    monkeypatch.setattr(exact_band, "band_top", lambda *a: None)
    out = exact_band.band_bounds(cat)
    monkeypatch.undo()
    _fresh()
    return out


#: (k, eps0, n, eps) with E[S_+] between 1e-12 and 1e-5, where the cut is 0-5 sd above the mean
CASES = [(10, 1.0, 5000, 0.0625), (3, 0.5, 8000, 0.0312), (3, 4.0, 3000, 1.333),
         (10, 0.1, 20000, 0.00178), (2, 1.0, 4000, 0.0949), (2, 1.0, 4000, 0.1443)]


@pytest.mark.parametrize("k,eps0,n,eps", CASES)
def test_cut_window_gives_the_whole_window_bracket(monkeypatch, k, eps0, n, eps):
    cat = _cat(k, eps0, n, eps)
    ref_lo, ref_hi = _whole_window(monkeypatch, cat)
    lo, hi = exact_band.band_bounds(cat)
    width = max(ref_hi - ref_lo, hi - lo)
    assert abs(lo - ref_lo) <= width and abs(hi - ref_hi) <= width
    assert hi - lo <= 1.01 * (ref_hi - ref_lo) + 1e-12 * hi


def _band_parameters(cat):
    """The band's shape, n and shared (w_pair, rho, q) of a category set, as exact_band
    computes them."""
    red, _, _ = exact_band.reduced(cat)
    sh = exact_band._shape(red)
    n = red.count
    w_pair, rho, q, _ = exact_band._shared_parameters(n, sh.w_pair, sh.rho, sh.q)
    return sh, n, w_pair, rho, q


def test_the_cut_is_used_and_covers_every_row():
    """10-RR, n = 2e4: the window starts far above its Bernstein start (fewer columns), and
    every row's largest value below the cut is below -4 ve (no term from the cut-off mass)."""
    _fresh()
    cat = _cat(10, 1.0, 20_000, 0.02)
    sh, n, w_pair, rho, q = _band_parameters(cat)
    z = exact_band.band_cut(sh, n, w_pair, rho, q)
    assert z is not None and z > 0
    whole = exact_band._b_tables(n, w_pair, rho, None)
    cut = exact_band._b_tables(n, w_pair, rho, z)
    assert cut[1].shape[1] < 0.7 * whole[1].shape[1]
    assert np.all(cut[0] >= whole[0]) and np.any(cut[6] > 0.5)
    plan = exact_band.band_plan(n, w_pair, rho, q, z)
    t = plan.t
    alpha = sh.cb * t + sh.base * (n - t)
    top_below = alpha + sh.d * (plan.b_lo - 1) + sh.e * plan.x_lo
    cut_rows = plan.b_below > 0
    assert cut_rows.sum() > 0.9 * t.size
    assert np.all(top_below[cut_rows] <= -sh.d / 2)


@pytest.mark.parametrize("n,w_pair,q", [(17, 0.89, 0.905), (60, 0.3, 0.4), (3000, 0.05, 0.87),
                                        (37276, 0.1707, 0.8232), (100_000, 0.0314, 0.1299)])
def test_x_window_start_bound_holds(n, w_pair, q):
    """band_cut's lower bound on X's window start: x_lo >= m q - h(m + L) - 2 L."""
    m = n - t_plan(n, w_pair).t
    x_lo = _x_recurrence(m, q)[0]
    floor = m * q - exact_band._half_width(np.sqrt((m + CHAIN_ROWS) * q * (1 - q))) \
        - 2.0 * CHAIN_ROWS
    assert np.all(x_lo >= floor)


def _sound_but_loose_with(monkeypatch, level: str, value: float) -> None:
    """exact_band's window ``level`` (band_cut or band_top) planted at ``value``: the bracket
    still holds the truth (the whole window's bracket) but is over 100 times as wide."""
    cat = _cat(10, 1.0, 5000, 0.0625)
    ref_lo, ref_hi = _whole_window(monkeypatch, cat)
    monkeypatch.setattr(exact_band, level, lambda *a: value)
    lo, hi = exact_band.band_bounds(cat)
    monkeypatch.undo()
    _fresh()
    assert hi >= ref_lo and lo <= ref_hi
    assert hi - lo > 100 * (ref_hi - ref_lo)


def test_a_cut_placed_too_high_is_still_sound(monkeypatch):
    """Negative control: a cut above the band (B's window starts 7 sd above its mean) loses
    the band's mass; the bound on the cut-off mass keeps the upper end above the truth (the
    whole window's lower end), and the bracket is no longer tight."""
    _sound_but_loose_with(monkeypatch, "band_cut", 7.0)


@pytest.mark.parametrize("k,eps0,n,eps", CASES)
def test_ended_window_gives_the_whole_window_bracket(monkeypatch, k, eps0, n, eps):
    """B's window cut below and ended above the band (every table size: TOP_MIN_CELLS = 0)
    gives the whole window's bracket within its own width (here the band lies 5-8 sd above
    B's mean: 10-RR n = 2e4 and 2-RR eps = 0.0949 get a level, the others need none)."""
    cat = _cat(k, eps0, n, eps)
    ref_lo, ref_hi = _whole_window(monkeypatch, cat)
    monkeypatch.setattr(band_levels, "TOP_MIN_CELLS", 0)
    built = []
    real = exact_band.band_top
    monkeypatch.setattr(exact_band, "band_top", lambda *a: built.append(real(*a)) or built[-1])
    lo, hi = exact_band.band_bounds(cat)
    monkeypatch.undo()
    _fresh()
    width = max(ref_hi - ref_lo, hi - lo)
    assert abs(lo - ref_lo) <= width and abs(hi - ref_hi) <= width
    assert hi - lo <= 1.01 * (ref_hi - ref_lo) + 1e-12 * hi
    assert built
    if (k, n) == (10, 20_000) or eps == 0.0949:
        assert built[0] is not None and built[0] <= exact_band.TOP_CEILING


def test_the_end_is_set_for_the_large_band_tables():
    """10-RR, n = 37276, eps0 = 2 (issue 32's band point): the window ends ~4 sd above B's
    mean, a third of the columns, and the band never reaches past its end."""
    _fresh()
    cat = _cat(10, 2.0, 37276, 0.0231)
    sh, n, w_pair, rho, q = _band_parameters(cat)
    z_cut = exact_band.band_cut(sh, n, w_pair, rho, q)
    z_top = exact_band.band_top(sh, n, w_pair, rho, q)
    assert z_top is not None and z_top <= 5.0
    whole = exact_band._b_tables(n, w_pair, rho, z_cut)
    ended = exact_band._b_tables(n, w_pair, rho, z_cut, z_top)
    assert ended[1].shape[1] < 0.5 * whole[1].shape[1]
    plan = exact_band.band_plan(n, w_pair, rho, q, z_cut, z_top)
    t = plan.t
    m = n - t
    x_hi = np.minimum(plan.x_lo + plan.x_w - 1, m)
    k_hi = np.ceil(-(sh.cb * t + sh.base * m + sh.e * x_hi) / sh.d)
    assert np.all(k_hi <= np.minimum(plan.b_lo + plan.b_w, t + 1))
    _fresh()


def test_an_end_placed_too_low_is_still_sound(monkeypatch):
    """Negative control: B's window ended at its mean, below the band's top. The closed form
    from there is an upper bound only: the upper end stays above the truth (the whole
    window's lower end), the lower end below it (row_bounds leaves the closed form out), and
    the bracket is no longer tight."""
    _sound_but_loose_with(monkeypatch, "band_top", 0.0)
