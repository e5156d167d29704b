"""Issue 32: exact_band's X tables by the one-user recurrence (exact_band._x_recurrence) equal
the tables built row by row (window_pmf and two cumulative sums on a wider window) within the
stated relative error plus the stated missing mass, for windows following the law rightwards
(q <= 1/2) and leftwards (q > 1/2), and a wrong recurrence is caught by the same comparison."""

from __future__ import annotations

import numpy as np
import pytest

from shufflesim.protocols.bounds.engine import band_recurrence, exact_band
from shufflesim.protocols.bounds.engine.plans import t_plan


def _row_by_row(m, q, x_lo, width):
    """CX = P[X <= x] and CCX of every row at x = x_lo - 1 + j (j = 0 .. width), built directly
    from window_pmf on one wide window starting 200 below every x_lo."""
    start = max(float(x_lo.min()) - 200.0, 0.0)
    span = int(float(x_lo.max()) + width - start) + 1
    px, err = exact_band.window_pmf(m, q, np.full(m.size, start), span)
    full = np.zeros((m.size, span + 1))
    np.cumsum(px, axis=1, out=full[:, 1:])
    full_cc = np.zeros_like(full)
    np.cumsum(full[:, 1:], axis=1, out=full_cc[:, 1:])
    index = (x_lo - start).astype(np.int64)[:, None] + np.arange(width + 1)[None, :]
    rows = np.arange(m.size)[:, None]
    return (full[rows, index], full_cc[rows, index],
            err + exact_band.REL_SPECIAL + 2 * (span + 1) * exact_band.U)


def _check(x_lo, cx, ccx, x_out, err, m, q):
    ref_cx, ref_ccx, ref_err = _row_by_row(m, q, x_lo, cx.shape[1] - 1)
    rel = err + ref_err
    # missing mass (a sub-measure): an entry of CX is short by at most x_out, of CCX by at
    # most x_out times the columns below it (and 200 more: the reference starts lower)
    cols = np.arange(cx.shape[1])[None, :] + 200.0
    assert np.all(np.abs(cx - ref_cx) <= rel * ref_cx + x_out[:, None])
    assert np.all(np.abs(ccx - ref_ccx) <= rel * ref_ccx + x_out[:, None] * cols)
    assert np.all(cx <= ref_cx * (1 + rel))          # a sub-measure: never above
    return float(np.max(np.abs(cx - ref_cx) / np.maximum(ref_cx, 1e-300) * (ref_cx > 1e-12)))


@pytest.mark.parametrize("n,w_pair,q", [(60, 0.3, 0.4), (3000, 0.05, 0.13),
                                        (100_000, 0.0314, 0.1299), (5000, 0.6, 0.97),
                                        (30_000, 0.1707, 0.8232), (3000, 0.05, 0.87)])
def test_recurrence_tables_match_the_row_by_row_tables(n, w_pair, q):
    m = n - t_plan(n, w_pair).t
    x_lo, cx, ccx, x_out, err, x_rows = exact_band._x_recurrence(m, q)
    cx, ccx = cx[x_rows], ccx[x_rows]
    assert err < 1e-8 and np.all(x_out < 1e-15)
    worst = _check(x_lo, cx, ccx, x_out, err, m, q)
    assert worst < 1e-9
    if q > 0.5:                   # the window follows the law leftwards: narrower than a union
        lo, width = exact_band._window(m, q)
        union = float(np.max(np.minimum(lo + width - 1, m)) - lo.min()) + 1
        assert cx.shape[1] - 1 < union - 0.5 * (2 * q - 1) * (m.size - 1)


def test_a_wrong_recurrence_is_caught(monkeypatch):
    """Negative control: a recurrence that adds a user with probability q (1 + 1e-6) drifts
    past the stated error."""
    n, w_pair, q = 3000, 0.05, 0.13
    m = n - t_plan(n, w_pair).t
    real_multiply = np.multiply
    calls = {"n": 0}

    def skewed(a, b, *args, **kwargs):
        if isinstance(b, float) and b == q:
            calls["n"] += 1
            b = q * (1 + 1e-6)
        return real_multiply(a, b, *args, **kwargs)

    monkeypatch.setattr(exact_band.np, "multiply", skewed)
    x_lo, cx, ccx, x_out, err, x_rows = exact_band._x_recurrence(m, q)
    monkeypatch.undo()
    cx, ccx = cx[x_rows], ccx[x_rows]
    assert calls["n"] > 0
    with pytest.raises(AssertionError):
        _check(x_lo, cx, ccx, x_out, err, m, q)


# --- B's tables (band_recurrence.suffix_chains, exact_band._b_tables) -----------------------

