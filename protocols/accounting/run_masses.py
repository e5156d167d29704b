"""Binomial interval masses of consecutive numbers of trials, by a stable recurrence in the
number of trials (issue 32: the neutral bins of the k-RR blanket pair's round PLD).

enumeration.neutral_bins needs P[lo <= Bin(N, p) <= hi] for every row N = N_min, N_min + 1, ...
and a dozen intervals per row. Its windows change only every enumeration.WINDOW_EVERY rows, so
an interval end k is mostly the same in several consecutive rows. Adding one trial gives

    F_{N+1}(k) = F_N(k) - p f_N(k),      S_{N+1}(k) = S_N(k) + p f_N(k)

(F the cdf, S = 1 - F the survival function, f the pmf of Bin(N, p): the new trial succeeds
with probability p, and then X <= k needs X_N <= k - 1). Used in the direction in which both
terms are positive and are *added*,

    F_N(k) = F_{N+1}(k) + p f_N(k)   (downwards in N),   S_{N+1}(k) = S_N(k) + p f_N(k)   (upwards),

each step adds one pmf (Boost's, about 6x cheaper than its cdf) with no cancellation: a value's
relative error is that of its anchor (a Boost cdf or sf, computed where a run of equal k
starts or ends) plus one rounding and the pmf's relative error per step, at most
``MAX_STEPS`` steps (a few 1e-15 in all, against pld.mass_relative_error's 1e-11 per
binomial factor). The masses are then formed as enumeration.interval_mass forms them: the cdf
difference below the mean, the survival difference above it.
"""

from __future__ import annotations

import numpy as np

from shufflesim.protocols.distributions import binom

#: Longest chain of recurrence steps from an anchor (a Boost cdf or sf).
MAX_STEPS = 16


def _steps_to_anchor(k: np.ndarray, towards: int) -> np.ndarray:
    """For each entry of ``k`` (rows, columns), the number of rows to its anchor: the nearest
    row in direction ``towards`` (+1: below it in the array, -1: above) up to which the column
    keeps the same value, at most MAX_STEPS rows away."""
    rows = k.shape[0]
    index = np.arange(rows)[:, None]
    if towards > 0:
        same = np.zeros(k.shape, dtype=bool)
        same[:-1] = k[:-1] == k[1:]                      # the next row has the same end
        capped = same & ((index + 1) % MAX_STEPS != 0)
        stop = np.where(capped, rows, index)             # anchors: where the run stops
        return np.minimum.accumulate(stop[::-1], axis=0)[::-1] - index
    same = np.zeros(k.shape, dtype=bool)
    same[1:] = k[1:] == k[:-1]                           # the previous row has the same end
    capped = same & (index % MAX_STEPS != 0)
    stop = np.where(capped, -1, index)
    return index - np.maximum.accumulate(stop, axis=0)


def run_tails(k: np.ndarray, trials: np.ndarray, p: float, upper: bool) -> np.ndarray:
    """cdf (``upper`` False) or survival function (True) of Bin(trials[r], p) at k[r, c], for
    trials[r] = trials[0] + r (module docstring: Boost at the anchors, the recurrence
    elsewhere)."""
    towards = -1 if upper else 1
    steps = _steps_to_anchor(k, towards)
    nn = np.broadcast_to(trials[:, None], k.shape)
    out = np.zeros(k.shape)
    anchor = steps == 0
    tail = binom.sf if upper else binom.cdf
    out[anchor] = tail(k[anchor], nn[anchor], p)
    # the step into each other entry: F_N(k) = F_{N+1}(k) + p f_N(k) (from the row below),
    # S_N(k) = S_{N-1}(k) + p f_{N-1}(k) (from the row above): one pmf call for all of them
    chained = ~anchor
    added = np.zeros(k.shape)
    added[chained] = p * binom.pmf(k[chained], nn[chained] - (1.0 if upper else 0.0), p)
    source = np.empty(k.shape)
    for step in range(1, int(steps.max()) + 1):
        if upper:
            source[1:] = out[:-1]
        else:
            source[:-1] = out[1:]
        here = steps == step
        out[here] = source[here] + added[here]
    return out


def distinct_columns(ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the columns of ``ends`` kept: the first copy of each distinct column, and for every
    column the index of its copy among those kept): an interval end shared by two columns
    (the hi of one interval is the lo - 1 of the next) is then evaluated once."""
    equal = (ends[:, :, None] == ends[:, None, :]).all(axis=0)     # column i is column j
    first = np.argmax(equal, axis=0)                                # its first copy
    keep = np.flatnonzero(first == np.arange(first.size))
    return keep, np.searchsorted(keep, first)


def run_interval_masses(lo: np.ndarray, hi: np.ndarray, trials: np.ndarray,
                        p: float) -> np.ndarray:
    """P[lo <= Bin(trials[r], p) <= hi] for intervals (rows r, columns) of consecutive
    ``trials`` (trials[r] = trials[0] + r, 1-D), 0 where lo > hi: enumeration.interval_mass's
    values within a few ulp of its binomial tails (module docstring), cdf differences where
    lo <= trials p and survival differences above. An end shared by several columns (the hi
    of one interval is the lo - 1 of the next) is evaluated once."""
    lo, hi = np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)
    trials = np.asarray(trials, dtype=float)
    assert trials.ndim == 1 and lo.ndim == 2 and lo.shape == hi.shape
    assert lo.shape[0] == trials.size and np.all(np.diff(trials) == 1.0)
    live = lo <= hi
    up = live & (lo > trials[:, None] * p)
    down = live & ~up
    cols = lo.shape[1]
    ends = np.concatenate([lo - 1, hi], axis=1)                    # (rows, 2 cols)
    keep, which = distinct_columns(ends)
    distinct = ends[:, keep].T
    mass = np.zeros(lo.shape)
    for side, used in ((False, down), (True, up)):
        if not used.any():
            continue
        needed = np.zeros(distinct.shape[0], dtype=bool)
        needed[which[np.concatenate([used, used], axis=1).any(axis=0)]] = True
        slot = np.cumsum(needed) - 1                                 # distinct -> computed
        value = run_tails(distinct[needed].T, trials, p, side)
        at_lo = value[:, slot[which[:cols]]]
        at_hi = value[:, slot[which[cols:]]]
        diff = at_lo - at_hi if side else at_hi - at_lo
        mass[used] = diff[used]
    return np.clip(mass, 0.0, 1.0)
