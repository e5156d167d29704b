"""Aggregates of a symmetric pair with a neutral group by (D, bin of m): the k-RR blanket pair
(000 Thm 13) at small n without its O(S x D x h3-bins) enumeration (issue 32: rdp-blanket
over few rounds).

Notation of blocks.py: S = h1 + h2, D = h1 - h2, h3 the neutral count, m = sbar S + r h3,
A = m + alpha D, B = m + beta D; P0 = M A / n, P1 = M B / n with M the reference multinomial,
under which S ~ Bin(n, 2w), h3 | S ~ Bin(n - S, rho) and h1 | (S, h3) ~ Bin(S, 1/2). The loss
ln(A / B) of an outcome depends on it only through (D, m), and for fixed D it is monotone in m.
So the outcomes of one D whose m lies in one bin [M_j, M_j+1) of relative width ``weak_rtol``
form an aggregate (enumeration.py) whatever their S and h3, with the exact masses

    p0 = (y_m + alpha D y_p) / n,  p1 = (y_m + beta D y_p) / n,
    y_p[D, j] = sum_S Bin_S(D) P(S) P[h3 in bin j | S],
    y_m[D, j] = sum_S Bin_S(D) P(S) E[m; h3 in bin j | S],

(one matrix product over S per parity of S), and a loss interval [lo, hi] from the smallest
and largest m of its outcomes. pld.py splits each aggregate into two outcomes at lo and hi
keeping (p0, p1): a dominating pair (the outcomes of any set with losses in [lo, hi] are a
post-processing of that split), as for the (S, h3) cells of enumeration.symmetric_aggregates,
whose loss intervals are as wide (S exact and h3 in bins of relative width weak_rtol in m).
Those cells number S x D x h3-bins (32 million at n = 1000 with tails of 1e-60); these
aggregates number D x m-bins (about 0.3 million), and the work is the products, S x D x m-bins
multiply-adds in BLAS.

The h3 outside each row's window (its two tails) are aggregates too, one per D and tail for
S * TAIL_SPAN consecutive S of a parity (one S at small n, where the D window reaches |D| = S
and merging S would widen the loss intervals at the extreme D). An outcome with a given D has
S >= |D|, hence m >= sbar |D|, which bounds every aggregate's loss interval.

Mass not enumerated: S outside its window and D outside each S's window: P0-mass at most
max(a) times the M-mass (A / n <= max a), P1 likewise with b.
"""

from __future__ import annotations

import math

import numpy as np

from shufflesim.protocols.accounting.aggregate_parts import (
    Aggregates,
    AggregateStream,
    _half_binomial_pmf,
    interval_mass,
    is_symmetric,
    small_product,
    window,
)
from shufflesim.protocols.accounting.enumeration import row_interval_masses
from shufflesim.protocols.accounting.neutral_blocks import _loss
from shufflesim.protocols.accounting.pairs import CountModel
from shufflesim.protocols.distributions import binom
from shufflesim.protocols.errors import require

#: (S, D) entries of the binomial table computed at once (memory of one chunk).
CHUNK = 1 << 20
#: Bins of m of relative width weak_rtol x BIN_FRACTION: aggregates narrower than the
#: (S, h3-bin) cells of enumeration.symmetric_aggregates (whose h3 bins change B by weak_rtol),
#: at a small cost (issue 32: rdp-blanket of 3-RR at n = 1000 and 1e4, T = 1, moved by
#: -5.9e-6 .. +1.7e-6 relative against the cells; 1: +7e-6, 0.25: +4.2e-7).
BIN_FRACTION = 0.5
#: The h3 windows leave out tail x H3_TAIL on each side: the two tails of a row are
#: aggregates of wide loss intervals, which weigh at large Renyi orders (issue 32: rdp-blanket
#: of 10-RR at n = 1e4, eps0 = 0.5, T = 1: 0.010628 with H3_TAIL = 1, 0.010511 with 1e-5, at
#: the same cost; every window is valid, the tails are aggregates, not left out).
H3_TAIL = 1e-5
#: The h3 tails of S * TAIL_SPAN consecutive rows of S form one aggregate per D.
TAIL_SPAN = 1e-3
#: Rows of S per product (each touches only the bins of m of its rows).
ROWS = 32


def applies(model: CountModel) -> bool:
    """Symmetric pairs with a neutral group (the k-RR blanket pair)."""
    return is_symmetric(model) and model.r > 0.0 and 0.0 < model.w_neutral


def _rho(model: CountModel) -> float:
    wsum = model.w_neutral + model.w_null
    return min(1.0, model.w_neutral / wsum)


def _windows(model: CountModel, n: int, tail: float):
    p2 = min(1.0, 2.0 * model.w[0])
    s_lo, s_hi = (int(v[0]) for v in window(np.array([n]), p2, tail))
    S = np.arange(max(s_lo, 1), max(s_hi, 1) + 1, dtype=float)
    d_lo, d_hi = window(S, 0.5, tail)
    c = np.floor(S / 2.0)
    t = np.arange(int((d_lo - c).min()), int((d_hi - c).max()) + 1, dtype=float)
    return p2, s_lo, s_hi, S, d_lo, d_hi, t


