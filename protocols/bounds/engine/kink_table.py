"""The conditioning method's kink sum for many rows, from one table of log-MGF bounds
(issue 32: exact-lower at n = 1e9 in interactive time).

engine/conditioning.py bounds E h_t(V) - h_t(E V) (its module docstring, step 2) by summing,
row by row, the 2J kinks of h_t nearest to the pool mean one by one (Chernoff with each kink's
own lam and the mean-variance bound phi) plus geometric far sides: ~6 evaluations of the
log-MGF bound psi_t per row, 70 % of an evaluation at n = 1e9 (2.3e5 rows). Here, for the
single style (the exact law of the main pool count X ~ Bin(m, q), a Bennett remainder):

* psi_t(lam) = m_t [ln(1 + q (e^{lam alpha} - 1)) - q lam alpha]
               + m_t v_R (e^{|lam| M} - 1 - |lam| M) / M^2
  is m_t times a function of lam that is >= 0 (a centred log-MGF and Bennett's term), so
  psi_t <= m_max times that function for every row of the window: one table F(lam) on a
  geometric grid of lam serves every row (any lam gives a valid Chernoff bound, so each row's
  Gaussian-optimal lam is rounded down to the grid).
* Kinks above the mean lie at distances a_0 + j d (j >= 0) with masses P[B = k_0 - j]; the
  first is bounded by its own mass times min(phi(Var, a_0), Chernoff), the others by
  p_max sum_{j >= 1} e^{F - lam (a_0 + j d)} / (lam e) (a geometric series) or, where that is
  larger, p_max (phi(Var, d) + Var / (2 d)) (the distances past kinks beyond the first,
  summed against an integral as in engine/screen.py). The same below the mean with -lam.
  p_max = the mode pmf at the window's smallest t (the largest of all rows: screen.py).
* The computed mean is within e_v of the true one (e_v < d / 2 here): distances are reduced
  by e_v, and the one kink that may lie on the other side of the true mean adds e_v p_max
  (E(k - V)_+ = E(V - k)_+ + k - E V).

The rounding of the table (F up to ~700, a few u relative) and of the sums is covered by a
relative margin of 1e-10.
"""

from __future__ import annotations

import numpy as np

from shufflesim.protocols.bounds.engine.common import (
    BINOM_PMF,
    REL_SPECIAL,
    chernoff_lambda,
    excess_bound,
    mode_pmf_on_range,
)

#: grid points of the lam table per side
GRID = 256
#: relative margin for the table's and the sums' rounding
MARGIN = 1e-10

U = float(np.finfo(float).eps) / 2


def _table(psi_max, lam_rows, d: float):
    """Grid of lam (geometric, covering the rows' lam) and per grid point: F(lam) =
    psi_max(lam) - ln(lam e) and e^{-lam d} / (1 - e^{-lam d}) (the geometric series' factor;
    inf where it does not converge)."""
    lo = float(np.min(lam_rows))
    hi = max(float(np.max(lam_rows)), lo * (1 + 1e-9))
    grid = np.geomspace(lo, hi, GRID)
    grid[0] = min(grid[0], lo)
    with np.errstate(over="ignore", divide="ignore"):
        series = np.exp(-grid * d) / -np.expm1(-grid * d)
    series = np.where(np.isfinite(series), series, np.inf)
    return grid, np.asarray(psi_max(grid), dtype=float) - np.log(grid * np.e), series


def _side(dist, p_first, growth, p_side, var: float, d: float, psi_max):
    """Bound of sum_{j >= 0} P_j E(sign Y - dist - j d)_+ with P_0 = p_first, P_j <= p_first
    growth^j and P_j <= p_side (the largest pmf of the side), Var Y <= var (a number: the rows'
    largest). With one lam, term j is at most P_j C e^{-j lam d} (C the first's Chernoff bound):
    a geometric series of ratio growth e^{-lam d} where that is < 1, else p_side C times the
    series of e^{-j lam d}; and at most p_side times the spread bound (engine/screen.py)."""
    lam_rows = chernoff_lambda(var, dist)
    grid, table, series = _table(psi_max, lam_rows, d)
    idx = np.clip(np.searchsorted(grid, lam_rows, side="right") - 1, 0, grid.size - 1)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        chernoff = np.exp(np.minimum(table[idx] - grid[idx] * dist, 700.0))
        first = np.minimum(excess_bound(var, dist), chernoff)
        ratio = growth * np.exp(-grid[idx] * d)
        geometric = np.where(ratio < 1.0, p_first * chernoff * ratio / (1.0 - ratio), np.inf)
        flat = p_side * np.minimum(chernoff * series[idx], excess_bound(var, d) + var / (2.0 * d))
        rest = np.minimum(np.nan_to_num(geometric, nan=np.inf), np.nan_to_num(flat, nan=np.inf))
    return p_first * first + rest


