"""Dominating (or dominated) pairs of a symmetric count pair in O(blocks x D) work (issue 32).

For a symmetric pair (enumeration.is_symmetric: two informative groups of equal weight w with
a1 - b1 = -(a2 - b2) = g, hence a1 + a2 = b1 + b2 = 2 sbar) write S = h1 + h2, D = h1 - h2 and
m = sbar S + r h3. Under the reference multinomial M, h1 | (S, h3) ~ Bin(S, 1/2), and

    A = m + alpha D,  B = m + beta D,   alpha = (a1 - a2) / 2,  beta = (b1 - b2) / 2.

Summing over h3 given S (h3 | S ~ Bin(n - S, rho), rho = w_neutral / (w_neutral + w_null)):

    P0(S, D) = P(S) Bin_S(D) (mu(S) + alpha D) / n,   mu(S) = E[m | S] = sbar S + r rho (n - S),

and P1 likewise with beta: the pair is exactly the pi-mixture (pi(S) = P(S) mu(S) / n, the same
under P0 and P1) of the pairs

    pair(S, mu):  P0(D) = Bin_S(D) (mu + alpha D) / mu,  P1(D) = Bin_S(D) (mu + beta D) / mu,

Bin_S the law of 2 Bin(S, 1/2) - S (revealing S to the adversary gives a dominating pair, as
the former enumeration did). Two post-processings order these pairs:

* m' >= m: pair(S, m') = (m / m') pair(S, m) + (1 - m / m') (Bin_S, Bin_S), a coin flip
  between the pair and an output that does not depend on the data;
* adding an independent fair +-1 to D maps pair(S, m) to pair(S + 1, m (S + 1) / S)
  (E[step | D'] = D' / (S + 1) under Bin_{S+1}).

The pair that reveals h3 is a mixture of pair(S, m(S, h3)) with h3 revealed, and it is *not*
dominated by the h3-marginal (a mixture of PLDs is not the PLD of the mixed pair): dropping h3
is a post-processing of the round's pair. So the marginal serves lower bounds always, and
upper bounds only when there is no neutral group (r = 0 or w_neutral = 0: h3 carries no
information, e.g. the clone pair); :func:`block_pairs_apply` says which.

Hence pair(S, m) is a post-processing of pair(Sa, ma) whenever S >= Sa and m / S >= ma / Sa.
mu(S) / S decreases in S, so for a block of S values [Sa, Sb] every pair(S, mu(S)) in it is a
post-processing of pair(Sa, Sa mu(Sb) / Sb) (upper bounds: a dominating pair, for every
divergence with data processing, hence under composition: Zhu-Dong-Wang 2022 Thm 10), and
pair(Sb, Sb mu(Sa) / Sa) is a post-processing of each of them (lower bounds: a dominated pair).
Each block costs one binomial pmf over D: the work is O(blocks x D), with at most
``MAX_ENTRIES`` entries, instead of O(S x D x h3 bins) = O(n). Single-S blocks are exact.
Tightness: a block changes the loss scale by about its relative width in S (~1e-5 at n = 1e6).

The outcomes (block, D) are returned as enumeration.Aggregates with lo = hi = ell (the exact
losses of the chosen pair) and their pi-weighted masses, so pld.py discretises them as before.
Mass not enumerated: S outside its window (P0-mass <= max a times the M-mass) and D outside
each block pair's window (P0-mass <= (1 + |alpha| / sbar) times the binomial tail, since
|D| <= S and mu >= sbar S; P1 likewise with beta).
"""

from __future__ import annotations

import functools

import numpy as np

from shufflesim.protocols.accounting.aggregate_parts import (
    Aggregates,
    _half_binomial_pmf,
    interval_mass,
    is_symmetric,
    window,
)
from shufflesim.protocols.accounting.block_layout import EXACT_ENTRIES, block_ends, layout
from shufflesim.protocols.accounting.pairs import CountModel
from shufflesim.protocols.distributions import binom
from shufflesim.protocols.errors import require


