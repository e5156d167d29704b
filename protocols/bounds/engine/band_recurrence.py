"""Prefix-sum tables of Bin(m, q) for consecutive m by the one-user recurrence (issue 32), used
by protocols.bounds.engine.exact_band for its X tables (000 Thm 12-14's conditioning sums).

Bin(m + 1, q) = Bin(m, q) * ((1 - q) delta_0 + q delta_1), and the convolution carries over to
every prefix sum on a common window starting at L: CX_{m+1}(x) = (1 - q) CX_m(x) + q CX_m(x - 1)
with CX(L - 1) = 0. Started from a row restricted to the window, the rows are the prefix sums of
a sub-measure of the exact law whose missing mass is the start row's (a convolution keeps a
deficit and adds none; mass only moves right, so none crosses L). Every entry is a sum of two
non-negative products: its relative error grows by at most 4u per row (three roundings and that
of 1 - q; 5u with ``leftward``).

The rows are computed as CHAIN_ROWS-long chains side by side, each from its own start row (one
vector operation per step for all chains: the per-row cost of a Python step is paid once per
chain step), and the second prefix sums CCX(x) = sum_{y <= x} CX(y) by one cumulative sum per
row instead of a second recurrence (4 operations a cell instead of 6).
"""

from __future__ import annotations

import numpy as np

from shufflesim.protocols.bounds.engine.band_shape import CHAIN_ROWS  # rows of one chain
from shufflesim.protocols.bounds.engine.binomial_window import _outside, _window, window_pmf
from shufflesim.protocols.bounds.engine.common import REL_SPECIAL, TINY, U
from shufflesim.protocols.distributions import binom

#: relative error added per row, in units of the unit roundoff
ROUNDINGS_PER_ROW = 5