def kink_sum(bstar, var, e_v, d: float, t, rho: float, p0, p1, p_max: float, psi_up,
             psi_down):
    """Upper bound on E h_t(V) - h_t(E V) per entry (conditioning's step 2), for kinks of h_t at
    distances d (b* - k) from the computed mean, B ~ Bin(t, rho): ``bstar`` = b* per entry,
    ``p0`` = P[B = k_0] and ``p1`` = P[B = k_0 + 1] with k_0 = floor(b*) (upper bounds, e.g.
    with their relative error added by the caller), ``p_max`` >= every row's mode pmf,
    ``var`` >= Var(V) (its largest entry serves every entry: every term increases with the
    variance bound), ``e_v`` the mean's error (< d / 2), ``psi_up(lam)`` / ``psi_down(lam)``
    bounds of the log-MGF of +-(V - E V) for every row (arrays of lam > 0).

    Kinks above the mean are k <= k_0: their pmf ratios P[k - 1] / P[k] = k (1 - rho) /
    ((t - k + 1) rho) increase with k, so P[k_0 - j] <= P[k_0] r^j with r the ratio at k_0
    (valid for 1 <= k_0 <= t; elsewhere the side's largest pmf is used). Below: k >= k_0 + 1,
    P[k + 1] / P[k] = (t - k) rho / ((k + 1)(1 - rho)) decreases with k. The largest pmf of a
    side is the mode's (p_max) if the mode may lie on it (within one of floor((t + 1) rho)),
    else its first kink's (the pmf is unimodal)."""
    k0 = np.floor(bstar)
    above = np.maximum(d * (bstar - k0) - e_v, 0.0)
    below = np.maximum(d * (k0 + 1.0 - bstar) - e_v, 0.0)
    var = float(np.max(var))
    odds = rho / (1.0 - rho)
    slack = 1 + 8 * U
    mode = np.floor((t + 1.0) * rho)
    with np.errstate(divide="ignore", invalid="ignore"):
        r_up = np.where((k0 >= 1) & (k0 <= t), k0 / ((t - k0 + 1.0) * odds) * slack, np.inf)
        r_dn = np.where((k0 + 1 >= 0) & (k0 + 1 < t), (t - k0 - 1.0) * odds / (k0 + 2.0) * slack,
                        np.where(k0 + 1 >= t, 0.0, np.inf))
    side_up = np.where((k0 >= mode - 1) | (k0 > t), p_max, p0)
    side_dn = np.where((k0 + 1 <= mode + 1) | (k0 + 1 < 0), p_max, p1)
    up = _side(above, p0, r_up, side_up, var, d, psi_up)
    down = _side(below, p1, r_dn, side_dn, var, d, psi_down)
    return (up + down + e_v * np.maximum(p0, p1)) * (1 + MARGIN)


def rows_kink_sum(tt, v, e_v, var_v, cb: float, d: float, rho: float, psi):
    """:func:`kink_sum` for the conditioning method's single style (engine/conditioning.py):
    rows t (a column), pool means ``v`` (rows x shifts) within ``e_v``, Var V <= ``var_v``,
    kinks of h_t(v) = E[(cb t + v + d B)_+], B ~ Bin(t, rho), and ``psi`` a log-MGF bound of
    V - E V valid for every row (lam of either sign)."""
    bstar = -(cb * tt + v) / d
    k0 = np.floor(bstar)
    tb = np.broadcast_to(tt, bstar.shape)
    p0 = BINOM_PMF(k0, tb, rho)
    t_min = float(np.min(tt))
    p_max = float(mode_pmf_on_range(0.0, t_min, t_min, rho))
    # P[B = k0 + 1] = P[B = k0] (t - k0) / (k0 + 1) rho / (1 - rho) (a few u more), p_max
    # where k0 < 0 (an upper bound is all the sum needs), 0 beyond t
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = p0 * (tb - k0) / (k0 + 1.0) * (rho / (1.0 - rho)) * (1 + 8 * U)
    p1 = np.where((k0 >= 0) & (k0 < tb), ratio, np.where(k0 < 0, p_max, 0.0))
    var = np.broadcast_to(var_v * (1 + 16 * U), bstar.shape)
    rel = 1 + REL_SPECIAL                  # Boost's pmfs
    return kink_sum(bstar, var, np.broadcast_to(e_v, bstar.shape), d, tb, rho, p0 * rel,
                    p1 * rel, p_max, psi, lambda lam: psi(-lam))
