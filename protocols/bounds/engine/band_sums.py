"""The band's part of exact_band.row_bounds (000 Thm 12-14's conditioning sums, summed exactly
by bands; issue 32): for every row and every k of its band, one look-up of B's pmf and of X's
prefix sums, laid out band-step-major.

For a row (alpha, t, m) and k in its band [kb0, kb1), with a = alpha + d k and
x^ = min(max(floor(a / |e|), x_lo - 1), x_hi):

    G(k) = (a + e x^)_+ CX(x^) + |e| CCX(x^ - 1) = |e| ((a / |e| - x^)_+ CX(x^) + CCX(x^ - 1)),

and 0 where floor(a / |e|) < x_lo (exact_band's module docstring); the band's part of f is
sum_k P[B = k] G(k), of the slope sum_k P[B = k] CX(xv(k)) with xv the largest x whose
computed value a + e x is > -3 ve (x^ or x^ + 1, clipped to the window).

Layout: the cells of a chunk of rows are a (band width, rows) array, so every per-row operand
(alpha, the window ends, the tables' row offsets) broadcasts along the long axis: numpy's
inner loops run over the rows, not over a band of ~10 (issue 32: a clip with per-row bounds
on 2048 x 10 cells took 51 us in the rows-major layout, 31 us band-major; a row sum 74 us
against 10 us). |e| is factored out of the sum, and the slope's x^ + 1 is looked up only for
the rare cells whose value a + e (x^ + 1) lies within 4 ve of 0.

Rounding (against exact_band's value error ve = VE_ULPS u (|c_b| t + |base| m + |shift| +
d (t + 1) + |e| (m + 1))): alpha carries 3u |alpha|-sized errors; a0 = alpha + d kb0 and
a = a0 + d j two roundings each of size at most the row's magnitude; a / |e| is computed as a
times fl(1 / |e|) (2u relative), and a / |e| - x^ one rounding: 8u size + 7u d (t + 1) in
all, below ve. A misplaced x^ (a / |e| within rounding of an integer) moves a term by at most
ve, which the slope covers (exact_band's module docstring). The factor |e| applied to the
sum adds 1u relative (exact_band.row_bounds counts it).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
from numpy.lib.stride_tricks import as_strided

from shufflesim.protocols.bounds.engine.binomial_window import _upper_span

__all__ = ["RowSetup", "band_sums", "row_setup"]


#: P[X > x_hi] of a trimmed window's top (:func:`row_setup`): the band stops where X's own
#: law leaves at most this much above, not at the table's edge (TAIL = 1e-20)
TRIM_TAIL = 1e-12


@dataclass(frozen=True)
class RowSetup:
    """The eps-independent part of exact_band.row_bounds for some rows of a plan: their
    windows of B and X, X's table row, the look-ups of the closed form above the band that
    depend only on the windows, and the mass outside the windows. Built once per rows (an
    eps search evaluates the same rows several times: engine/zero_mixture.py)."""

    b_lo: np.ndarray
    b_hi: np.ndarray         # last k of B's window within the support
    x_lo: np.ndarray
    x_hi: np.ndarray         # last x of the band's window of X (x_lo without X)
    ix_hi: np.ndarray        # x_hi - x_lo (int)
    xt: np.ndarray           # row of the X tables
    px_w: np.ndarray         # CX(x_hi)
    ccx_hi: np.ndarray       # CCX(x_hi - 1)
    out: np.ndarray          # P[B outside its window] + P[X outside its table's window]
    below: np.ndarray        # P[B below a cut window]
    tau: np.ndarray          # an upper bound on P[X > x_hi] where x_hi is trimmed, else 0


def row_setup(plan, t: np.ndarray, m: np.ndarray, bi: np.ndarray, xi: np.ndarray,
              has_x: bool, q: float = 1.0, trim: bool = False,
              sizes: tuple[int, int] | None = None) -> RowSetup:
    """:class:`RowSetup` of the rows (t pair users, m pool users; ``bi`` / ``xi`` their rows
    in the plan's B / X tables; ``has_x``: the shape has a pool variable X ~ Bin(m, q)).

    ``trim``: the band's window of X ends at x_hi = ceil(m q + s), s Chernoff's span with
    P[X >= m q + s] <= TRIM_TAIL (binomial_window._upper_span: Newton iterates from above
    on the convex m KL; X > x_hi means X >= m q + s + 1, whose bound is smaller by the factor
    exp(-d(m KL)/ds) < 1, far beyond the rounding of KL), where that is below the
    table's last column (~10 sd above the mean, TAIL = 1e-20): k at or above the band then
    go to the closed form with x_hi, which leaves out E[(a + e X)_+ ; x_hi < X <= x*(k)] <=
    P[X > x_hi] (a + e x_hi)_+ (e < 0), i.e. at most TRIM_TAIL times the closed form's own
    sum_k P[B = k] (a_k + e x_hi)_+, itself at most the row's value over P[X <= x_hi]
    (exact_band.row_bounds adds it to the upper side). Issue 32: the band of the two-level
    mixture (engine/zero_mixture.py) loses ~1.5 of its ~9 k per row. ``sizes``: (least,
    largest) m of the cached table of tops, covering every m here (default: these rows'
    range; the mixture passes that of all its rows, so that its chunks share one table)."""
    b_lo = plan.b_lo[bi]
    b_hi = np.minimum(b_lo + plan.b_w - 1, t)          # entries beyond the support: no mass
    x_lo = plan.x_lo[xi]
    x_hi = np.minimum(x_lo + plan.x_w - 1, m) if has_x else x_lo
    tau = np.zeros(t.size)
    if trim and has_x and t.size:
        # per pool size (the rows' m are few consecutive integers)
        m_min, m_max = (float(m.min()), float(m.max())) if sizes is None else map(float, sizes)
        if m_min > float(m.min()) or m_max < float(m.max()):
            raise ValueError(f"sizes {sizes} do not cover the rows' m")
        top = _trim_tops(m_min, m_max, q, TRIM_TAIL)[(m - m_min).astype(np.intp)]
        trimmed = top < x_hi
        x_hi = np.where(trimmed, np.maximum(top, x_lo), x_hi)
        tau[trimmed] = TRIM_TAIL
    ix_hi = (x_hi - x_lo).astype(np.int64)
    xt = plan.x_rows[xi]
    return RowSetup(b_lo, b_hi, x_lo, x_hi, ix_hi, xt, plan.cx[xt, ix_hi + 1],
                    plan.ccx[xt, ix_hi], plan.b_out[bi] + plan.x_out[xi], plan.b_below[bi],
                    tau)


#: cells (band x rows) computed at a time, at least BAND_ROWS rows: the temporaries stay in
#: cache (the mixture of engine/zero_mixture.py has ~32 000 rows x 7 at n = 1389; 2048 rows:
#: 4.9 ms, 4096: 4.2 ms, 8192: 4.7 ms)
BAND_CELLS = 32_768
BAND_ROWS = 1024


@functools.lru_cache(maxsize=8)
def _trim_tops(m_min: float, m_max: float, q: float, tail: float) -> np.ndarray:
    """ceil(m q + s) for m = m_min..m_max, s Chernoff's span of Bin(m, q) at ``tail``."""
    sizes = np.arange(m_min, m_max + 1.0)
    tops = np.ceil(sizes * q + _upper_span(sizes, q, tail))
    tops.flags.writeable = False
    return tops


def _flat(table: np.ndarray) -> tuple[np.ndarray, int, int]:
    """A 1-D view over a 2-D table's memory, its row stride and column stride (in items), so
    that table[r, c] is flat[r * rs + c * cs]."""
    item = table.itemsize
    s0, s1 = table.strides
    if table.ndim != 2 or s0 % item or s1 % item or s0 < 0 or s1 <= 0:
        table = np.ascontiguousarray(table)
        s0, s1 = table.strides
    r, c = table.shape
    span = (r - 1) * (s0 // item) + (c - 1) * (s1 // item) + 1
    return as_strided(table, shape=(span,), strides=(item,), writeable=False), s0 // item, \
        s1 // item


def band_sums(plan, d: float, e: float, alpha, kb0, kb1, b_lo, x_lo, x_hi, ix_hi, bi, xt,
              ve, width: int):
    """Per row: (the band's part of f, of its slope) for k in [kb0, kb1) (module docstring);
    ``bi`` / ``xt`` are the rows' rows in the plan's B and X tables, ``width`` at least the
    largest kb1 - kb0."""
    rows = alpha.size
    df = np.zeros(rows)
    ds = np.zeros(rows)
    if width <= 0 or rows == 0:
        return df, ds
    ae = abs(e)
    inv = 1.0 / ae
    cx_f, cx_rs, cx_cs = _flat(plan.cx)
    cc_f, cc_rs, cc_cs = _flat(plan.ccx)
    pb_f, pb_rs, pb_cs = _flat(plan.pb)
    if cx_cs != 1 or cc_cs != 1 or cc_rs != cx_rs or pb_cs != 1:
        raise AssertionError("band tables are not row-contiguous alike")
    steps = np.arange(width, dtype=float)[:, None]
    d_steps = d * steps
    isteps = np.arange(width, dtype=np.intp)[:, None]
    chunk = max(BAND_ROWS, BAND_CELLS // width)
    shape = (width, min(rows, chunk))
    buf_q, buf_x, buf_g = np.empty(shape), np.empty(shape), np.empty(shape)
    for r in range(0, rows, chunk):
        c = slice(r, r + chunk)
        n_c = alpha[c].size
        q, xs, g = buf_q[:, :n_c], buf_x[:, :n_c], buf_g[:, :n_c]
        lo1 = x_lo[c] - 1.0
        hi = x_hi[c]
        # a = alpha + d (kb0 + j), then a / |e| and x* = floor(a / |e|)
        np.add(d_steps, alpha[c] + d * kb0[c], out=q)
        np.multiply(q, inv, out=q)
        np.floor(q, out=xs)
        # the slope's x* + 1: where a + e (x* + 1) > -4 ve, i.e. a / |e| - x* >= 1 - 4 ve / |e|
        # (rare: looked up cell by cell below)
        np.subtract(q, xs, out=g)
        rare = bool(np.any(g >= 1.0 - 4.01 * float(np.max(ve[c])) * inv))
        # x^ = x* clipped to [x_lo - 1, x_hi], a / |e| - x^ and the flat index of CX(x^)
        np.maximum(xs, lo1, out=xs)        # (np.clip with per-row bounds is ~1.5x slower)
        np.minimum(xs, hi, out=xs)
        np.subtract(q, xs, out=q)
        base_x = xt[c].astype(np.intp) * cx_rs
        xs += (base_x - lo1)
        idx = xs.astype(np.intp)
        cxv = np.take(cx_f, idx)
        # G / |e|: 0 where x* < x_lo (idx at the row's column 0)
        inside = idx > base_x
        np.maximum(q, 0.0, out=g)
        g *= cxv
        idx -= 1
        g += np.take(cc_f, idx, mode="clip")
        g *= inside
        # P[B = k] on [kb0, kb1)
        pidx = (bi[c].astype(np.intp) * pb_rs + (kb0[c] - b_lo[c]).astype(np.intp)) + isteps
        p = np.take(pb_f, pidx, mode="clip")
        p *= isteps < (kb1[c] - kb0[c]).astype(np.intp)
        df[c] = np.einsum("ji,ji->i", p, g)
        ds[c] = np.einsum("ji,ji->i", p, cxv)
        if rare:
            _next_x(ds, r, q, xs - base_x + lo1, hi, lo1, ve[c] * inv, p, idx + 1, cx_f)
    return df * ae, ds


def _next_x(ds, r: int, frac, xh, hi, lo1, ve_e, p, idx, cx_f) -> None:
    """Add to ``ds`` (rows r, r + 1, ...) P[B = k] P[X = x^ + 1] for the cells whose value at
    x^ + 1 lies within 4 ve of 0: a / |e| - x^ >= 1 - 4 ve / |e| with x^ inside the window
    (x_lo - 1 <= x^ < x_hi; at x_hi the window ends, below it a / |e| - x^ < 0); ``frac`` is
    a / |e| - x^, ``idx`` the flat index of CX(x^)."""
    cells = (frac >= 1.0 - 4.01 * ve_e) & (frac < 1.0) & (xh < hi) & (xh >= lo1) & (p > 0)
    jj, ii = np.nonzero(cells)
    if ii.size:
        extra = p[jj, ii] * (np.take(cx_f, idx[jj, ii] + 1) - np.take(cx_f, idx[jj, ii]))
        np.add.at(ds, r + ii, np.maximum(extra, 0.0))