def chain_tables(start: np.ndarray, q: float, length: int,
                 leftward: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """CX and CCX tables of K chains of ``length`` rows from ``start`` (K, width + 1), the CX
    of each chain's first row on its own window (column 0 the value just below the window, 0
    for a start row); row j of a chain has j users more than its first. Chain c's row j is
    row j K + c of both tables (:func:`chain_row`): the K rows of one step are one contiguous
    block, so a step is three vector operations on one flat array (rows that cross from one
    row to the next are recomputed: column 0, or the last column with ``leftward``).

    ``leftward``: the columns of each row are shifted by one user, z = x - j, so the law moves
    left by 1 - q a row instead of right by q: CX_{m+1}(z) = (1 - q) CX_m(z + 1) + q CX_m(z),
    and likewise CCX. No mass ever lies above the start row's window (it only moves left), so
    the value past the last column is the last one (CX) or the last one plus the last CX
    (CCX); the mass that moves below the window stays in column 0 (prefix sums from -inf). The
    sub-measure is the same as without the shift, and each entry is still a sum of
    non-negative products (one rounding more in the last CCX column: 5u a row)."""
    chains, cols = start.shape
    table = np.empty((length, chains, 2, cols))
    table[0, :, 0] = start
    table[0, :, 1, 0] = 0.0
    np.cumsum(start[:, 1:], axis=1, out=table[0, :, 1, 1:])
    stay = 1.0 - q
    step = np.empty(chains * 2 * cols - 1)
    for j in range(1, length):
        old, new = table[j - 1], table[j]
        of, nf = old.reshape(-1), new.reshape(-1)
        if not leftward:
            np.multiply(of, stay, out=nf)
            np.multiply(of[:-1], q, out=step)
            np.add(nf[1:], step, out=nf[1:])
            np.multiply(old[:, :, 0], stay, out=new[:, :, 0])      # nothing below column 0
            continue
        np.multiply(of[1:], stay, out=nf[:-1])
        np.multiply(of[:-1], q, out=step)
        np.add(nf[:-1], step, out=nf[:-1])
        last_cx, last_ccx = old[:, 0, -1], old[:, 1, -1]
        new[:, 0, -1] = last_cx * stay + last_cx * q
        new[:, 1, -1] = (last_ccx + last_cx) * stay + last_ccx * q
    flat = table.reshape(length * chains, 2, cols)
    return flat[:, 0], flat[:, 1]


def chain_row(sorted_row: np.ndarray, length: int, chains: int) -> np.ndarray:
    """Row of :func:`chain_tables`' tables holding the row ``sorted_row`` of the sorted rows
    (chain sorted_row // length, step sorted_row % length)."""
    return (sorted_row % length) * chains + sorted_row // length


def _x_recurrence(m: np.ndarray, q: float, tops: np.ndarray | None = None):
    """CX and CCX of X ~ Bin(m_r, q) for every row r: CX_r(x) = P~_r[X <= x] and its prefix
    sums, x from x_lo - 1 to x_lo + width - 1, by band_recurrence.chain_tables: the rows, sorted
    by m (consecutive: rows of T), form chains of CHAIN_ROWS rows, each started from its first
    row built as in :func:`window_pmf` on its own window. P~ is a sub-measure whose missing mass
    (its chain start's outside mass) is added to the row's outside mass, with the starts' error
    plus 5u per chain row. A chain's columns are x = z + c (m - m_c) - 1 + j on one window of z
    (m_c its start's users), c = 0 where q <= 1/2 (the mass drifts right by q a row) and c = 1
    otherwise (it drifts left by 1 - q): each row's own width plus min(q, 1 - q) chain rows.

    ``tops`` (per row, band_sums.row_setup's trimmed top of X's window, whose mass above is
    bounded relative to the row: TRIM_TAIL): the tables end at tops + 1 instead of Chernoff's
    end, and the outside mass leaves out the mass above them (a row whose end is not above its
    top, and below m, keeps it). Prefix sums need no mass above: with c = 0 a row's entries
    depend on the entries at and below them, and the start is exact below any end. With c = 1
    they depend on the entry above, so the frame carries the chain's rows more columns, and
    row j's top j entries (computed with the value past the last column taken as the last
    one, as if nothing lay above) are never read: every row is exact up to the chain's
    highest end. Rows must then be evaluated with row_setup(trim=True) (exact_band.row_bounds)."""
    rows = m.size
    m_first = float(m.min())
    sorted_row = (m - m_first).astype(np.int64)
    if np.any(np.sort(sorted_row) != np.arange(rows)):
        raise AssertionError("rows of T are not consecutive")
    length = min(CHAIN_ROWS, rows)
    chains = -(-rows // length)
    ms = m_first + np.arange(chains * length, dtype=float)      # sorted, padded to the chains
    lo, width = _window(ms, q)
    drift = 1.0 if q > 0.5 else 0.0
    j = np.tile(np.arange(length, dtype=float), chains)
    z_lo = (lo - drift * j).reshape(chains, length)
    first_z = z_lo.min(axis=1)
    s_lo = lo[::length]
    end = np.minimum(lo + width - 1, ms)
    top = (end - drift * j).reshape(chains, length).max(axis=1)
    if drift:                                     # each start row's window holds all its mass
        top = np.maximum(top, s_lo + width - 1)
    w_all = int(np.max(top - first_z)) + 1
    if tops is not None:          # (the padded rows, never read, widen nothing)
        by_m = lo.copy()
        by_m[sorted_row] = np.minimum(np.asarray(tops, dtype=float) + 1.0, m)
        # (in x: with c = 1, exact up to the chain's highest end, the frame carrying its rows)
        top_t = by_m.reshape(chains, length).max(axis=1)
        w_trim = int(np.max(top_t - first_z)) + 1
        if w_trim < w_all:
            w_all = w_trim
        else:                     # (c = 1 and a narrow law: the carried rows cost more)
            tops = None
    px0, err0 = window_pmf(ms[::length], q, s_lo, width)
    offset = (s_lo - first_z).astype(np.int64)
    cols = offset[:, None] + np.arange(width)[None, :]
    keep = cols < w_all                           # mass above every row's window: not needed
    start = np.zeros((chains, w_all + 1))
    start[np.nonzero(keep)[0], cols[keep] + 1] = px0[keep]
    np.cumsum(start, axis=1, out=start)
    cx, ccx = chain_tables(start, q, length, leftward=bool(drift))
    x_lo = (first_z[:, None] + drift * np.arange(length)[None, :]).ravel()[sorted_row]
    if tops is None:
        deficit = _outside(ms[::length], q, s_lo, width)[sorted_row // length]
        x_out = _outside(m, q, x_lo, w_all) + deficit
    else:                                         # below the windows only (and see above)
        deficit = _below(ms[::length], q, s_lo)[sorted_row // length]
        x_out = _below(m, q, x_lo) + deficit
        last = x_lo + w_all - 1
        kept = (last < m) & (tops >= last)
        if kept.any():
            x_out[kept] += binom.sf(last[kept], m[kept], q) * (1 + REL_SPECIAL) + TINY
    err = err0 + REL_SPECIAL + 2 * (w_all + 1) * U + ROUNDINGS_PER_ROW * length * U * (1 + 1e-6)
    return x_lo, cx, ccx, x_out, err, chain_row(sorted_row, length, chains)


def _below(size: np.ndarray, p: float, lo: np.ndarray) -> np.ndarray:
    """Upper bound on P[Bin(size, p) < lo] per row."""
    out = np.zeros(np.shape(size))
    some = lo > 0
    out[some] = binom.cdf(lo[some] - 1, size[some], p)
    return out * (1 + REL_SPECIAL) + TINY


def suffix_chains(t: np.ndarray, p: float, lo: np.ndarray, hi: np.ndarray,
                  whole: np.ndarray | None = None):
    """B's tables of exact_band (000 Thm 12-14's conditioning sums) by the same one-user
    recurrence: for B_r ~ Bin(t_r, p) over consecutive t_r (ascending, one row each), the pmf
    P[B = k], SB(k) = P[B >= k] and SSB(k) = sum_{j >= k} SB(j) on a window per row that holds
    [lo_r, hi_r]. All three are linear in the law and commute with a shift, so adding a user
    is A_{t+1}(k) = (1 - p) A_t(k) + p A_t(k - 1) for each of them.

    Rows form chains of CHAIN_ROWS; chain c's start row s is built on a window from S
    (:func:`window_pmf`, then the two suffix sums), and row j of the chain holds
    k = S + j + i, i < W (+1 for SB, +2 for SSB): the frame moves one k a row and the law
    p < 1 of one, so in the frame mass only moves left, A'_{j+1}(i) = p A'_j(i) +
    (1 - p) A'_j(i + 1). S = min_j (lo_{s+j} - j) and S + W - 1 = max_j (hi_{s+j} - j): every
    row's window lies in its frame. The start's mass below S never enters a frame (at row j it
    lies below S + j), and the sums SB and SSB only look up.

    * ``whole`` None: the start's window is its frame, [S, S + W). Nothing is ever above a
      frame's top (the value beyond is 0), so every entry is the exact value for the start's
      law restricted to k <= S + W - 1: a sub-measure whose missing mass, the start's
      P[B > S + W - 1], is returned per row (for the outside mass); the last column of SB and
      the last two of SSB are 0.
    * ``whole`` (per row, the end of the law's window, >= hi): the start's window runs to its
      own end (or S + W + L, L = CHAIN_ROWS), so its SB and SSB count the mass above the
      frame; W + L + 1 columns are carried, and row j's are exact up to S + W + L - 1 (the top
      j use a value beyond taken as 0): the W (+1, +2) returned are exact for the start's law
      restricted to its window, the missing mass being the start's above it. Here SB and SSB
      at the frame's top + 1 (+ 2) count what lies above: B's window can end just above the
      band (exact_band.band_top), and the closed form above it still sees every k.

    A frame starting below 0 holds 0 there (pmf), the total (SB) and its multiples (SSB), as
    the sums over the whole line do. Error: the start rows as :func:`window_pmf` (anchor
    REL_SPECIAL, shape error) and two suffix sums of non-negative terms (2 (span + 2) u); each
    row adds at most 4u (two products, one sum, the rounding of 1 - p), counted as
    ROUNDINGS_PER_ROW. Returns (frame start per row, pmf (rows, W), SB (rows, W + 1),
    SSB (rows, W + 2), missing mass per row, relative error); the three tables are views of
    one array (row stride 3 (W + 2), or 3 (W + L + 1) with ``whole``)."""
    rows = t.size
    t_first = float(t[0]) if rows else 0.0
    if rows and np.any(t != t_first + np.arange(rows)):
        raise AssertionError("rows of T are not consecutive")
    length = max(min(CHAIN_ROWS, rows), 1)
    chains = -(-rows // length)
    pad = chains * length - rows
    j = np.arange(length, dtype=float)
    first = np.pad(np.asarray(lo, dtype=float), (0, pad), constant_values=np.inf)
    last = np.pad(np.asarray(hi, dtype=float), (0, pad), constant_values=-np.inf)
    s_lo = np.min(first.reshape(chains, length) - j, axis=1)
    width = int(np.max(np.max(last.reshape(chains, length) - j, axis=1) - s_lo,
                       initial=0.0)) + 1
    starts = t_first + length * np.arange(chains, dtype=float)
    if whole is None:
        span = width
        cols = width + 2
    else:
        cols = width + length + 1
        span = max(cols, int(np.max(np.asarray(whole, dtype=float)[::length] - s_lo)) + 1)
    # (a frame starting below 0 holds 0 there: the pmf is built from 0 and moved right)
    pmf0, err0 = window_pmf(starts, p, np.maximum(s_lo, 0.0), span)
    if np.any(s_lo < 0):
        index = np.arange(span)[None, :] + np.minimum(s_lo, 0.0).astype(np.int64)[:, None]
        pmf0 = np.where(index >= 0, np.take_along_axis(pmf0, np.maximum(index, 0), 1), 0.0)
    # the three tables side by side, (chains, rows of a chain, table, column): one step is
    # three operations for all of them (the columns past a table's own are 0 in the start
    # row without ``whole``, and stay 0: the value beyond is 0)
    table = np.empty((chains, length, 3, cols))
    start = table[:, 0]
    start[:, 0, :min(span, cols)] = pmf0[:, :cols]
    start[:, 0, span:] = 0.0
    sums = np.zeros((2, chains, span + 2))
    np.cumsum(pmf0[:, ::-1], axis=1, out=sums[0, :, span - 1::-1])
    np.cumsum(sums[0, :, span::-1], axis=1, out=sums[1, :, span::-1])
    start[:, 1:] = sums[:, :, :cols].transpose(1, 0, 2)
    step = np.empty((chains, 3, cols - 1))
    stay = 1.0 - p
    for i in range(1, length):
        old, new = table[:, i - 1], table[:, i]
        np.multiply(old, p, out=new)
        np.multiply(old[..., 1:], stay, out=step)
        new[..., :-1] += step
    flat = table.reshape(chains * length, 3, cols)[:rows]
    pb, sb, ssb = flat[:, 0, :width], flat[:, 1, :width + 1], flat[:, 2, :width + 2]
    frame = (s_lo[:, None] + j[None, :]).reshape(-1)[:rows]
    top = s_lo + span - 1
    missing = np.where(top < starts, binom.sf(top, starts, p), 0.0) * (1 + REL_SPECIAL) + TINY
    err = err0 + REL_SPECIAL + 2 * (span + 2) * U + ROUNDINGS_PER_ROW * length * U * (1 + 1e-6)
    return frame, pb, sb, ssb, np.repeat(missing, length)[:rows], err