def _b_reference(t, rho, frame, cols):
    """P[B = k], P[B >= k] and sum_{j >= k} P[B >= j] = E[(B - k + 1)_+] at k = frame + i,
    i < cols, for B ~ Bin(t_r, rho): scipy's pmf over the whole support, its suffix sums."""
    k = frame[:, None] + np.arange(cols)[None, :]
    top = int(t.max())
    support = np.arange(top + 1, dtype=float)
    law = exact_band.binom.pmf(support[None, :], t[:, None], rho)
    tail = np.zeros((t.size, top + 3))                   # tail[:, s] = P[B >= s]
    tail[:, top::-1] = np.cumsum(law[:, ::-1], axis=1)
    tails = np.zeros((t.size, top + 4))                  # tails[:, s] = sum_{j >= s} tail[j]
    tails[:, top + 2::-1] = np.cumsum(tail[:, ::-1], axis=1)
    at = np.clip(k, 0, top + 2).astype(np.int64)
    rows = np.arange(t.size)[:, None]
    below = np.maximum(-k, 0.0)                          # k < 0: P[B >= k] = 1, SSB adds -k
    pmf = np.where((k >= 0) & (k <= top), law[rows, np.clip(k, 0, top).astype(np.int64)], 0.0)
    return pmf, tail[rows, at], tails[rows, at] + below * tail[rows, at]


def _check_b(tables, t, rho):
    """Every entry within the stated relative error of the reference plus what the stated
    outside mass can carry (an entry of SSB: that mass times the distance to the top of the
    support), and never above the reference beyond the error (a sub-measure)."""
    frame, pb, sb, ssb, out, err, below = tables
    assert err < 2e-9
    ref_p, _, _ = _b_reference(t, rho, frame, pb.shape[1])
    _, ref_s, _ = _b_reference(t, rho, frame, sb.shape[1])
    _, _, ref_ss = _b_reference(t, rho, frame, ssb.shape[1])
    rel = err + 1e-13                                    # + the reference's own rounding
    slack = out[:, None]
    reach = np.maximum(t[:, None] - frame[:, None] + 2.0, 1.0)
    worst = 0.0
    for got, ref, extra in ((pb, ref_p, slack), (sb, ref_s, slack), (ssb, ref_ss, slack * reach)):
        assert np.all(np.abs(got - ref) <= rel * ref + extra)
        assert np.all(got <= ref * (1 + rel) + 1e-300)
        big = ref > 1e12 * extra
        worst = max(worst, float(np.max(np.abs(got - ref)[big] / ref[big], initial=0.0)))
    return worst


@pytest.mark.parametrize("n,w_pair,rho,z_cut", [
    (60, 0.5, 0.5, None), (40, 0.9, 0.2, None), (200, 0.3, 0.93, -2.0), (3000, 0.05, 0.13, None),
    (3000, 0.5, 0.03, None), (5000, 0.17, 0.5, 0.0), (2000, 0.42, 0.5, 1.0)])
def test_b_tables_by_recurrence_match_the_law(n, w_pair, rho, z_cut):
    """exact_band._b_tables (band_recurrence.suffix_chains) against the pmf and sums taken
    directly, for uncut and cut windows, frames starting below 0 (n = 40, 60), p on both sides
    of 1/2; every row's window [cut or Chernoff's start, Chernoff's end] lies in its frame."""
    exact_band._b_tables.cache_clear()
    tables = exact_band._b_tables(n, w_pair, rho, z_cut)
    t = t_plan(n, w_pair).t
    worst = _check_b(tables, t, rho)
    assert worst < 1e-10             # where the outside mass cannot matter: far inside the error
    frame, pb = tables[0], tables[1]
    lo, width = exact_band._window(t, rho)
    hi = np.minimum(lo + width - 1, t)
    first = lo if z_cut is None else np.minimum(np.maximum(
        np.floor(t * rho + z_cut * np.sqrt(t * rho * (1 - rho))), lo), hi)
    assert np.all(frame <= first) and np.all(frame + pb.shape[1] - 1 >= hi)
    # the mass below a cut frame is returned, and it is P[B < frame]
    below = tables[6]
    cut = frame > lo
    assert np.allclose(below[cut], exact_band.binom.cdf(frame[cut] - 1, t[cut], rho), rtol=1e-8)
    assert np.all(below[~cut] == 0.0)


def test_a_wrong_b_recurrence_is_caught(monkeypatch):
    """Negative control: adding a user with probability rho (1 + 1e-6) drifts past the stated
    error within a chain."""
    n, w_pair, rho = 3000, 0.05, 0.13
    real_multiply = np.multiply

    def skewed(a, b, *args, **kwargs):
        if isinstance(b, float) and b == rho:
            b = rho * (1 + 1e-6)
        return real_multiply(a, b, *args, **kwargs)

    exact_band._b_tables.cache_clear()
    monkeypatch.setattr(band_recurrence.np, "multiply", skewed)
    tables = exact_band._b_tables(n, w_pair, rho)
    monkeypatch.undo()
    exact_band._b_tables.cache_clear()
    with pytest.raises(AssertionError):
        _check_b(tables, t_plan(n, w_pair).t, rho)


