"""The z-levels of exact_band's B windows (000 Thm 12-14's conditioning sums by bands; issue
32): where a row's window of B ~ Bin(t, rho) may start below the band (:func:`band_cut`) and end
above it (:func:`band_top`), in standard deviations of B, for one eps; a level built before for
(n, w_pair, rho) is reused while it covers a later eps of the search. The levels only size the
tables: exact_band.row_bounds stays sound at any level (the mass below a window is bounded, and
a closed form that starts below the band's top is left out of the lower end)."""

from __future__ import annotations

import math

import numpy as np

from shufflesim.protocols.bounds.engine.band_shape import CHAIN_ROWS
from shufflesim.protocols.bounds.engine.bernstein_width import _half_width
from shufflesim.protocols.bounds.engine.plans import t_plan

__all__ = ["band_cut", "band_top"]


class _Levels(dict):
    """z-levels of B's cut windows built per (n, w_pair, rho) (:func:`band_cut`); cleared with
    the table caches (``cache_clear``, as the benchmarks' fresh-cache points do)."""

    def cache_clear(self) -> None:
        self.clear()


_cuts: _Levels = _Levels()
#: no cut below this many standard deviations (the window's half-width is ~9-10 of them)
CUT_FLOOR = -6.0


def band_cut(sh, n: int, w_pair: float, rho: float, q: float) -> float | None:
    """The z-level of B's window start (exact_band._b_tables) for this eps, or None (the whole
    window). The band of a row starts at k_lo = floor(-(alpha + e x_lo) / d) (e <= 0), and
    x_lo >= m q - h - 2 L with h the Bernstein half-width at m + L users and L = CHAIN_ROWS
    (band_recurrence._x_recurrence: a chain's window starts at most L - 1 below its rows'
    own windows, which start at most h + 1 below their means, and the means of a chain lie
    within (L - 1) q). A window starting at or below k_lo - 1 leaves out only k whose values
    alpha + d k + e x are <= -d < -4 ve for every x in X's window, which the band sum never
    reads. A level built before for (n, w_pair, rho) is reused when it covers this eps (the
    eps search's evaluations), else one 1 sd lower than needed is built."""
    t = t_plan(n, w_pair).t
    sd = np.sqrt(t * rho * (1.0 - rho))
    m = n - t
    alpha = sh.cb * t + sh.base * m
    x_floor = np.zeros(t.size)
    if q < 1.0:
        span = _half_width(np.sqrt((m + CHAIN_ROWS) * q * (1.0 - q)))
        x_floor = m * q - span - 2.0 * CHAIN_ROWS
    need = np.floor(-(alpha + sh.e * x_floor) / sh.d) - 2.0
    live = sd > 0
    if not live.any():
        return None
    z_need = float(np.min((need[live] - t[live] * rho) / sd[live]))
    if not math.isfinite(z_need) or z_need < CUT_FLOOR + 1.0:
        return None
    built = _cuts.setdefault((n, w_pair, rho), [])
    fits = [z for z in built if z <= z_need]
    if fits:
        return max(fits)
    z_cut = float(math.floor(z_need)) - 1.0
    built.append(z_cut)
    if len(_cuts) > 64:
        del _cuts[next(iter(_cuts))]
    return z_cut


_tops: _Levels = _Levels()
#: no window end above this many standard deviations (Chernoff's is ~9-10 of them)
TOP_CEILING = 7.0
#: no window end below Chernoff's for B tables smaller than this (cells: rows x whole width)
TOP_MIN_CELLS = 250_000


def band_top(sh, n: int, w_pair: float, rho: float, q: float) -> float | None:
    """The z-level of B's window end (exact_band._b_tables) for this eps, or None (Chernoff's
    end). Above the band, row_bounds reads SB and SSB at k_hi = ceil(-(alpha + e x_hi) / d)
    (and the band B's pmf below it); x_hi <= m and e <= 0, so k_hi <= ceil(-(alpha + e m) / d).
    A window ending at or above k_hi - 1 leaves the closed form above it exact (SB and SSB
    there count the mass above the window: band_recurrence.suffix_chains' ``whole``). Rows
    whose k_hi - 1 lies above Bernstein's end of B's window (at least Chernoff's) need no
    level: their closed form starts above the window, as with Chernoff's end. Where a window
    still ends below k_hi - 1, row_bounds leaves the closed form out of the lower end (it is
    an upper bound only), so no level is ever unsound, only less tight.

    Levels are for large tables only (TOP_MIN_CELLS; issue 32: k-RR's band points at
    n = 2e4-7e4 read B's columns up to ~2-3 sd above its mean of ~10). The first level for
    (n, w_pair, rho) is at least half a standard deviation above what this eps needs; a later
    eps of the search reuses a level that covers it, and where none does, the whole window is
    built (so a search builds B's tables at most twice)."""
    t = t_plan(n, w_pair).t
    sd = np.sqrt(t * rho * (1.0 - rho))
    span = _half_width(sd)
    if t.size * (2.0 * float(np.max(span, initial=0.0)) + 3.0) < TOP_MIN_CELLS:
        return None
    m = n - t
    need = np.ceil(-(sh.cb * t + sh.base * m + sh.e * m) / sh.d) - 1.0 - t * rho
    live = (sd > 0) & (need <= span)
    if not live.any():
        return None
    z_need = float(np.max(need[live] / sd[live]))
    if not math.isfinite(z_need):
        return None
    built = _tops.setdefault((n, w_pair, rho), [])
    fits = [z for z in built if z >= z_need]
    if fits:
        z_top = min(fits)
    else:
        z_top = math.ceil(z_need + 0.5) if not built and z_need <= TOP_CEILING - 0.5 \
            else math.inf
        built.append(z_top)
    if len(_tops) > 64:
        del _tops[next(iter(_tops))]
    return None if z_top == math.inf else float(z_top)
