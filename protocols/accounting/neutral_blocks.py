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
(relative (Sb - Sa) / (2 Sa), about 1e-4 at n = 1e6 with the default budget); single-S blocks
are exact.

Step 2, aggregates (second order, as enumeration.py): outcomes of that pair with the same D and
with (S, h3) in one cell (an S-bin of blocks x an h3-bin of enumeration.neutral_bins) are
merged into an aggregate with exact masses

    p0 = sum_b Bin_Sa_b(D) (W_bk + alpha D V_bk),   p1 = sum_b Bin_Sa_b(D) (W_bk + beta D V_bk),
    W_bk = sum_{S in b} P(S) (sbar S P_k(S) + r E[h3; k | S]) / n = sum pi,
    V_bk = sum_{S in b} P(S) P_k(S) S / (n Sa_b)              = sum pi / m',

and a loss interval [lo, hi] holding ln((m' + alpha D) / (m' + beta D)) for every m' of the cell
(monotone in m' for fixed D: the ends at the cell's smallest and largest m'). pld.py splits each
aggregate into two outcomes at lo and hi keeping (p0, p1): a dominating pair of the aggregate
(pld.py), with the error second order in the width. The work is one matrix product of the
block pmfs (t x blocks, at most ``MAX_ENTRIES`` entries) per S-bin and parity.

Mass not enumerated: S outside its window (P0-mass <= max a times its M-mass, the original
pair's outcomes) and D outside each block's window (P0-mass <= (1 + |alpha| / sbar) times the
binomial tail, since |D| <= Sa and m' >= sbar Sa); P1 likewise with beta. h3 is covered by the
two tail bins of neutral_bins.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from shufflesim.protocols.accounting.enumeration import (
    Aggregates,
    _half_binomial_log_pmf,
    _typical_b,
    interval_mass,
    is_symmetric,
    neutral_bins,
    window,
)
from shufflesim.protocols.accounting.pairs import CountModel
from shufflesim.protocols.distributions import binom
from shufflesim.protocols.errors import require

#: Largest number of (block, D) entries (sets the block width).
MAX_ENTRIES = 1 << 20


def applies(model: CountModel) -> bool:
    """Symmetric pairs with a neutral group (the others: blocks.py or enumeration.py)."""
    return is_symmetric(model) and model.r > 0.0 and model.w_neutral > 0.0


def _loss(g: float, beta: float, d: np.ndarray, m: np.ndarray, loss_max: float) -> np.ndarray:
    """ln((m + alpha D) / (m + beta D)) = ln(1 + g D / (m + beta D)), g = alpha - beta, within
    [-loss_max, loss_max] (every loss of the pair lies there)."""
    den = m + beta * d
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(den > 0, np.log1p(g * d / np.where(den > 0, den, 1.0)),
                       np.sign(g * d) * loss_max)
    return np.clip(out, -loss_max, loss_max)


def neutral_block_aggregates(model: CountModel, n: int, *, tail: float, weak_rtol: float,
                             max_entries: int = MAX_ENTRIES) -> Aggregates:
    """The aggregates of the dominating pair of the module docstring (upper bounds only)."""
    require(applies(model), "model", model.label,
            "neutral block pairs need a symmetric pair with a neutral group")
    (a1, a2), (b1, b2) = model.a, model.b
    w, r = model.w[0], model.r
    sbar = 0.25 * (a1 + a2 + b1 + b2)
    alpha, beta = 0.5 * (a1 - a2), 0.5 * (b1 - b2)
    g = alpha - beta
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
    blocks = max(1, min(S.size, int(max_entries // width_t)))
    step = int(math.ceil(S.size / blocks))
    starts = np.arange(0, S.size, step)
    sa = S[starts]
    owner = np.arange(S.size) // step
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
    s_step = max(1, int(math.floor(weak_rtol * _typical_b(model, n) / max(sbar, 1e-300))))
    group = ((sa - sa[0]) // s_step).astype(np.int64)
    for gid in np.unique(group):
        in_group = np.nonzero(group == gid)[0]
        for parity in (0, 1):
            sel = in_group[(sa[in_group] % 2) == parity]
            if sel.size == 0:
                continue
            X = np.exp(_half_binomial_log_pmf(sa[sel], t))          # (t, blocks)
            y_w, y_v = X @ W[sel], X @ V[sel]                        # (t, k)
            D = (2.0 * t - parity)[:, None]
            p0 = y_w + alpha * D * y_v
            p1 = y_w + beta * D * y_v
            with np.errstate(divide="ignore", invalid="ignore"):
                ell = np.where((p1 > 0) & (p0 > 0), np.log(p0 / np.where(p1 > 0, p1, 1.0)),
                               0.0)
            lo_m = m_lo[sel].min(axis=0)[None, :]
            hi_m = m_hi[sel].max(axis=0)[None, :]
            l1 = _loss(g, beta, D, lo_m, model.loss_max)
            l2 = _loss(g, beta, D, hi_m, model.loss_max)
            l1, l2 = np.broadcast_arrays(l1, l2)
            keep = (p0 > 0) | (p1 > 0)
            parts.append((p0[keep], p1[keep], ell[keep], np.minimum(l1, l2)[keep],
                          np.maximum(l1, l2)[keep]))
    arrays = [np.concatenate([p[i] for p in parts]) for i in range(5)]
    p0, p1, ell, lo, hi = arrays
    ell = np.clip(ell, lo, hi)
    factor0 = 1.0 + abs(alpha) / sbar
    factor1 = 1.0 + abs(beta) / sbar
    shrink = float(np.min(sa / S[np.minimum(starts + step, S.size) - 1]))
    return Aggregates(p0, p1, ell, lo, hi, max(model.a) * tail_s + factor0 * tail_d,
                      max(model.b) * tail_s + factor1 * tail_d, int(sa.size * t.size),
                      min(1.0, tail_s + tail_d), shrink)


@functools.lru_cache(maxsize=8)
def cached_neutral_block_aggregates(model: CountModel, n: int, tail: float,
                                    weak_rtol: float) -> Aggregates:
    """:func:`neutral_block_aggregates`, cached (a pure function of its arguments; arrays
    read-only)."""
    agg = neutral_block_aggregates(model, int(n), tail=float(tail), weak_rtol=float(weak_rtol))
    for array in (agg.p0, agg.p1, agg.ell, agg.lo, agg.hi):
        array.flags.writeable = False
    return agg