# --- X's tables ending at the trimmed tops (exact_band._x_tables) ---------------------------

@pytest.mark.parametrize("n,w_pair,q", [(3000, 0.05, 0.13), (5000, 0.6, 0.97),
                                        (30_000, 0.1707, 0.8232), (19307, 0.4239, 0.3679),
                                        (60, 0.3, 0.4)])
@pytest.mark.parametrize("at_mean", [False, True])
def test_x_tables_ending_at_the_trimmed_tops_match_the_law(n, w_pair, q, at_mean):
    """_x_recurrence with ``tops`` (q on both sides of 1/2): every entry the band can read,
    up to each row's top + 1, equals the row-by-row table within the stated error and the
    stated outside mass (now only what lies below), and the tables are narrower (issue 32;
    at q = 0.97, n = 5000 the carried rows would cost more: the whole tables are kept). With
    tops at X's mean (``at_mean``), where half the mass lies above, an entry computed as if
    nothing lay above (a frame carrying too few rows with q > 1/2) would be off by ~0.5."""
    from shufflesim.protocols.bounds.engine.band_sums import TRIM_TAIL, _trim_tops
    m = n - t_plan(n, w_pair).t
    m_min = float(m.min())
    tops = _trim_tops(m_min, float(m.max()), q, TRIM_TAIL)[(m - m_min).astype(np.intp)]
    if at_mean:
        tops = np.floor(m * q)
    x_lo, cx, ccx, x_out, err, x_rows = exact_band._x_recurrence(m, q, tops)
    whole = exact_band._x_recurrence(m, q)
    cx, ccx = cx[x_rows], ccx[x_rows]
    assert err < 1e-8 and np.all(x_out < 1e-15) and np.all(x_out <= whole[3] * (1 + 1e-12))
    # the band reads CX and CCX up to x = top (columns up to top - x_lo + 1)
    reach = np.minimum(tops, m) - x_lo + 2.0
    assert np.all(x_lo + cx.shape[1] - 2 >= np.minimum(tops + 1, m))
    ref_cx, ref_ccx, ref_err = _row_by_row(m, q, x_lo, cx.shape[1] - 1)
    cols = np.arange(cx.shape[1])[None, :]
    read = cols < reach[:, None]
    rel = err + ref_err
    assert np.all((np.abs(cx - ref_cx) <= rel * ref_cx + x_out[:, None]) | ~read)
    assert np.all((np.abs(ccx - ref_ccx) <= rel * ref_ccx + x_out[:, None] * (cols + 200.0))
                  | ~read)
    assert cx.shape[1] <= whole[1].shape[1]        # (else the whole tables are kept)
    if n > 10_000 and not at_mean:
        assert cx.shape[1] < 0.92 * whole[1].shape[1]


def test_band_bounds_with_tables_ending_at_the_tops_hold_the_whole_tables_bracket(monkeypatch):
    """exact_band.band_bounds (X's tables ending at the trimmed tops, rows trimmed) against the
    whole tables without the trim (the former path): the brackets overlap and the width grows
    by at most 2e-12 relative (TRIM_TAIL's term), at 3-RR and 10-RR band points."""
    from shufflesim.protocols.bounds.engine import common
    from shufflesim.protocols.bounds.numerical import decompositions as dec
    from shufflesim.protocols.randomizers import make_randomizer

    def fresh():
        for fn in (exact_band._b_tables, exact_band._x_tables):
            fn.cache_clear()
        exact_band._built.clear()
        exact_band._seen_parameters.clear()

    real_setup, real_x = exact_band.row_setup, exact_band._x_recurrence
    for k, eps0, n, eps in [(3, 1.0, 19307, 0.01496), (10, 2.0, 37276, 0.0231),
                            (10, 0.1, 20000, 0.00178), (3, 0.5, 8000, 0.0312)]:
        r = make_randomizer("krr", epsilon0=eps0, domain_size=k)
        cat = common.categories(dec.blanket_atoms(r, 0, 1), n, eps)
        fresh()
        lo, hi = exact_band.band_bounds(cat)
        fresh()
        monkeypatch.setattr(exact_band, "_x_recurrence", lambda m, q, tops=None: real_x(m, q))
        monkeypatch.setattr(exact_band, "row_setup",
                            lambda *a: real_setup(*a[:6]))       # trim=False
        ref_lo, ref_hi = exact_band.band_bounds(cat)
        monkeypatch.undo()
        fresh()
        assert lo <= ref_hi and ref_lo <= hi
        assert hi - lo <= (ref_hi - ref_lo) + 2e-12 * hi
