"""A dominating pair of a symmetric count pair *with* a neutral group, in O(blocks x D) work
(issue 32): the upper-bound PLD of the 000 Thm 13 blanket pair of k-RR without the O(n)
enumeration of enumeration.symmetric_aggregates.

Notation of blocks.py: S = h1 + h2, D = h1 - h2, m = sbar S + r h3 (h3 the neutral count),
A = m + alpha D, B = m + beta D. Revealing (S, h3) to the adversary gives a dominating pair, the
pi-mixture (pi(S, h3) = M(S, h3) m / n under P0 and P1 alike) of

    pair(S, m):  P0(D) = Bin_S(D) (m + alpha D) / m,   P1(D) = Bin_S(D) (m + beta D) / m.

(The pair that forgets h3 is *not* dominating, blocks.py; this one keeps it.)

Step 1, blocks (first order): for S in a block [Sa, Sb], pair(S, m) is a post-processing of
pair(Sa, m Sa / S) (blocks.py: S >= Sa with the same m / S; a fair +-1 step in D per extra
draw). So the pi-mixture of pair(Sa(S), m'(S, h3)), m' = m Sa / S, revealing (S, h3), is a
dominating pair. Its loss scale exceeds the true one by at most sqrt(Sb / Sa) per block
(relative (Sb - Sa) / (2 Sa): about 1e-4 at n = 1e6 with the default budget, blocks of width
~ pi^(-1/2), block_layout.py); single-S blocks are exact.

Step 2, aggregates (second order, as enumeration.py): the cells (block b, h3-bin k of
enumeration.neutral_bins) are put into bins j of m' of relative width weak_rtol (by the middle
of the cell's m' range; the loss depends on the outcome only through D and m'). Outcomes of the
pair with the same D and with their cell in bin j are merged into an aggregate with exact
masses

    p0 = sum_b Bin_Sa_b(D) (W_bj + alpha D V_bj),   p1 = sum_b Bin_Sa_b(D) (W_bj + beta D V_bj),
    W_bk = sum_{S in b} P(S) (sbar S P_k(S) + r E[h3; k | S]) / n = sum pi,
    V_bk = sum_{S in b} P(S) P_k(S) S / (n Sa_b)              = sum pi / m'

(W_bj, V_bj: sums over the cells of bin j; cells wider than two bins, the h3 tail bins, form
bins of their own by their smallest m'), and a loss interval [lo, hi] holding
ln((m' + alpha D) / (m' + beta D)) for every m' of those cells (monotone in m' for fixed D: the
ends at the bin's smallest and largest m'). pld.py splits each aggregate into two outcomes at
lo and hi keeping (p0, p1): a dominating pair of the aggregate (pld.py), with the error second
order in the width. The work is one matrix product of the block pmfs (t x blocks, at most
``MAX_ENTRIES`` entries) per parity of Sa, and there are 2 x t x (bins of m') aggregates.

Mass not enumerated: S outside its window (P0-mass <= max a times its M-mass, the original
pair's outcomes) and D outside each block's window (P0-mass <= (1 + |alpha| / sbar) times the
binomial tail, since |D| <= Sa and m' >= sbar Sa); P1 likewise with beta. h3 is covered by the
two tail bins of neutral_bins.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from shufflesim.protocols.accounting.aggregate_parts import (
    Aggregates,
    _half_binomial_pmf,
    interval_mass,
    is_symmetric,
    neutral_bins,
    small_product,
    window,
)
from shufflesim.protocols.accounting.block_layout import EXACT_ENTRIES, block_ends, layout
from shufflesim.protocols.accounting.pairs import CountModel
from shufflesim.protocols.distributions import binom
from shufflesim.protocols.errors import require

#: Largest number of (block, D) entries (sets the block widths, block_layout.py; as the upper
#: side of blocks.MAX_ENTRIES: optimal-blanket within -3e-7 .. +7.9e-6 relative of 2^20
#: blocks of equal width on 5 points).
MAX_ENTRIES = 3 << 17
#: (block, D) entries computed at once.
CHUNK = 1 << 18


def applies(model: CountModel) -> bool:
    """Symmetric pairs with a neutral group (the others: blocks.py or enumeration.py)."""
    return is_symmetric(model) and model.r > 0.0 and model.w_neutral > 0.0


def _loss(alpha: float, beta: float, d: np.ndarray, m: np.ndarray,
          loss_max: float) -> np.ndarray:
    """ln((m + alpha D) / (m + beta D)) within [-loss_max, loss_max] (every loss of the pair
    lies there): -loss_max where m + alpha D <= 0 and +loss_max where m + beta D <= 0 (an end
    m of a bin at which D is not a possible outcome: the limits of the monotone function)."""
    num, den = m + alpha * d, m + beta * d
    ok = (num > 0) & (den > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.log(np.where(ok, num, 1.0) / np.where(ok, den, 1.0))
    out = np.where(ok, out, np.where(num <= 0, -loss_max, loss_max))
    return np.clip(out, -loss_max, loss_max)


def neutral_block_aggregates(model: CountModel, n: int, *, tail: float, weak_rtol: float,
                             max_entries: int | None = None) -> Aggregates:
    """The aggregates of the dominating pair of the module docstring (upper bounds only);
    ``max_entries``: the budget of (block, D) entries (default MAX_ENTRIES, and then one S
    per block up to block_layout.EXACT_ENTRIES)."""
    require(applies(model), "model", model.label,
            "neutral block pairs need a symmetric pair with a neutral group")
    (a1, a2), (b1, b2) = model.a, model.b
    w, r = model.w[0], model.r
    sbar = 0.25 * (a1 + a2 + b1 + b2)
    alpha, beta = 0.5 * (a1 - a2), 0.5 * (b1 - b2)
    p2 = min(1.0, 2 * w)
    s_lo, s_hi = (int(v[0]) for v in window(np.array([n]), p2, tail))
    tail_s = float(interval_mass(0, s_lo - 1, n, p2) + interval_mass(s_hi + 1, n, n, p2))
    bins = neutral_bins(model, n, n - s_hi, n - s_lo, tail, weak_rtol)
    parts = []
    if s_lo == 0:       # S = 0: D = 0, the same outcome under P0 and P1 (loss 0)
        row = n - bins.n_min
        zero = float(binom.pmf(0, n, p2)) * float(np.sum(r * bins.mean[row])) / n
        if zero > 0:
            parts.append((np.array([zero]), np.array([zero]), np.zeros(1), np.zeros(1),
                          np.zeros(1)))
    S = np.arange(max(s_lo, 1), max(s_hi, 1) + 1, dtype=float)
    rows = (n - S).astype(np.int64) - bins.n_min
    pk, mk = bins.mass[rows], bins.mean[rows]                   # (S, k)
    p_s = binom.pmf(S, n, p2)
    width_t = float(8.5 * np.sqrt(S[-1]) + 40)
    exact = EXACT_ENTRIES if max_entries is None else max_entries
    starts = layout(p_s, width_t, MAX_ENTRIES if max_entries is None else max_entries,
                    exact)                                 # block_layout.py
    ends = block_ends(starts, S.size)
    sa = S[starts]
    owner = np.repeat(np.arange(starts.size), ends - starts + 1)
    W = np.add.reduceat(p_s[:, None] * (sbar * S[:, None] * pk + r * mk) / n, starts, axis=0)
    V = np.add.reduceat(p_s[:, None] * pk * (S / sa[owner])[:, None] / n, starts, axis=0)
    # m' = Sa (sbar + r h3 / S): its smallest and largest value per (block, h3-bin)
    lo_ratio = np.minimum.reduceat(bins.lo[rows] / S[:, None], starts, axis=0)
    hi_ratio = np.maximum.reduceat(bins.hi[rows] / S[:, None], starts, axis=0)
    m_lo = sa[:, None] * (sbar + r * lo_ratio)
    m_hi = sa[:, None] * (sbar + r * hi_ratio)
    h_lo, h_hi = window(sa, 0.5, tail)
    c = np.floor(sa / 2.0)
    t = np.arange(int((h_lo - c).min()), int((h_hi - c).max()) + 1, dtype=float)
    tail_d = float(np.max(interval_mass(0, h_lo - 1, sa, 0.5)
                          + interval_mass(h_hi + 1, sa, sa, 0.5)))
    # cells (block, h3-bin) go to bins of m' of relative width weak_rtol (by their middle)
    live = (W > 0) | (V > 0)
    mid = 0.5 * (m_lo + m_hi)
    ref = float(mid[live].min())
    lstep = math.log1p(weak_rtol)
    j = np.floor(np.log(np.maximum(mid, ref) / ref) / lstep).astype(np.int64)
    # a cell wider than two bins (the h3 tail bins) is merged only with such cells, by the bin
    # of its smallest m' (its mass is at most the tail; it must not widen the others)
    wide = np.log(m_hi / m_lo) > 2 * lstep
    j_wide = np.floor(np.log(np.maximum(m_lo, ref) / ref) / lstep).astype(np.int64)
    top = int(j[live].max()) + 1
    j = np.where(wide, top + j_wide, j)
    used, j_live = np.unique(j[live], return_inverse=True)      # only the bins in use
    j = np.zeros(j.shape, dtype=np.int64)
    j[live] = j_live.ravel()
    bins_m = int(used.size)
    bin_lo = np.full(bins_m, np.inf)
    bin_hi = np.zeros(bins_m)
    np.minimum.at(bin_lo, j[live], m_lo[live])
    np.maximum.at(bin_hi, j[live], m_hi[live])
    filled = np.isfinite(bin_lo)
    bin_lo, bin_hi = np.where(filled, bin_lo, 1.0), np.where(filled, bin_hi, 1.0)
    cols = max(1, CHUNK // t.size)
    for parity in (0, 1):
        sel = np.nonzero((sa % 2) == parity)[0]
        if sel.size == 0:
            continue
        flat = (np.arange(sel.size)[:, None] * bins_m + j[sel]).ravel()
        w_j = np.bincount(flat, weights=np.where(live[sel], W[sel], 0.0).ravel(),
                          minlength=sel.size * bins_m).reshape(sel.size, bins_m)
        v_j = np.bincount(flat, weights=np.where(live[sel], V[sel], 0.0).ravel(),
                          minlength=sel.size * bins_m).reshape(sel.size, bins_m)
        y_w = np.zeros((t.size, bins_m))
        y_v = np.zeros((t.size, bins_m))
        for first in range(0, sel.size, cols):        # chunks of blocks: bounded memory
            part = sel[first:first + cols]
            X = _half_binomial_pmf(sa[part], t)        # (t, blocks)
            y_w += small_product(X, w_j[first:first + cols])
            y_v += small_product(X, v_j[first:first + cols])
        D = (2.0 * t - parity)[:, None]
        p0 = y_w + alpha * D * y_v
        p1 = y_w + beta * D * y_v
        with np.errstate(divide="ignore", invalid="ignore"):
            ell = np.where((p1 > 0) & (p0 > 0), np.log(p0 / np.where(p1 > 0, p1, 1.0)), 0.0)
        l1 = _loss(alpha, beta, D, bin_lo[None, :], model.loss_max)
        l2 = _loss(alpha, beta, D, bin_hi[None, :], model.loss_max)
        keep = ((p0 > 0) | (p1 > 0)) & filled[None, :]
        parts.append((p0[keep], p1[keep], ell[keep], np.minimum(l1, l2)[keep],
                      np.maximum(l1, l2)[keep]))
    arrays = [np.concatenate([p[i] for p in parts]) for i in range(5)]
    p0, p1, ell, lo, hi = arrays
    ell = np.clip(ell, lo, hi)
    factor0 = 1.0 + abs(alpha) / sbar
    factor1 = 1.0 + abs(beta) / sbar
    shrink = float(np.min(sa / S[ends]))
    return Aggregates(p0, p1, ell, lo, hi, max(model.a) * tail_s + factor0 * tail_d,
                      max(model.b) * tail_s + factor1 * tail_d, int(sa.size * t.size),
                      min(1.0, tail_s + tail_d), shrink)


@functools.lru_cache(maxsize=2)
def cached_neutral_block_aggregates(model: CountModel, n: int, tail: float,
                                    weak_rtol: float) -> Aggregates:
    """:func:`neutral_block_aggregates`, cached (a pure function of its arguments; arrays
    read-only)."""
    agg = neutral_block_aggregates(model, int(n), tail=float(tail), weak_rtol=float(weak_rtol))
    for array in (agg.p0, agg.p1, agg.ell, agg.lo, agg.hi):
        array.flags.writeable = False
    return agg
