"""Binomial tails along a path of consecutive rows, from a few anchors and the pmfs
(issue 32: exact-lower at n = 1e9 in interactive time).

The conditioning method (engine/conditioning.py, 000 Thm 12-14) needs, for every row t of the
window of T (2.3e5 rows at n = 1e9 for 10-RR), the tail P[Bin(t, rho) >= k(t)] and the pmf
P[Bin(t - 1, rho) = k(t) - 1], where k(t) = first count past the leaf's kink moves by at most
one per row (the kink is linear in t with slope < 1). Boost's incomplete beta costs ~3 us per
tail at t ~ 1e8, its pmf ~0.09 us: the tails were ~80 % of an evaluation at n = 1e9.

Here the tails are computed by Boost only at every :data:`STRIDE`-th row (the anchors); the
rows in between follow from exact identities between neighbouring binomial laws
(A = P[Bin(t, rho) = k - 1], from the pmf of Bin(t - 1, rho) by one ratio):

* P[Bin(t + 1, rho) >= k]     = P[Bin(t, rho) >= k] + rho A;
* P[Bin(t + 1, rho) >= k + 1] = P[Bin(t, rho) >= k] - rho A (t - k + 1) / k
  (= ... - (1 - rho) P[Bin(t, rho) = k]);
* P[Bin(t + 1, rho) >= k - 1] = P[Bin(t, rho) >= k] + rho A + A (t + 1)(1 - rho) / (t - k + 2)
  (the last term is P[Bin(t + 1, rho) = k - 1]);

so a row's tail is its anchor plus a cumulative sum of at most STRIDE - 1 increments.

Error (returned per entry, absolute): the anchor and the pmfs carry common.REL_SPECIAL relative
(Boost), each increment a further 16 u (the ratio's few roundings and that of 1 - rho), and
recursive summation of j terms errs by at most gamma_j = j u / (1 - j u) times the sum of their
absolute values S (Higham, Accuracy and Stability of Numerical Algorithms, Sec. 4.2). Hence
|computed - exact| <= (REL_SPECIAL (1 + 1e-3) + (2 STRIDE + 32) u) S, with S the computed
cumulative sum of |terms| (itself within STRIDE u of the exact one, inside the margin), plus
an absolute FLOOR per term for values below the normal range. Within
a block the tail moves by less than a few per cent at these sizes (STRIDE rows shift the
standardised kink by ~STRIDE / sd(B)), so S is about the tail itself and the bound is about
REL_SPECIAL relative, as for Boost's own tails; the few entries whose bound exceeds
LOOSE * REL_SPECIAL (a tail falling steeply within its block, where the subtractions cancel)
are computed directly.
"""

from __future__ import annotations

import numpy as np

#: rows per anchor (the anchors' Boost tails cost rows / STRIDE; the increments' error grows
#: like STRIDE u)
STRIDE = 64
#: entries whose error bound exceeds LOOSE * REL_SPECIAL relative are computed directly
LOOSE = 1.1
#: fewest rows for which the path is used (below it the direct tails are cheap)
MIN_ROWS = 4096

U = float(np.finfo(float).eps) / 2
#: absolute error per term where values are subnormal or underflow (Boost's relative accuracy
#: holds for normal floats; below 2.3e-308 the absolute error is at most that)
FLOOR = 1e-300


def path_applies(k: np.ndarray, t: np.ndarray, rho: float) -> bool:
    """Whether :func:`tails_along_rows` can be used: at least MIN_ROWS rows along axis 0, t
    consecutive integers along it, 1 <= k <= t and k moving by at most one per row."""
    if k.ndim == 0 or k.shape[0] < MIN_ROWS or not 0.0 < rho < 1.0:
        return False
    if not np.all(t[1:] - t[:-1] == 1.0):
        return False
    if not (np.all(k >= 1.0) and np.all(k <= t) and np.all(k == np.floor(k))):
        return False
    return bool(np.all(np.abs(k[1:] - k[:-1]) <= 1.0))


def tails_along_rows(k: np.ndarray, t: np.ndarray, rho: float, pk: np.ndarray, anchor_tail,
                     rel_special: float):
    """P[Bin(t, rho) >= k] along axis 0 (each column its own path) and an absolute error bound
    per entry. ``pk`` = P[Bin(t - 1, rho) = k - 1] (Boost, REL_SPECIAL relative);
    ``anchor_tail(k, t, rho)`` computes the tails directly (at the anchors), to
    ``rel_special`` relative like the pmfs. The caller checks :func:`path_applies` first."""
    rows = k.shape[0]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        a = pk * t * (1.0 - rho) / (t - k + 1.0)                  # P[Bin(t, rho) = k - 1]
        jump = k[1:] - k[:-1]
        tt, kk, aa = t[:-1], k[:-1], a[:-1]
        stay = rho * aa
        step = np.where(jump > 0, -stay * (tt - kk + 1.0) / kk,
                        np.where(jump < 0, stay + aa * (tt + 1.0) * (1.0 - rho) / (tt - kk + 2.0),
                                 stay))
    anchors = np.arange(0, rows, STRIDE)
    terms = np.empty_like(pk)
    terms[1:] = step
    terms[anchors] = anchor_tail(k[anchors], t[anchors], rho)
    blocks = -(-rows // STRIDE)
    pad = blocks * STRIDE - rows
    shape = (blocks, STRIDE) + k.shape[1:]
    if pad:
        widths = [(0, pad)] + [(0, 0)] * (k.ndim - 1)
        terms = np.pad(terms, widths)
    terms = terms.reshape(shape)
    tail = np.cumsum(terms, axis=1).reshape((-1,) + k.shape[1:])[:rows]
    mass = np.cumsum(np.abs(terms), axis=1).reshape((-1,) + k.shape[1:])[:rows]
    err = (rel_special * (1 + 1e-3) + (2 * STRIDE + 32) * U) * mass + STRIDE * FLOOR
    tail = np.clip(tail, 0.0, 1.0)
    # where the tail fell steeply within its block (k running away from the mean), the
    # subtractions cost relative precision: those entries are computed directly
    loose = err > LOOSE * rel_special * tail + STRIDE * FLOOR
    if loose.any():
        tail[loose] = anchor_tail(k[loose], t[loose], rho)
        err[loose] = rel_special * tail[loose]
    return tail, err