def _part(y_p, y_m, D, m_lo, m_hi, alpha, beta, sbar, n, loss_max) -> tuple:
    """(p0, p1, ell, lo, hi) of the aggregates (D, column) with masses from y_p, y_m (module
    docstring) and the columns' smallest and largest m (an outcome with this D has
    S >= |D|, so m >= sbar |D|: h3 >= 0)."""
    p0 = (y_m + alpha * D * y_p) / n
    p1 = (y_m + beta * D * y_p) / n
    with np.errstate(divide="ignore", invalid="ignore"):
        ell = np.where((p0 > 0) & (p1 > 0), np.log(p0 / np.where(p1 > 0, p1, 1.0)), 0.0)
    l1 = _loss(alpha, beta, D, np.maximum(m_lo[None, :], sbar * np.abs(D)), loss_max)
    l2 = _loss(alpha, beta, D, m_hi[None, :], loss_max)
    lo, hi = np.minimum(l1, l2), np.maximum(l1, l2)
    keep = (p0 > 0) | (p1 > 0)
    return p0[keep], p1[keep], np.clip(ell, lo, hi)[keep], lo[keep], hi[keep]


def entries(model: CountModel, n: int, tail: float) -> int:
    """The (S, D) entries of the binomial table (the products' work is this times the bins of
    m): the cost of :func:`m_bin_aggregates`."""
    _, _, _, S, _, _, t = _windows(model, int(n), float(tail))
    return int(S.size * t.size)


