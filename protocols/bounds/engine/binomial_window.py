"""Windows of binomial laws and their pmfs, for the exact band sums of
protocols.bounds.engine.exact_band and engine/zero_mixture.py (000 Thm 12-14's conditioning
sums; issue 32): per-row windows [lo, lo + width) of Bin(size, p) leaving at most TAIL of mass
outside on each side (Bernstein's width, engine/bernstein_width.py), the pmf on them with a
relative error bound, and a bound on the mass outside."""

from __future__ import annotations

import math

import numpy as np

from shufflesim.protocols.bounds.engine.bernstein_width import TAIL, _half_width
from shufflesim.protocols.bounds.engine.common import REL_SPECIAL, TINY, U
from shufflesim.protocols.bounds.engine.log_table import LogTable
from shufflesim.protocols.distributions import binom

__all__ = ["TAIL", "window_pmf"]


def _upper_span(size: np.ndarray, p: float, tail: float = TAIL) -> np.ndarray:
    """s with Chernoff's bound P[Bin(size, p) >= size p + s] <= exp(-size KL(p + s/size || p))
    <= ``tail`` (Hoeffding-Chernoff, the relative-entropy form), or size (1 - p) where even
    P[all] = p^size exceeds it. Newton steps on the convex increasing size KL(a || p) - ln(1
    / TAIL) from Bernstein's span (:func:`_half_width`, whose point has KL >= the target), so
    every iterate stays at or above the root. It is 1.05-1.5x narrower than Bernstein's (most at
    small sd and p far from 1/2); it only sizes the windows: their outside mass is computed."""
    size = np.asarray(size, dtype=float)
    target = math.log(1.0 / tail)
    room = size * (1.0 - p)
    span = np.minimum(_half_width(np.sqrt(size * p * (1.0 - p)), tail), room)
    whole = size * -math.log(p) <= target        # P[Bin = size] = p^size >= TAIL
    live = (size > 0) & ~whole
    m = np.where(live, size, 1.0)
    a = np.where(live, p + span / m, p)
    a = np.minimum(a, 1.0 - 1e-15)
    a = np.where(live, np.maximum(a, p), p)
    odds = math.log((1.0 - p) / p)
    with np.errstate(divide="ignore", invalid="ignore"):
        for _ in range(12):
            kl = a * np.log(a / p) + (1.0 - a) * np.log((1.0 - a) / (1.0 - p))
            slope = np.log(a / (1.0 - a)) + odds
            step = (m * kl - target) / (m * slope)
            moved = np.where(live & (step > 0) & (slope > 0), a - step, a)
            if np.array_equal(moved, a):     # a fixed point: every later step is this one
                break
            a = moved
    out = np.where(live, (a - p) * m, room)
    return np.minimum(np.where(np.isfinite(out), out, room), room)


def _window(size: np.ndarray, p: float) -> tuple[np.ndarray, int]:
    """Per-row windows [lo, lo + width) of Bin(size, p), clipped below at 0 (entries beyond
    ``size`` carry no mass), each side at Chernoff's TAIL span (:func:`_upper_span`; the lower
    side is the upper side of size - Bin(size, 1 - p))."""
    size = np.asarray(size, dtype=float)
    mean = size * p
    lo = np.clip(np.floor(mean - _upper_span(size, 1.0 - p) - 1.0), 0.0, None)
    hi = np.minimum(np.ceil(mean + _upper_span(size, p) + 1.0), size)
    width = int(np.max(hi - lo, initial=0.0)) + 1
    return lo, width


#: rows of a table computed at a time: the temporaries stay small (in cache, and reused by the
#: allocator instead of fresh pages: a first build at n = 1e4 faulted ~3400 pages)
CHUNK_ROWS = 32


def window_pmf(m: np.ndarray, p: float, lo: np.ndarray, width: int):
    """P[Bin(m, p) = lo + i], i < width (rows: entries of m), 0 beyond m; and the relative
    error bound of each entry *besides* the row's common factor: every row is anchored at its
    mode with scipy (relative error REL_SPECIAL, the same factor for the whole row), the rest by
    cumulative log ratios ln P(k+1)/P(k) = ln((m - k) / (k + 1)) + ln(p / (1 - p)) (-inf from
    k = m on, so the pmf is 0 beyond the support). Computed CHUNK_ROWS rows at a time (the same
    operations on each row, hence the same numbers)."""
    m = np.asarray(m, dtype=float)
    logs = LogTable(m, lo, width)
    log_odds = math.log(p) - math.log1p(-p)
    mode = np.clip(np.floor((m + 1.0) * p), lo, np.minimum(lo + width - 1, m))
    idx = (mode - lo).astype(np.int64)
    last = np.minimum(m - lo, width - 1).astype(np.int64)
    anchor = binom.pmf(mode, m, p)
    pmf = np.empty((m.size, width))
    biggest = 0.0
    for start in range(0, m.size, CHUNK_ROWS):
        rows = slice(start, start + CHUNK_ROWS)
        cum = pmf[rows]
        cum[:, 0] = 0.0
        ratio = logs.ratios(m[rows], lo[rows])
        ratio += log_odds
        np.cumsum(ratio, axis=1, out=cum[:, 1:])
        local = np.arange(cum.shape[0])
        at_mode = cum[local, idx[rows]]
        at_last = cum[local, last[rows]]
        biggest = max(biggest, float(np.max(np.maximum(np.abs(at_mode), np.abs(at_last)))))
        cum -= at_mode[:, None]
        with np.errstate(under="ignore"):
            np.exp(cum, out=cum)
        cum *= anchor[rows, None]
    # Each computed log ratio is within 4u (|ln(m - k)| + |ln(k + 1)| + |ln odds| + 1) of its
    # value; a partial sum of i of them within i times that plus i u |partial sum|; exp adds 2u.
    # The log pmf is concave in k, so its partial sums are largest in size at the mode or at
    # the last entry of the support (+1: slack for the rounding of that shape).
    biggest += 1.0
    step_err = 4 * U * (2 * math.log(float(m.max(initial=0.0)) + 2.0) + abs(log_odds) + 1.0)
    shape_err = width * (step_err + U * biggest) * 2.0 + 4 * U
    return pmf, shape_err


def _outside(size: np.ndarray, p: float, lo: np.ndarray, width: int) -> np.ndarray:
    """Upper bound on P[Bin(size, p) outside [lo, lo + width - 1]] per row."""
    hi = lo + width - 1
    below = np.where(lo > 0, binom.cdf(lo - 1, size, p), 0.0)
    above = np.where(hi < size, binom.sf(hi, size, p), 0.0)
    return (below + above) * (1 + REL_SPECIAL) + TINY