def block_pairs_apply(model: CountModel, side: str) -> bool:
    """True when :func:`block_aggregates` gives a valid pair for ``side`` (module docstring):
    symmetric pairs, for upper bounds only without a neutral group."""
    if not is_symmetric(model):
        return False
    return side == "lower" or model.r == 0.0 or model.w_neutral == 0.0


#: Largest number of (block, D) entries per side (sets the block widths, block_layout.py).
#: Upper: with blocks of width ~ pi^(-1/2) 3 x 2^17 entries hold the values of 2^20 blocks
#: of equal width (issue 32: fmt21-clone within -1.2e-6 .. +1.6e-6 relative on 5 points of
#: 3-RR and 10-RR, n 1e4-1e6, T 1-1000) at 37 % of the work. Lower: 2^20 (the lower bound
#: keeps the budget and gains the layout's tightness).
MAX_ENTRIES = {"upper": 3 << 17, "lower": 1 << 19}
#: (block, D) entries computed at once (2^15: the chunk's arrays stay in the cache; 2^18 took
#: 1.3-1.5x as long at n = 1e5, issue 32).
CHUNK = 1 << 15


def block_aggregates(model: CountModel, n: int, side: str, *, tail: float,
                     max_entries: int | None = None) -> Aggregates:
    """Outcomes of the dominating (``side`` "upper") or dominated ("lower") block pairs of a
    symmetric ``model`` with n users (module docstring); ``max_entries``: the budget of
    (block, D) entries (default ``MAX_ENTRIES[side]``, and then one S per block up to
    block_layout.EXACT_ENTRIES)."""
    require(side in ("upper", "lower"), "side", side, "must be 'upper' or 'lower'")
    budget = MAX_ENTRIES[side] if max_entries is None else max_entries
    exact = EXACT_ENTRIES if max_entries is None else budget
    require(block_pairs_apply(model, side), "model", model.label,
            f"block pairs do not give a valid {side} pair for it")
    (a1, a2), (b1, b2) = model.a, model.b
    w, r = model.w[0], model.r
    sbar = 0.25 * (a1 + a2 + b1 + b2)
    alpha, beta = 0.5 * (a1 - a2), 0.5 * (b1 - b2)
    wsum = model.w_neutral + model.w_null
    rho = 0.0 if model.w_neutral <= 0 or wsum <= 0 else min(1.0, model.w_neutral / wsum)
    s_lo, s_hi = (int(v[0]) for v in window(np.array([n]), min(1.0, 2 * w), tail))
    tail_s = float(interval_mass(0, s_lo - 1, n, 2 * w) + interval_mass(s_hi + 1, n, n, 2 * w))
    S_all = np.arange(max(s_lo, 1), max(s_hi, 1) + 1, dtype=float)
    mu = sbar * S_all + r * rho * (n - S_all)
    p_s = binom.pmf(S_all, n, min(1.0, 2 * w))
    pi = p_s * mu / n
    # S = 0 (in the window when s_lo = 0): D = 0, the same outcome under P0 and P1 (loss 0)
    zero = float(binom.pmf(0, n, min(1.0, 2 * w)) * r * rho * n / n) if s_lo == 0 else 0.0
    width_t = float(8.5 * np.sqrt(max(s_hi, 1)) + 40)   # t per block (+-8 sd of Bin(S, 1/2))
    starts = layout(pi, width_t, budget, exact)          # block_layout.py
    ends = block_ends(starts, S_all.size)
    weight = np.add.reduceat(pi, starts)
    first, last = S_all[starts], S_all[ends]
    first_s = first.copy()
    mu_first, mu_last = mu[starts], mu[ends]
    if side == "upper":
        s_pair, m = first, first * mu_last / last
    else:
        s_pair, m = last, last * mu_first / first
    keep = (weight > 0) & (m > 0)
    s_pair, m, weight = s_pair[keep], m[keep], weight[keep]
    h_lo, h_hi = window(s_pair, 0.5, tail)
    c = np.floor(s_pair / 2.0)
    t = np.arange(int((h_lo - c).min()), int((h_hi - c).max()) + 1, dtype=float)
    tail_d = float(np.max(interval_mass(0, h_lo - 1, s_pair, 0.5)
                          + interval_mass(h_hi + 1, s_pair, s_pair, 0.5)))
    cols = max(1, CHUNK // t.size)
    # the outcomes kept are written straight into arrays of the largest possible size (no
    # list of parts to concatenate: issue 32), in the order the parts would have had
    out = [np.empty(t.size * s_pair.size + 1) for _ in range(3)]
    size = 0
    for first in range(0, s_pair.size, cols):        # chunks of blocks: bounded memory
        sl = slice(first, first + cols)
        pmf = _half_binomial_pmf(s_pair[sl], t)           # (t, blocks)
        entries = pmf.size
        # p0, p1 and ell are computed in place in the output arrays, by the formulas
        #   p0 = pmf w (m + alpha D) / m,  p1 = pmf w (m + beta D) / m,
        #   ell = log1p((alpha - beta) D / (m + beta D)) (0 where m + beta D <= 0),
        # operation for operation (bit for bit), and the outcomes not kept are squeezed out
        p0, p1, ell = (target[size:size + entries].reshape(pmf.shape) for target in out)
        kept = pmf > 0
        D = 2.0 * (c[sl][None, :] + t[:, None]) - s_pair[sl][None, :]
        mm = m[sl][None, :]
        base = np.multiply(pmf, weight[sl][None, :], out=pmf)
        np.multiply(D, alpha, out=p0)
        np.add(mm, p0, out=p0)
        np.multiply(base, p0, out=p0)
        np.divide(p0, mm, out=p0)
        den = np.multiply(D, beta)
        np.add(mm, den, out=den)
        np.multiply(base, den, out=p1)
        np.divide(p1, mm, out=p1)
        flat = ~(den > 0)
        with np.errstate(divide="ignore", invalid="ignore"):
            np.copyto(den, 1.0, where=flat)
            np.multiply(D, alpha - beta, out=ell)
            np.divide(ell, den, out=ell)
            np.log1p(ell, out=ell)
        np.copyto(ell, 0.0, where=flat)
        kept &= (p0 > 0) | (p1 > 0)
        nz = kept.ravel()
        count = int(np.count_nonzero(nz))
        if count < entries:
            for target in out:
                target[size:size + count] = target[size:size + entries][nz]
        size += count
    if zero > 0:
        for target, value in zip(out, (zero, zero, 0.0), strict=True):
            target[size] = value
        size += 1
    p0, p1, ell = (target[:size] for target in out)
    factor0 = 1.0 + abs(alpha) / sbar
    factor1 = 1.0 + abs(beta) / sbar
    shrink = float(np.min(first_s / last)) if side == "upper" else 1.0
    return Aggregates(p0, p1, ell, ell, ell,        # lo is hi: exact losses (pld.py)
                      max(model.a) * tail_s + factor0 * tail_d,
                      max(model.b) * tail_s + factor1 * tail_d,
                      int(p0.size), min(1.0, tail_s + tail_d), shrink)



@functools.lru_cache(maxsize=4)
def cached_block_aggregates(model: CountModel, n: int, side: str, tail: float,
                            max_entries: int | None = None) -> Aggregates:
    """:func:`block_aggregates`, cached (a pure function of its arguments; arrays read-only)."""
    agg = block_aggregates(model, int(n), side, tail=float(tail),
                           max_entries=None if max_entries is None else int(max_entries))
    for array in (agg.p0, agg.p1, agg.ell, agg.lo, agg.hi):
        array.flags.writeable = False
    return agg