def m_bin_stream(model: CountModel, n: int, *, tail: float,
                 weak_rtol: float) -> AggregateStream:
    """The aggregates of the module docstring as an enumeration.AggregateStream (rdp.py sums
    them part by part): the bins' masses are computed at once, the parts (a parity's bins of
    m, a chunk's h3 tails) while the stream is iterated."""
    require(applies(model), "model", model.label,
            "m-bins need a symmetric pair with a neutral group")
    (a1, a2), (b1, b2) = model.a, model.b
    r = model.r
    sbar = 0.25 * (a1 + a2 + b1 + b2)
    alpha, beta = 0.5 * (a1 - a2), 0.5 * (b1 - b2)
    rho = _rho(model)
    p2, s_lo, s_hi, S, d_lo, d_hi, t = _windows(model, int(n), float(tail))
    tail_s = float(interval_mass(0, s_lo - 1, n, p2) + interval_mass(s_hi + 1, n, n, p2))
    tail_d = float(np.max(interval_mass(0, d_lo - 1, S, 0.5)
                          + interval_mass(d_hi + 1, S, S, 0.5)))
    N = n - S
    if rho < 1.0:
        h_lo, h_hi = window(N, rho, tail * H3_TAIL)
    else:                                     # h3 = N exactly
        h_lo, h_hi = N.copy(), N.copy()
    # bins [M_j, M_j+1) of m, M_j = ref (1 + weak_rtol BIN_FRACTION)^j; row S holds h3 in
    # [ceil((M_j - sbar S) / r), ceil((M_j+1 - sbar S) / r) - 1] within its window. Each row
    # keeps only its band of bins (global bins jg = j0 + q, q < K: a few hundred of the
    # thousands), and its two h3 tails {0 .. h_lo - 1} and {h_hi + 1 .. N} as the first and
    # last columns
    ref = float(np.min(sbar * S + r * h_lo))
    lstep = math.log1p(weak_rtol * BIN_FRACTION)
    j0 = np.maximum(np.floor(np.log((sbar * S + r * h_lo) / ref) / lstep) - 1, 0).astype(np.int64)
    j1 = np.floor(np.log((sbar * S + r * h_hi) / ref) / lstep).astype(np.int64) + 1
    band = int((j1 - j0).max()) + 1
    jg = j0[:, None] + np.arange(band)[None, :]
    bins = int(jg.max()) + 1
    cut = np.ceil((ref * np.exp(lstep * np.concatenate([jg, jg[:, -1:] + 1], axis=1))
                   - (sbar * S)[:, None]) / r)
    cut = np.clip(cut, h_lo[:, None], (h_hi + 1.0)[:, None])
    cut[:, 0], cut[:, -1] = h_lo, h_hi + 1.0               # the rows' windows, exactly
    blo = np.concatenate([np.zeros((S.size, 1)), cut[:, :-1], (h_hi + 1.0)[:, None]], axis=1)
    bhi = np.concatenate([(h_lo - 1.0)[:, None], cut[:, 1:] - 1.0, N[:, None]], axis=1)
    del cut
    NN = np.broadcast_to(N[:, None], blo.shape)
    if rho < 1.0:
        mass = row_interval_masses(blo, bhi, NN, rho)
        # E[h3; lo <= h3 <= hi | N] = N rho (mass - (1 - rho) (f(hi) - f(lo - 1))), f the pmf
        # of Bin(N - 1, rho) (enumeration.neutral_bins); only on the bins in use
        mean = np.zeros(blo.shape)
        use = (blo <= bhi) & (mass > 0) & (bhi > 0)
        lo_u, hi_u, n_u = blo[use], bhi[use], np.maximum(NN[use] - 1, 0)
        f_diff = binom.pmf(hi_u, n_u, rho) - binom.pmf(lo_u - 1, n_u, rho)
        mean[use] = NN[use] * rho * np.clip(mass[use] - (1.0 - rho) * f_diff, 0.0, 1.0)
    else:
        mass = (blo <= bhi).astype(float)
        mean = np.where(blo <= bhi, NN, 0.0)
    empty = ~(blo <= bhi) | ~(mass > 0)
    mass = np.where(empty, 0.0, mass)
    mean = np.where(empty, 0.0, mean)
    m_lo_row = np.where(empty, np.inf, sbar * S[:, None] + r * blo)
    m_hi_row = np.where(empty, -np.inf, sbar * S[:, None] + r * bhi)
    p_s = binom.pmf(S, n, p2)
    w_p = p_s[:, None] * mass                              # P(S) P[bin j | S]
    w_m = p_s[:, None] * (sbar * S[:, None] * mass + r * mean)   # P(S) E[m; bin j | S]

    def emit():
        if s_lo == 0:       # S = 0: D = 0, the same outcome under P0 and P1 (loss 0)
            zero = float(binom.pmf(0, n, p2)) * r * n * rho / n
            if zero > 0:
                yield np.array([zero]), np.array([zero]), np.zeros(1), np.zeros(1), np.zeros(1)
        shape = (alpha, beta, sbar, n, model.loss_max)
        for parity in (0, 1):
            sel = np.nonzero((S % 2) == parity)[0]
            if sel.size == 0:
                continue
            D = (2.0 * t - parity)[:, None]
            inner = slice(1, -1)                  # the bins of m (columns 0, -1: the h3 tails)
            used = ~empty[sel, inner]
            where = jg[sel][used]                 # the global bin of each band entry in use
            m_lo = np.full(bins, np.inf)
            m_hi = np.full(bins, -np.inf)
            np.minimum.at(m_lo, where, m_lo_row[sel, inner][used])
            np.maximum.at(m_hi, where, m_hi_row[sel, inner][used])
            live = np.nonzero(np.isfinite(m_lo))[0]
            column = np.full(bins, -1, dtype=np.int64)
            column[live] = np.arange(live.size)
            y_p = np.zeros((t.size, live.size))
            y_m = np.zeros_like(y_p)
            group = max(1, int(S[0] * TAIL_SPAN))       # rows per tail aggregate (below)
            rows = group * max(1, min(ROWS, CHUNK // t.size) // group)
            for first in range(0, sel.size, rows):        # chunks of S: bounded memory
                part = slice(first, first + rows)
                idx = sel[part]
                X = _half_binomial_pmf(S[idx], t)   # (t, S of the chunk)
                row, q = np.nonzero(~empty[idx, inner])
                if row.size:                      # the chunk's bands, spread onto its bins of m
                    col = column[jg[idx[row], q]]
                    first_col = int(col.min())
                    W = np.zeros((2, idx.size, int(col.max()) - first_col + 1))
                    W[0, row, col - first_col] = w_p[idx[row], q + 1]
                    W[1, row, col - first_col] = w_m[idx[row], q + 1]
                    span = slice(first_col, first_col + W.shape[2])
                    y_p[:, span] += small_product(X, W[0])
                    y_m[:, span] += small_product(X, W[1])
                # the h3 tails: each spans many bins of m, so they are merged only over `group`
                # consecutive S of a parity (1 below S = 1 / TAIL_SPAN: where the D window
                # reaches |D| = S, merging S would widen the loss intervals at the extreme D)
                starts = np.arange(0, idx.size, group)
                for col in (0, -1):
                    if not (w_p[idx, col] > 0).any():
                        continue
                    mlo = np.minimum.reduceat(m_lo_row[idx, col], starts)
                    mhi = np.maximum.reduceat(m_hi_row[idx, col], starts)
                    ok = np.isfinite(mlo)
                    yp = np.add.reduceat(X * w_p[idx, col][None, :], starts, axis=1)[:, ok]
                    ym = np.add.reduceat(X * w_m[idx, col][None, :], starts, axis=1)[:, ok]
                    yield _part(yp, ym, D, mlo[ok], mhi[ok], *shape)
            yield _part(y_p, y_m, D, m_lo[live], m_hi[live], *shape)
    outside = tail_s + tail_d
    return AggregateStream(emit(), max(model.a) * outside, max(model.b) * outside,
                           int(S.size * t.size * bins), min(1.0, outside))


def m_bin_aggregates(model: CountModel, n: int, *, tail: float,
                     weak_rtol: float) -> Aggregates:
    """The aggregates of :func:`m_bin_stream`, as arrays."""
    stream = m_bin_stream(model, n, tail=tail, weak_rtol=weak_rtol)
    p0, p1, ell, lo, hi = (np.concatenate(a) for a in zip(*stream.parts, strict=True))
    return Aggregates(p0, p1, ell, lo, hi, stream.outside0, stream.outside1, stream.outcomes,
                      stream.outside_mass)
