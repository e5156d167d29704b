"""Dominated block pairs of any pair with two informative groups, for lower bounds, in
O(blocks x window) work (issue 32): the 000 Thm 14 pairs of the triples (x0, x1, x1) and
(x0, x1, x0), whose groups have unequal weights (blocks.py needs equal ones).

Notation of pairs.py: groups 1, 2 with weights w1, w2 and ratios (a1, b1), (a2, b2), neutral
ratio r with weight w_neutral. With S = h1 + h2, q = w1 / (w1 + w2) and U = h1 - q S, under the
reference multinomial h1 | (S, h3) ~ Bin(S, q) and

    A = m + alpha U,  B = m + beta U,  m = abar S + r h3,  alpha = a1 - a2,  beta = b1 - b2,

abar = q a1 + (1 - q) a2 = q b1 + (1 - q) b2 (both P0 and P1 have total mass 1). Forgetting h3
(a post-processing) leaves the pi-mixture (pi(S) = P(S) mu(S) / n, mu(S) = abar S +
r rho (n - S), rho = w_neutral / (w_neutral + w_null)) of

    pair(S, m):  P0(U) = Bin_{S,q}(U) (m + alpha U) / m,   P1(U) = Bin_{S,q}(U) (m + beta U) / m.

Two post-processings order these pairs (as in blocks.py, for any q):

* m' >= m: pair(S, m') = (m / m') pair(S, m) + (1 - m / m') (Bin, Bin), a coin flip towards an
  output that does not depend on the data;
* adding an independent Bernoulli(q) to h1 maps pair(S, m) to pair(S + 1, m (S + 1) / S): given
  h1' = h1 + step, E[h1 | h1'] = h1' S / (S + 1) (exchangeability), so E[U | h1'] =
  U' S / (S + 1).

mu(S) / S decreases in S, so for a block [Sa, Sb] pair(Sb, Sb mu(Sa) / Sa) is a post-processing
of every pair(S, mu(S)) in it: the mixture of these block pairs (revealing the block) is a
post-processing of the round's pair, a dominated pair, and its optimistic PLD (pld.py) a lower
bound, also under composition (the T-round output is the product of the rounds' outputs).
Single-S blocks are exact; a block lowers the loss scale by about half its relative width.
Losses are exact (lo = hi = ell); masses not enumerated are dropped (lower bounds).
"""

from __future__ import annotations

import functools
import math

import numpy as np

from shufflesim.protocols.accounting.aggregate_parts import (
    Aggregates,
    binomial_pmf_around,
    interval_mass,
    window,
)
from shufflesim.protocols.accounting.pairs import CountModel
from shufflesim.protocols.distributions import binom
from shufflesim.protocols.errors import require

#: Largest number of (block, h1) entries (sets the block width).
MAX_ENTRIES = 1 << 20
#: (block, h1) entries computed at once.
CHUNK = 1 << 18


def applies(model: CountModel) -> bool:
    """Pairs with two informative groups (the lower side; symmetric ones take blocks.py)."""
    return len(model.w) == 2 and min(model.w) > 0


def lower_block_aggregates(model: CountModel, n: int, *, tail: float,
                           max_entries: int = MAX_ENTRIES) -> Aggregates:
    """Outcomes of the dominated block pairs of ``model`` with n users (module docstring)."""
    require(applies(model), "model", model.label, "needs two informative groups")
    (a1, a2), (b1, b2), (w1, w2) = model.a, model.b, model.w
    ws = min(1.0, w1 + w2)
    q = w1 / (w1 + w2)
    abar = q * a1 + (1.0 - q) * a2
    alpha, beta = a1 - a2, b1 - b2
    wsum = model.w_neutral + model.w_null
    rho = 0.0 if model.w_neutral <= 0 or wsum <= 0 else min(1.0, model.w_neutral / wsum)
    r = model.r
    s_lo, s_hi = (int(v[0]) for v in window(np.array([n]), ws, tail))
    S_all = np.arange(max(s_lo, 1), max(s_hi, 1) + 1, dtype=float)
    mu = abar * S_all + r * rho * (n - S_all)
    pi = binom.pmf(S_all, n, ws) * mu / n
    zero = float(binom.pmf(0, n, ws)) * r * rho if s_lo == 0 else 0.0   # S = 0: loss 0
    width_t = float(17.0 * math.sqrt(max(s_hi, 1) * q * (1.0 - q)) + 40)
    blocks = max(1, min(S_all.size, int(max_entries // width_t)))
    step = int(math.ceil(S_all.size / blocks))
    starts = np.arange(0, S_all.size, step)
    ends = np.minimum(starts + step, S_all.size) - 1
    weight = np.add.reduceat(pi, starts)
    s_pair = S_all[ends]
    m = s_pair * mu[starts] / S_all[starts]
    keep = (weight > 0) & (m > 0)
    s_pair, m, weight = s_pair[keep], m[keep], weight[keep]
    h_lo, h_hi = window(s_pair, q, tail)
    c = np.floor(q * s_pair)
    t = np.arange(int((h_lo - c).min()), int((h_hi - c).max()) + 1, dtype=float)
    cols = max(1, CHUNK // t.size)
    parts = []
    for first in range(0, s_pair.size, cols):        # chunks of blocks: bounded memory
        sl = slice(first, first + cols)
        h1 = c[sl][None, :] + t[:, None]
        pmf = binomial_pmf_around(s_pair[sl], q, c[sl], t)
        u = h1 - q * s_pair[sl][None, :]
        mm = m[sl][None, :]
        base = pmf * weight[sl][None, :]
        num, den = mm + alpha * u, mm + beta * u
        p0 = base * num / mm
        p1 = base * den / mm
        nz = (pmf > 0) & (num > 0) & (den > 0)
        parts.append((p0[nz], p1[nz], np.log(num[nz] / den[nz])))
    p0, p1, ell = (np.concatenate([part[i] for part in parts]) for i in range(3))
    if zero > 0:
        p0, p1, ell = np.append(p0, zero), np.append(p1, zero), np.append(ell, 0.0)
    tail_s = float(interval_mass(0, s_lo - 1, n, ws) + interval_mass(s_hi + 1, n, n, ws))
    return Aggregates(p0, p1, ell, ell, ell, max(model.a_max, 1.0) * tail_s,
                      max(model.a_max, 1.0) * tail_s, int(p0.size), min(1.0, tail_s))


@functools.lru_cache(maxsize=4)
def cached_lower_block_aggregates(model: CountModel, n: int, tail: float,
                                  max_entries: int = MAX_ENTRIES) -> Aggregates:
    """:func:`lower_block_aggregates`, cached (a pure function of its arguments; arrays
    read-only)."""
    agg = lower_block_aggregates(model, int(n), tail=float(tail), max_entries=int(max_entries))
    for array in (agg.p0, agg.p1, agg.ell):
        array.flags.writeable = False
    return agg
